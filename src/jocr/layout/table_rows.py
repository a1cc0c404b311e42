"""A model's table checked against the rows the text layer lays its runs out in (docs/parsing.md, "Tables
over prose lines").

The anchored member sometimes writes a table over runs that the page sets as prose: a real table that runs
on into the section after it, a caption above it, the paragraphs and list around an example, the code of an
R manual page. It names the runs in the text layer's order, a fixed number to a row, so its grid follows
none of the page's rows. The text layer says which runs share a row: a row of a table holds two cells or
more side by side, a line of prose holds one run (after a list marker) starting at the table's left edge or
further left. Here a table's rows are read from its runs' boxes; a stretch of rows without cells that holds
such a prose line goes back as text, and what is left of the table stays a table only where it keeps two
rows at least, its cells then laid out by the rows and columns of their boxes (the page's table pass reads
the region again from its pieces and rules).
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import replace

from jocr.layout.geometry import Line, text_width
from jocr.layout.prose_tables import PROSE_WIDTH
from jocr.layout.tree import HEADING, PARAGRAPH, TABLE, TITLE, Block, PageTree, union
from jocr.lines.references import referenced_numbers

# A run that is only a list marker: a bullet, a dash, an item number.
LIST_MARKER = re.compile(r"[•·◦▪‣∙\-–*]|\(?[0-9]{1,2}[.)]|\(?[a-z][.)]")


def table_rows(runs: list[Line]) -> list[list[Line]]:
    """The runs grouped into the rows they share on the page (top to bottom, each left to right): a run
    joins a row whose vertical middle lies within it."""
    rows: list[list[Line]] = []
    for run in sorted(runs, key=lambda ln: (ln.y0 + ln.y1) / 2):
        middle = (run.y0 + run.y1) / 2
        if rows and any(ln.y0 <= middle <= ln.y1 for ln in rows[-1]):
            rows[-1].append(run)
        else:
            rows.append([run])
    return [sorted(row, key=lambda ln: ln.x0) for row in rows]


def _cells(row: list[Line]) -> list[Line]:
    """A row's runs but a leading list marker."""
    return row[1:] if len(row) > 1 and LIST_MARKER.fullmatch(row[0].text.strip()) else row


def _has_cells(row: list[Line]) -> bool:
    """Two cells or more side by side, not all in a monospace face (code with a comment set apart)."""
    cells = _cells(row)
    return len(cells) >= 2 and not all(ln.mono for ln in cells)


def _touching_joined(row: list[Line], size: float) -> list[Line]:
    """A row's runs (left to right) with each run that starts less than half an em right of where the one
    before it ends joined to it: the pieces of one stretch of text, no column gap between them."""
    out: list[Line] = []
    for run in row:
        last = out[-1] if out else None
        if last is not None and run.x0 - last.x1 < 0.5 * size:
            out[-1] = replace(last, text=last.text + run.text, box=union([last.box, run.box]))
        else:
            out.append(run)
    return out


def table_segments(runs: list[Line], size: float) -> list[tuple[bool, list[list[Line]]]] | None:
    """The rows of a model's table (`runs`, the page's body size `size`) as (is_table, rows) segments top to
    bottom, or None where the table stands as the model wrote it: every stretch of rows without cells that
    holds a line of prose (a run at least `PROSE_WIDTH` columns wide, starting within an em of the table's
    left edge or left of it) is text, and so is a table segment of a single row."""
    rows = table_rows(runs)
    # decided on each row's runs with the touching ones joined: a line of prose the text layer broke at
    # its punctuation ("，", a quotation mark) is one run of text, not cells
    joined = [_touching_joined(row, size) for row in rows]
    has_cells = [_has_cells(row) for row in joined]
    left = min(ln.x0 for row in ([r for r, c in zip(rows, has_cells) if c] or rows) for ln in row)

    def prose(k: int) -> bool:
        return any(text_width(ln.text) >= PROSE_WIDTH and ln.x0 <= left + size for ln in _cells(joined[k]))

    segments: list[tuple[bool, list[list[Line]]]] = []
    k = 0
    while k < len(rows):
        end = k + 1
        cells = has_cells[k]
        while end < len(rows) and has_cells[end] == cells:
            end += 1
        stretch = rows[k:end]
        text = not cells and any(prose(j) for j in range(k, end))
        if segments and segments[-1][0] == (not text):
            segments[-1][1].extend(stretch)
        else:
            segments.append((not text, stretch))
        k = end
    if all(is_table for is_table, _ in segments):
        return None
    return [(is_table and len(part) >= 2, part) for is_table, part in segments]


def grid_html(rows: list[list[Line]], size: float) -> str:
    """A table's HTML from its rows' runs: a column starts at each left edge more than an em right of the
    one before it, and each run takes the last column starting at or left of it."""
    edges: list[float] = []
    for x in sorted(ln.x0 for row in rows for ln in row):
        if not edges or x > edges[-1] + size:
            edges.append(x)
    out = []
    for row in rows:
        cells = [""] * len(edges)
        for run in row:
            column = max(k for k, edge in enumerate(edges) if edge <= run.x0 + 0.5 * size)
            cells[column] = f"{cells[column]} {run.text}".strip()
        out.append("<tr>" + "".join(f"<td>{html.escape(c, quote=False)}</td>" for c in cells) + "</tr>")
    return "<table>" + "".join(out) + "</table>"


_WORD = re.compile(r"\w+")
# Block types that may hold a table's header lines written apart from it (never furniture, code, a table).
_HEADER_TYPES = frozenset((PARAGRAPH, HEADING, TITLE))


def _words(text: str) -> Counter:
    return Counter(_WORD.findall(html.unescape(re.sub(r"<[^>]+>", " ", text))))


def headers_taken_in(tree: PageTree, before: dict[int, str]) -> list[Block]:
    """The blocks of a page's tree that repeat a table's header rows, taken out of the tree (their lines
    join the table's) and returned. The table pass (`jocr.layout.tables_pages.page_with_tables`) reads a
    table's region again grown up over its unruled header lines; where the model wrote those lines as
    headings or paragraphs above its table, they would print twice, once above the table and once as its
    header row. `before` is each table block's HTML before the pass (by `id`). A block goes when it stands
    right above a table the pass changed (only such blocks between them) and every word it holds is one
    the pass brought into the table (counted: the new table's words less the old one's)."""
    gone: list[Block] = []
    blocks = tree.blocks
    k = 0
    while k < len(blocks):
        table = blocks[k]
        old = before.get(id(table))
        if table.type != TABLE or old is None or old == (table.html or table.markdown) or table.bbox is None:
            k += 1
            continue
        brought = _words(table.html or table.markdown) - _words(old)
        start = k
        while start > 0:
            block = blocks[start - 1]
            words = _words(block.text)
            # it starts above the table, or beside its first row
            above = block.bbox is not None and block.bbox[1] <= table.bbox[1] + 1
            if block.type not in _HEADER_TYPES or block.furniture or not words or not above:
                break
            if words - brought:
                break
            brought -= words
            start -= 1
        if start < k:
            taken = blocks[start:k]
            table.lines = [ln for b in taken for ln in (b.lines or [])] + list(table.lines or [])
            table.bbox = union([table.bbox, *(b.bbox for b in taken)])
            gone += taken
            del blocks[start:k]
            k = start
        k += 1
    if gone:
        tree.numbered()
    return gone


# An answer's table rows and cells, and the references a cell holds.
_ROW = re.compile(r"<tr\b[^>]*>(.*?)(?:</tr>|(?=<tr\b)|$)", re.S | re.I)
_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)(?:</t[dh]>|(?=<t[dh]\b)|$)", re.S | re.I)


def answer_cells(table: str) -> list[list[list[int]]]:
    """The run numbers an answer's table names, row by row and cell by cell (`<tr>`, `<td>` / `<th>`)."""
    return [[referenced_numbers(cell) for cell in _CELL.findall(row)] for row in _ROW.findall(table)]
