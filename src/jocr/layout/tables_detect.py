"""Where the tables of a page image are (docs/elements.md, "Tables in page images"): regions found from
the page's geometry alone, OCR pieces and ruling lines found in the pixels, for the table reader
(`jocr.layout.tables.read_table`) to read. Nothing here looks at a model's output.

- Ruled tables: horizontal rules of about the same extent (both ends within `rule_ends` line heights;
  shorter rules within a stack's extent join it), stacked with no more than `max_rule_gap` line heights
  between neighbours and no prose or caption between them, two at least: a booktabs table's top, mid and
  bottom rules, a grid's row rules. The region is the rules' extent.
- Unruled tables: a run of at least `min_rows` consecutive text lines, each of two pieces or more, one
  after another at no more than `max_row_gap` line heights, whose pieces leave the same column gaps open
  (an x-interval no piece of the run covers, at least `min_gutter` line heights wide). Lines of one piece
  inside a run (a wrapped cell) are kept when the run goes on after them.

A region only counts when the reader finds a table in it (two rows of two filled cells, cells not lines of
prose: `read_table`'s own test), so a two-column page of prose, whose gutter lines up like a table's, is
no table.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from jocr.bbox import overlap_area
from jocr.layout.geometry import text_width
from jocr.layout.tables import (
    Box,
    Piece,
    Rule,
    Table,
    TableConfig,
    _text_lines,
    _through_text,
    gap_cuts,
    read_table,
)
from jocr.layout.tree import CAPTION_START, union


@dataclass
class DetectConfig:
    """How tables are found in a page's geometry (lengths in median line heights)."""

    rule_ends: float = 2.0  # two rules' ends this close are one table's rules
    max_rule_gap: float = 30.0  # neighbouring rules of one table at most this far apart
    min_rows: int = 3  # an unruled table has at least this many text lines
    max_row_gap: float = 2.5  # consecutive rows of an unruled table at most this far apart
    min_gutter: float = 0.7  # a column gap at least this wide (an OCR box is about 1.3 em high: 0.9 em)
    min_cell_lines: float = 0.7  # share of a run's lines that have two pieces or more
    min_column_rules: int = 3  # vertical rules that start and end together: a grid's column borders
    min_column_rule: float = 2.0  # each at least this long


def find_tables(pieces: list[Piece], rules: list[Rule], config: DetectConfig | None = None,
                read_again: Callable[[Table], Table] | None = None) -> list[Table]:  # fmt: skip
    """The tables of a page: each region (ruled first, then unruled ones outside them) read by the table
    reader; the tables it finds, top to bottom, each with its `bbox` the region read. `read_again(table)`
    (the region is `table.bbox`) may read a region again from better geometry (a page image's crop,
    `tables_pages.crop_table`): every ruled region, which the pieces alone may fail to split into cells
    (a page's OCR line bridging two cells), and each unruled region whose pieces read as a table."""
    config = config or DetectConfig()
    pieces = [p for p in pieces if p.text.strip()]
    if len(pieces) < 4:
        return []
    line_h = statistics.median(p.height for p in pieces)
    found: list[Table] = []
    for region in ruled_regions(rules, line_h, config, pieces):
        table = read_table(pieces, rules, region, TableConfig())
        table.bbox = region
        table = read_again(table) if read_again is not None else table
        if _accepted(table):
            found.append(table)
    taken = [t.bbox for t in found]
    for region in aligned_regions(pieces, line_h, config):
        if any(overlap_area(region, box) > 0 for box in taken):
            continue
        table = read_table(pieces, rules, region, TableConfig())
        if _accepted(table):
            table.bbox = region
            found.append(read_again(table) if read_again is not None else table)
            taken.append(region)
    return sorted(found, key=lambda t: t.bbox[1])


def _accepted(table: Table) -> bool:
    return not table.empty and table.n_rows >= 2 and table.n_cols >= 2


def ruled_regions(
    rules: list[Rule], line_h: float, config: DetectConfig, pieces: list[Piece] = ()
) -> list[Box]:
    """Stacks of horizontal rules (module docstring), as boxes grown by a fifth of a line height (the
    rules' own thickness). A rule joins the stack above it when both its ends are within `rule_ends` of a
    stacked rule's, or, once the stack has two rules, when it lies within their extent (a partial rule
    under a spanning head, `\\cline`; a page's head rule above a table is no such stack), and nothing
    between them parts two tables (`_parted`). Overlapping stacks are one region. Rules through the
    middle of a piece's text are the letters' ink (`tables._through_text`), not rules."""
    across = sorted(
        (r for r in rules if r.horizontal and r.x1 - r.x0 >= 4 * line_h and not _through_text(r, pieces)),
        key=lambda r: r.y0,
    )
    ends = config.rule_ends * line_h
    stacks: list[list[Rule]] = []
    for rule in across:
        for stack in stacks:
            last = stack[-1]
            x0, x1 = min(r.x0 for r in stack), max(r.x1 for r in stack)
            same = any(abs(rule.x0 - r.x0) <= ends and abs(rule.x1 - r.x1) <= ends for r in stack)
            partial = len(stack) >= 2 and rule.x0 >= x0 - ends and rule.x1 <= x1 + ends
            if (
                (same or partial)
                and 0.3 * line_h < rule.y0 - last.y0 <= config.max_rule_gap * line_h
                and not _parted((min(x0, rule.x0), last.y0, max(x1, rule.x1), rule.y0), pieces, line_h)
            ):
                stack.append(rule)
                break
        else:
            stacks.append([rule])
    pad = 0.2 * line_h
    boxes = [
        (
            min(r.x0 for r in stack) - pad,
            stack[0].y0 - pad,
            max(r.x1 for r in stack) + pad,
            stack[-1].y0 + pad,
        )
        for stack in stacks
        if len(stack) >= 2
    ]
    stacked = _merged(boxes)  # partial rules' own stack inside a table joins it
    # a grid with row rules is its stack: column borders only add what no stack holds
    grids = [
        g
        for g in column_grids(rules, line_h, config, pieces)
        if not any(overlap_area(g, b) > 0 for b in stacked)
    ]
    return sorted(stacked + _merged(grids), key=lambda b: b[1])


def _merged(boxes: list[Box]) -> list[Box]:
    """`boxes`, each one that overlaps boxes before it made one with them (their union)."""
    out: list[Box] = []
    for box in boxes:
        inner = [b for b in out if overlap_area(b, box) > 0]
        out = [b for b in out if b not in inner] + [union([box, *inner])]
    return out


def column_grids(
    rules: list[Rule], line_h: float, config: DetectConfig, pieces: list[Piece] = ()
) -> list[Box]:
    """Rows of vertical rules that start and end together (both ends within `rule_ends` line heights of
    the row's first rule), `min_column_rules` of them at least, each `min_column_rule` line heights long
    and a line height from the next: the column borders of a grid, whose row rules the page's own rules
    hide (ruled notepaper) or that has none. A page's column divider, or a box's two sides, are fewer."""
    ends = config.rule_ends * line_h
    upright = sorted(
        (r for r in rules if not r.horizontal and r.y1 - r.y0 >= config.min_column_rule * line_h),
        key=lambda r: r.x0,
    )
    out: list[Box] = []
    used: set[int] = set()
    for k, first in enumerate(upright):
        if k in used:
            continue
        row = [first]
        for j in range(k + 1, len(upright)):
            rule = upright[j]
            if j in used or rule.x0 - row[-1].x0 < line_h:
                continue
            if abs(rule.y0 - first.y0) <= ends and abs(rule.y1 - first.y1) <= ends:
                row.append(rule)
                used.add(j)
        if len(row) >= config.min_column_rules and _columns_hold_text(row, pieces):
            pad = 0.2 * line_h
            out.append(
                (
                    row[0].x0 - pad,
                    min(r.y0 for r in row) - pad,
                    row[-1].x1 + pad,
                    max(r.y1 for r in row) + pad,
                )
            )
    return out


def _columns_hold_text(row: list[Rule], pieces: list[Piece]) -> bool:
    """Whether most bands between neighbouring vertical rules of `row` hold text on two lines at least
    within the rules' height: pieces with half their width, or half the band's, in the band (a page's
    OCR line may run over several cells)."""
    top, bottom = statistics.median(r.y0 for r in row), statistics.median(r.y1 for r in row)
    filled = 0
    for left, right in zip(row, row[1:], strict=False):
        inside = [
            p
            for p in pieces
            if top < p.cy < bottom
            and min(p.box[2], right.x0) - max(p.box[0], left.x0)
            >= 0.5 * min(p.box[2] - p.box[0], right.x0 - left.x0)
        ]
        filled += len(_text_lines(inside)) >= 2
    return filled > 0.5 * (len(row) - 1)


def _parted(band: Box, pieces: list[Piece], line_h: float) -> bool:
    """Whether the text between two rules (`band`: their common extent, from the upper rule's height to
    the lower's) parts two tables rather than being a table's rows: a piece reaching more than a line
    height past the rules' ends (prose of the page, wider than the table), a piece as wide as most of the
    rules and alone on its line (a line of prose between two tables of the text's width; a wide cell has
    its row's other cells beside it), a caption ("Table 6. ..."), or a chart's axis labels
    (`_axis_labels`)."""
    x0, y0, x1, y1 = band
    between = [p for p in pieces if y0 < p.cy < y1 and p.box[2] > x0 and p.box[0] < x1]
    if _axis_labels(_text_lines(between)):
        return True
    for p in between:
        if p.box[0] < x0 - line_h or p.box[2] > x1 + line_h:
            return True
        wide = p.box[2] - p.box[0] > 0.8 * (x1 - x0)
        if wide and not any(q is not p and _same_line(p, q) for q in between):
            return True
        if CAPTION_START.match(p.text.strip()):
            return True
    return False


AXIS_RUN = 3  # lone short labels on this many lines in a row: a chart's axis
AXIS_LABEL = 6  # columns (a CJK character two) of a label that is a tick's value ("-15%", "2020")


def _axis_labels(lines: list[list[Piece]]) -> bool:
    """Whether `AXIS_RUN` consecutive lines hold one short piece each (`AXIS_LABEL` columns at most): the
    tick values of a chart's axis ("10%", "5%", "0%"), which a section's rule above the chart and the next
    section's below stack with a table's rules. A table's rows between two rules have cells beside each
    other, and a wrapped cell's lines are long."""
    run = 0
    for line in lines:
        run = run + 1 if len(line) == 1 and text_width(line[0].text.strip()) <= AXIS_LABEL else 0
        if run >= AXIS_RUN:
            return True
    return False


def _same_line(a: Piece, b: Piece) -> bool:
    """Two pieces on one baseline: their boxes overlap by half the shorter height."""
    overlap = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
    return overlap >= 0.5 * min(a.height, b.height)


def aligned_regions(pieces: list[Piece], line_h: float, config: DetectConfig) -> list[Box]:
    """Runs of text lines whose pieces share column gaps (module docstring)."""
    lines = _text_lines(pieces)
    out: list[Box] = []
    start = 0
    while start < len(lines):
        if len(lines[start]) < 2:
            start += 1
            continue
        end = start + 1  # lines[start:end] is the run
        best = None
        while end <= len(lines):
            run = lines[start:end]
            if not _steady(run, line_h, config):
                break
            if sum(len(line) >= 2 for line in run) >= max(config.min_rows, config.min_cell_lines * len(run)):
                if len(run[-1]) >= 2 and _gutters(run, line_h, config):
                    best = end
            end += 1
        if best is None:
            start += 1
            continue
        run = lines[start:best]
        out.append(union([p.box for line in run for p in line]))
        start = best
    return out


def _steady(run: list[list[Piece]], line_h: float, config: DetectConfig) -> bool:
    """Consecutive lines no further apart than `max_row_gap` line heights."""
    if len(run) < 2:
        return True
    prev, line = run[-2], run[-1]
    gap = min(p.box[1] for p in line) - max(p.box[3] for p in prev)
    return gap <= config.max_row_gap * line_h


def _gutters(run: list[list[Piece]], line_h: float, config: DetectConfig) -> bool:
    """Whether the multi-piece lines of `run` leave a column gap open that splits each of them (pieces on
    both sides of it in every such line)."""
    rows = [line for line in run if len(line) >= 2]
    cuts = gap_cuts([p.box for line in rows for p in line], config.min_gutter * line_h)
    if not cuts:
        return False
    return any(
        all(any(p.box[2] <= cut for p in line) and any(p.box[0] >= cut for p in line) for line in rows)
        for cut in cuts
    )
