"""The table reader: the text pieces and ruling lines of a table's region -> cells with row and column
spans -> HTML (docs/elements.md, "Tables").

Input is geometry only, whichever source it came from (`jocr.layout.tables_sources`): text pieces (a cell's
words on one baseline, with their box, from a PDF's text layer or OCR) and ruling segments (PDF path objects,
or lines found in the pixels). The structure comes from the rules where they are there and from how the
pieces line up where they are not:

- Rows: pieces are grouped into text lines (boxes overlapping vertically). Where horizontal rules separate
  the rows (a fully ruled table, or a grid of vertical and horizontal rules: two inner horizontal rules at
  least, or one over at most three text lines), a row is the band between two rules and every line in it
  is part of its cells (multi-line cells). Otherwise each text line is a row,
  and a line that fills only some columns, set closer to the line above than rows are to each other, goes
  on the cells above (a cell wrapped over lines).
- Columns: from vertical rules when there are inner ones; else from the x-intervals that no piece of the
  table's body rows covers (booktabs and other tables ruled only across).
- Spans: in a ruled grid, two neighbouring slots are one cell where no rule runs between them; elsewhere a
  piece that covers several columns spans them (a spanning header).
- Header rows (`<th>`): the rows above the first inner horizontal rule of a table not ruled between every
  row (booktabs' midrule), or, in a fully ruled table, its first row and any rows its spanning cells reach
  down into; bold first rows too.

Coordinates are the page's (points or pixels, top-left origin); nothing here depends on which.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from jocr.bbox import holds_point
from jocr.layout.tables_headers import mark_headers
from jocr.layout.tables_model import (
    ALIGNMENT,
    NO_TABLE,
    RULES,
    Box,
    Cell,
    Piece,
    Rule,
    Table,
    table_html,
)
from jocr.layout.tables_model import pieces_of as _pieces_of


@dataclass
class TableConfig:
    """How the reader groups and joins (lengths in the page's unit are relative to the text's height)."""

    join: float = 0.35  # rule positions within this many line heights are one boundary
    min_rule: float = 1.0  # a rule shorter than this many line heights is not a rule (an underline, a dash)
    column_gap: float = 0.5  # an x-gap in the body rows this many line heights wide separates columns
    wrap_step: float = 0.8  # a line closer than this share of the row pitch to the line above continues it
    rule_cover: float = 0.5  # share of a slot's side a rule must run along to separate two slots


def read_table(
    pieces: list[Piece], rules: list[Rule], region: Box | None = None, config: TableConfig | None = None
) -> Table:
    """The table made of `pieces` and `rules` inside `region` (all of them when None)."""
    config = config or TableConfig()
    if region is not None:
        pieces = [p for p in pieces if holds_point(region, p.cx, p.cy)]
    pieces = [p for p in pieces if p.text.strip()]
    if not pieces:
        return Table(note="no text in the region")
    line_h = statistics.median(p.height for p in pieces)
    bbox = _union([p.box for p in pieces])
    rules = [r for r in _near(rules, bbox, line_h, config) if not _through_text(r, pieces)]
    horizontal = [r for r in rules if r.horizontal]
    vertical = [r for r in rules if not r.horizontal]
    lines = _text_lines(pieces)
    xs = _positions([r.x0 for r in vertical], config.join * line_h)
    ys = _positions([r.y0 for r in horizontal], config.join * line_h)
    inner_x = [x for x in xs if bbox[0] + 0.5 * line_h < x < bbox[2] - 0.5 * line_h]
    inner_y = [y for y in ys if bbox[1] + 0.3 * line_h < y < bbox[3] - 0.3 * line_h]
    # A grid has rules between its rows: one inner rule over many text lines is a header's rule in a
    # table with a rule between its column groups, whose body rows are its text lines.
    grid = bool(inner_x) and bool(inner_y) and (len(inner_y) >= 2 or len(lines) <= len(inner_y) + 2)
    # Without vertical rules, only rules across most of the table separate rows (not a total's underline).
    across = _positions(
        [r.y0 for r in horizontal if r.x1 - r.x0 >= 0.6 * (bbox[2] - bbox[0])], config.join * line_h
    )
    across = [y for y in across if bbox[1] + 0.3 * line_h < y < bbox[3] - 0.3 * line_h]
    ruled_rows = grid or (len(lines) > 2 and len(across) >= 0.6 * (len(lines) - 1))
    if not grid:
        inner_y = across
    if ruled_rows:
        bands = _bands(lines, inner_y, bbox)
    else:
        bands = _wrapped(lines, config)
    if len(bands) < 2 and not inner_x:
        if len(bands) < 1 or len(bands[0]) < 2:
            return Table(note="no table in the region (its text is one line or one column)", bbox=bbox)
    columns = _gap_columns(bands, line_h, config)
    if inner_x:
        # rules bound columns; alignment gaps within them (sub-columns under a ruled group) add more
        gaps = [a for a, _ in columns[1:]]
        cuts = sorted(inner_x + [g for g in gaps if _splits_rule_column(g, inner_x, bands, line_h)])
        columns = _rule_columns(cuts, bbox)
    if len(columns) < 2 and len(bands) < 2:
        return Table(note="no table in the region (its text is one line or one column)", bbox=bbox)
    slots = _place(bands, columns)
    if grid:
        cells = _ruled_cells(slots, bands, columns, inner_y, horizontal, vertical, bbox, config)
    else:
        cells = _aligned_cells(slots, bands, columns)
    method = RULES if ruled_rows else ALIGNMENT
    table = Table(cells=cells, n_rows=len(bands), n_cols=len(columns), method=method, bbox=bbox)
    mark_headers(table, bands, inner_y, ruled_rows)
    table = _without_empty(table)
    why = _not_a_table(table)
    if why:
        return Table(note=f"no table in the region ({why})", bbox=bbox)
    return table


def _not_a_table(table: Table) -> str:
    """Why the cells read are no table ("" when they are one): `jocr.layout.table_cells.not_a_table` over
    each row's cells left to right (a paragraph, lines of prose, numbered lines, code)."""
    from jocr.layout.table_cells import not_a_table

    return not_a_table([[c.text for c in cells] for cells in table.by_row().values()])


# -- geometry ------------------------------------------------------------------------------------------


def _union(boxes) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _near(rules: list[Rule], bbox: Box, line_h: float, config: TableConfig) -> list[Rule]:
    """Rules long enough and touching the text's box (grown by a line height: a table's frame sits just
    outside its text)."""
    pad = 1.5 * line_h
    x0, y0, x1, y1 = bbox[0] - pad, bbox[1] - pad, bbox[2] + pad, bbox[3] + pad
    out = []
    for r in rules:
        length = max(r.x1 - r.x0, r.y1 - r.y0)
        if length < config.min_rule * line_h:
            continue
        if r.x1 < x0 or r.x0 > x1 or r.y1 < y0 or r.y0 > y1:
            continue
        out.append(r)
    return out


def _through_text(rule: Rule, pieces: list[Piece]) -> bool:
    """Whether a horizontal `rule` runs through the middle of a piece's text for most of its length: ink
    of the letters (in a blurred scan or photo, a word's strokes merge into dark runs as long as a short
    rule), or a strike-through, not a line between rows, which passes above or below the text. Vertical
    rules are kept: letter stems are shorter than a rule, and a vertical rule through a piece is a column
    border that an OCR line bridged (read over two cells)."""
    if not rule.horizontal:
        return False
    length = rule.x1 - rule.x0
    for p in pieces:
        margin = 0.2 * p.height
        inside = p.box[1] + margin < rule.y0 < p.box[3] - margin
        if inside and min(rule.x1, p.box[2]) - max(rule.x0, p.box[0]) >= 0.5 * length:
            return True
    return False


def _positions(values: list[float], tolerance: float) -> list[float]:
    """Sorted values, those within `tolerance` of the previous one merged (their mean)."""
    groups: list[list[float]] = []
    for v in sorted(values):
        if groups and v - groups[-1][-1] <= tolerance:
            groups[-1].append(v)
        else:
            groups.append([v])
    return [sum(g) / len(g) for g in groups]


def _text_lines(pieces: list[Piece]) -> list[list[Piece]]:
    """Pieces grouped into lines (vertical overlap of at least half the shorter height), top to bottom,
    each left to right."""
    lines: list[list[Piece]] = []
    for p in sorted(pieces, key=lambda p: (p.cy, p.box[0])):
        for line in reversed(lines[-3:]):
            top, bottom = min(q.box[1] for q in line), max(q.box[3] for q in line)
            overlap = min(bottom, p.box[3]) - max(top, p.box[1])
            if overlap >= 0.5 * min(p.height, bottom - top):
                line.append(p)
                break
        else:
            lines.append([p])
    for line in lines:
        line.sort(key=lambda p: p.box[0])
    lines.sort(key=lambda line: min(p.box[1] for p in line))
    return lines


def _bands(lines: list[list[Piece]], cuts: list[float], bbox: Box) -> list[list[Piece]]:
    """The pieces between consecutive horizontal rules (rows of a ruled table); empty bands dropped."""
    edges = [-float("inf"), *cuts, float("inf")]
    bands: list[list[Piece]] = [[] for _ in range(len(edges) - 1)]
    for line in lines:
        for p in line:
            k = next(i for i in range(len(edges) - 1) if p.cy < edges[i + 1])
            bands[k].append(p)
    return [b for b in bands if b]


def _wrapped(lines: list[list[Piece]], config: TableConfig) -> list[list[Piece]]:
    """Rows of a table without rules between them: each text line, but a line that fills fewer slots than
    the line above and sits closer to it than the usual row pitch continues the row above (a cell wrapped
    over lines), and so does a line set at the usual pitch that is the rest of a wrapped cell
    (`_wrap_rest`)."""
    if len(lines) < 3:
        return [list(line) for line in lines]
    tops = [min(p.box[1] for p in line) for line in lines]
    steps = [b - a for a, b in zip(tops, tops[1:], strict=False)]
    pitch = statistics.median(steps)
    height = statistics.median(p.height for line in lines for p in line)
    rows: list[list[Piece]] = [list(lines[0])]
    for prev, line, step in zip(lines, lines[1:], steps, strict=False):
        tight = step < config.wrap_step * pitch and step < 1.6 * height
        if tight and len(line) < max(len(prev), 2) and len(line) <= len(prev):
            rows[-1].extend(line)
        elif _wrap_rest(prev, line, lines, height):
            rows[-1].extend(line)
        else:
            rows.append(list(line))
    return rows


def _wrap_rest(prev: list[Piece], line: list[Piece], lines: list[list[Piece]], height: float) -> bool:
    """Whether `line` is the rest of a cell of `prev` wrapped at the column's width (set at the same pitch
    as rows, as TeX and HTML set a paragraph cell): one piece, left of it nothing (the row's first cell
    empty), starting where a later piece of `prev` starts, and that piece reaching the right edge of its
    column (the widest text starting there): text that ran out of width; or, short of that edge (a
    ragged-right cell), reading as the rest of its sentence (`_sentence_goes_on`). A short centred or
    numeric cell does neither, so an empty-first-cell row of such cells stays a row."""
    if len(line) != 1 or len(prev) < 2:
        return False
    rest = line[0]
    above = next((p for p in prev[1:] if abs(p.box[0] - rest.box[0]) <= 0.5 * height), None)
    if above is None or rest.box[0] <= prev[0].box[2]:
        return False
    column = [p for ln in lines for p in ln if abs(p.box[0] - above.box[0]) <= 0.5 * height]
    return above.box[2] >= max(p.box[2] for p in column) - 1.0 * height or _sentence_goes_on(above, rest)


_SENTENCE_ENDS = tuple(".:;!?。：；！？")
_PROSE_WORDS = 3  # a cell of at least this many words is a sentence that may wrap


def _sentence_goes_on(above: Piece, rest: Piece) -> bool:
    """Whether `rest` reads as the rest of the sentence in `above`: `above` is prose (`_PROSE_WORDS` words
    or more) not ended by a stop, colon or semicolon, and `rest` starts with a lower-case letter
    ("Its value is used as driver option" / "if the driver is not given or autodetected."). A list of
    values under one key ("red" / "blue") is no sentence."""
    text = above.text.rstrip()
    return len(text.split()) >= _PROSE_WORDS and not text.endswith(_SENTENCE_ENDS) and rest.text[:1].islower()


def _splits_rule_column(cut: float, inner_x: list[float], bands, line_h: float) -> bool:
    """Whether an alignment gap at `cut` splits the column between the rules around it: away from the
    rules, with pieces wholly inside that column on both of its sides."""
    if any(abs(cut - x) <= 1.5 * line_h for x in inner_x):
        return False
    lo = max([x for x in inner_x if x < cut], default=-float("inf"))
    hi = min([x for x in inner_x if x > cut], default=float("inf"))
    inside = [
        p for band in bands for p in band if lo <= p.box[0] and p.box[2] <= hi and p.height <= 1.8 * line_h
    ]
    return any(p.box[2] <= cut for p in inside) and any(p.box[0] >= cut for p in inside)


def _rule_columns(inner_x: list[float], bbox: Box) -> list[tuple[float, float]]:
    edges = [-float("inf"), *inner_x, float("inf")]
    return list(zip(edges, edges[1:], strict=False))


def gap_cuts(boxes, min_gap: float) -> list[float]:
    """The middles of the x-gaps at least `min_gap` wide that no box bridges, left to right."""
    spans = sorted((box[0], box[2]) for box in boxes)
    cuts = []
    reach = spans[0][1] if spans else 0.0
    for x0, x1 in spans[1:]:
        if x0 - reach >= min_gap:
            cuts.append((reach + x0) / 2)
        reach = max(reach, x1)
    return cuts


def _gap_columns(bands: list[list[Piece]], line_h: float, config: TableConfig) -> list[tuple[float, float]]:
    """Columns from the x-gaps of the body rows: rows with at least as many pieces as most multi-piece rows
    have (a spanning header or a section row would bridge the gaps)."""
    counts = [len(b) for b in bands if len(b) >= 2]
    if not counts:
        return [(-float("inf"), float("inf"))]
    typical = statistics.median_low(counts)
    # rotated text (a tall box: a column head set on its side or aslant) bridges gaps it does not fill
    body = [p for b in bands if len(b) >= typical for p in b if p.height <= 1.8 * line_h]
    cuts = gap_cuts([p.box for p in body], config.column_gap * line_h)
    edges = [-float("inf"), *cuts, float("inf")]
    return list(zip(edges, edges[1:], strict=False))


def _columns_of(p: Piece, columns: list[tuple[float, float]]) -> tuple[int, int]:
    """The first and last column a piece covers: those holding a real share of its width, at least the
    one its centre is in."""
    width = max(p.box[2] - p.box[0], 1e-3)
    hit = [
        k
        for k, (a, b) in enumerate(columns)
        if min(b, p.box[2]) - max(a, p.box[0]) >= 0.25 * min(width, b - a)
    ]
    centre = next(k for k, (a, b) in enumerate(columns) if p.cx < b or k == len(columns) - 1)
    if not hit:
        return centre, centre
    return min(hit + [centre]), max(hit + [centre])


def _place(bands: list[list[Piece]], columns) -> list[dict[tuple[int, int], list[Piece]]]:
    """Per band: (first column, last column) -> the pieces covering exactly those columns."""
    out = []
    for band in bands:
        slots: dict[tuple[int, int], list[Piece]] = {}
        for p in band:
            slots.setdefault(_columns_of(p, columns), []).append(p)
        out.append(slots)
    return out


def _cell_text(pieces: list[Piece]) -> str:
    from jocr.layout.geometry import join_text

    ordered = []
    for line in _text_lines(pieces):
        ordered.extend(p.text for p in line)
    return join_text(ordered)


# -- cells ---------------------------------------------------------------------------------------------


def _aligned_cells(slots, bands, columns) -> list[Cell]:
    """Cells of a table whose columns come from alignment: per row, spanning pieces take the columns they
    cover; overlapping claims fall back to the narrower ones."""
    cells = []
    n = len(columns)
    for r, row in enumerate(slots):
        taken: dict[int, Cell] = {}
        for (a, b), pieces in sorted(row.items(), key=lambda kv: kv[0][1] - kv[0][0]):
            free = [k for k in range(a, b + 1) if k not in taken]
            if not free:
                target = taken[a]
                target.text = _cell_text([*_pieces_of(target), *pieces])
                target._pieces = [*_pieces_of(target), *pieces]  # type: ignore[attr-defined]
                continue
            cell = Cell(row=r, col=free[0], colspan=free[-1] - free[0] + 1, text=_cell_text(pieces))
            cell._pieces = list(pieces)  # type: ignore[attr-defined]
            for k in range(free[0], free[-1] + 1):
                taken[k] = cell
        for k in range(n):
            if k not in taken:
                taken[k] = Cell(row=r, col=k)
        seen = set()
        for k in range(n):
            cell = taken[k]
            if id(cell) not in seen:
                seen.add(id(cell))
                cells.append(cell)
    return cells


def _ruled_cells(slots, bands, columns, inner_y, horizontal, vertical, bbox, config) -> list[Cell]:
    """Cells of a grid of rules: slots joined where no rule separates them, each joined group one cell
    spanning the rectangle it covers."""
    n_rows, n_cols = len(bands), len(columns)
    # each band's extent: the rules between which its pieces' centres lie
    row_edges = []
    for band in bands:
        cy = band[0].cy
        above = max([y for y in inner_y if y <= cy], default=bbox[1] - 1)
        below = min([y for y in inner_y if y > cy], default=bbox[3] + 1)
        row_edges.append((above, below))
    col_edges = [(max(a, bbox[0] - 1), min(b, bbox[2] + 1)) for a, b in columns]
    parent = list(range(n_rows * n_cols))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def covered(rules, fixed: float, lo: float, hi: float, vertical_rule: bool) -> bool:
        need = config.rule_cover * (hi - lo)
        total = 0.0
        tol = config.join * statistics.median(p.height for band in bands for p in band)
        for r in rules:
            at, a, b = (r.x0, r.y0, r.y1) if vertical_rule else (r.y0, r.x0, r.x1)
            if abs(at - fixed) <= tol:
                total += max(0.0, min(b, hi) - max(a, lo))
        return total >= need

    for r in range(n_rows):
        for c in range(n_cols):
            y0, y1 = row_edges[r]
            if c + 1 < n_cols and not covered(vertical, columns[c][1], y0, y1, True):
                # no rule between (r, c) and (r, c + 1): one cell, unless both hold their own text
                if not (_starts(slots[r], c) and _starts(slots[r], c + 1)):
                    parent[find(r * n_cols + c + 1)] = find(r * n_cols + c)
            if r + 1 < n_rows:
                x0, x1 = col_edges[c]
                boundary = (row_edges[r][1] + row_edges[r + 1][0]) / 2
                if not covered(horizontal, boundary, x0, x1, False) and not (
                    _text_in(slots[r], c) and _text_in(slots[r + 1], c)
                ):
                    parent[find((r + 1) * n_cols + c)] = find(r * n_cols + c)
    groups: dict[int, list[tuple[int, int]]] = {}
    for r in range(n_rows):
        for c in range(n_cols):
            groups.setdefault(find(r * n_cols + c), []).append((r, c))
    cells = []
    owner: dict[tuple[int, int], Cell] = {}
    for members in sorted(groups.values(), key=lambda m: min(m)):
        r0, c0 = min(m[0] for m in members), min(m[1] for m in members)
        r1, c1 = max(m[0] for m in members), max(m[1] for m in members)
        if any((r, c) in owner for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)):
            r1, c1 = r0, c0  # not a rectangle: keep the top-left slot only
        cell = Cell(row=r0, col=c0, rowspan=r1 - r0 + 1, colspan=c1 - c0 + 1)
        for r in range(r0, r1 + 1):
            for c in range(c0, c1 + 1):
                owner[(r, c)] = cell
        cells.append(cell)
    for r, row in enumerate(slots):
        for (a, _b), pieces in row.items():
            cell = owner.get((r, a))
            if cell is not None:
                cell._pieces = [*_pieces_of(cell), *pieces]  # type: ignore[attr-defined]
    for r in range(n_rows):
        for c in range(n_cols):
            if (r, c) not in owner:
                cell = Cell(row=r, col=c)
                owner[(r, c)] = cell
                cells.append(cell)
    for cell in cells:
        cell.text = _cell_text(_pieces_of(cell)) if _pieces_of(cell) else ""
    cells.sort(key=lambda c: (c.row, c.col))
    return cells


def _starts(row_slots, c: int) -> bool:
    return any(a == c for (a, _b) in row_slots)


def _text_in(row_slots, c: int) -> bool:
    return any(a <= c <= b for (a, b) in row_slots)


def _without_empty(table: Table) -> Table:
    """Rows and columns holding no text (a rule grid's stray edge, a cut-off row) are dropped; spans over
    them shrink."""
    for axis in ("col", "row"):
        span = f"{axis}span"
        count = table.n_cols if axis == "col" else table.n_rows
        used = {k for cell in table.cells if cell.text for k in range(getattr(cell, axis),
                getattr(cell, axis) + getattr(cell, span))}  # fmt: skip
        keep = [k for k in range(count) if k in used]
        if len(keep) == count or not keep:
            continue
        index = {k: n for n, k in enumerate(keep)}
        cells = []
        for cell in table.cells:
            ks = [
                index[k]
                for k in range(getattr(cell, axis), getattr(cell, axis) + getattr(cell, span))
                if k in index
            ]
            if not ks:
                continue
            setattr(cell, axis, ks[0])
            setattr(cell, span, ks[-1] - ks[0] + 1)
            cells.append(cell)
        table.cells = cells
        if axis == "col":
            table.n_cols = len(keep)
        else:
            table.n_rows = len(keep)
    return table


__all__ = ["ALIGNMENT", "NO_TABLE", "RULES", "Box", "Cell", "Piece", "Rule", "Table", "TableConfig",
           "read_table", "table_html"]  # fmt: skip
