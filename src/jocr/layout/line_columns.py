"""Reading order of a page's body lines: the groups (columns, bands between lines that cross a gutter,
blocks apart) read one after the other, each top to bottom (docs/layout.md, "Reading order"). Used by the
rules over lines (`jocr.layout.line_rules`), which then form each group's paragraphs, headings and lists."""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
import statistics

from jocr.layout.geometry import Line, list_item, rows_of, side_by_side, text_width

# A scanned or photographed page is read as it lies: turned by a degree, its columns' edges slant and a
# gutter no wider than an em closes up in x. Shears tried, as the tangent of angles up to this many degrees
# in `SKEW_STEP` steps, and how much sharper (`SKEW_GAIN`) the line ends must line up to take one.
MAX_SKEW = 2.5
SKEW_STEP = 0.1
SKEW_GAIN = 1.1


def reading_order(lines: list[Line], size: float) -> list[list[Line]]:
    """The body's lines as groups read one after the other (`reading_columns`), found on the lines sheared
    upright when they were read off an image that lies askew (`page_skew`); the groups hold the lines as
    given."""
    slope = page_skew(lines, size)
    if slope == 0.0:
        return reading_columns(lines, size)
    middle = statistics.median((ln.y0 + ln.y1) / 2 for ln in lines)
    upright = {}
    for ln in lines:
        shift = ((ln.y0 + ln.y1) / 2 - middle) * slope
        x0, y0, x1, y1 = ln.box
        upright[id(ln)] = dataclasses.replace(ln, box=(x0 - shift, y0, x1 - shift, y1))
    original = {id(u): ln for ln in lines for u in [upright[id(ln)]]}
    groups = reading_columns([upright[id(ln)] for ln in lines], size)
    return [[original[id(u)] for u in group] for group in groups]


def page_skew(lines: list[Line], size: float) -> float:
    """The shear (x shift per unit of y) that lines up OCR lines' left and right ends best: the ends' counts
    in bins a quarter of the body size wide, squared and summed, at least `SKEW_GAIN` times that of the page
    as read; 0.0 for a text layer's lines (never askew), too few lines, or no better shear."""
    if len(lines) < 8 or all(ln.source == "textlayer" for ln in lines):
        return 0.0
    step = max(size / 4, 1e-3)

    def sharpness(slope: float) -> int:
        counts: dict[tuple[int, int], int] = {}
        for ln in lines:
            shift = (ln.y0 + ln.y1) / 2 * slope
            for side, x in ((0, ln.x0), (1, ln.x1)):
                key = (side, math.floor((x - shift) / step))
                counts[key] = counts.get(key, 0) + 1
        return sum(c * c for c in counts.values())

    flat = sharpness(0.0)
    best, best_score = 0.0, flat
    steps = round(MAX_SKEW / SKEW_STEP)
    for k in range(-steps, steps + 1):
        slope = math.tan(math.radians(k * SKEW_STEP))
        score = sharpness(slope) if k else flat
        if score > best_score:
            best, best_score = slope, score
    return best if best_score >= SKEW_GAIN * flat else 0.0


GUTTER_EMS = 0.9  # a gutter is at least this many body sizes wide (LaTeX's columns are one em apart)
GUTTER_CHARS = 1.5  # or this many of the prose's character widths, for OCR lines (see `min_gutter`)


def min_gutter(lines: list[Line], size: float) -> float:
    """The narrowest x-interval free of lines that may part two columns: `GUTTER_EMS` body sizes, or for
    OCR lines, if less, `GUTTER_CHARS` times the median width of a character of their prose (lines of 15
    characters or more). An OCR line's size is its box's height, padded above and below, and its box is
    padded left and right too, so gutters look narrower and sizes larger than on the page; a Latin
    character is about half an em wide whatever the engine's padding."""
    gutter = GUTTER_EMS * size
    if all(ln.source == "textlayer" for ln in lines):
        return gutter
    widths = [(ln.x1 - ln.x0) / len(ln.text) for ln in lines if len(ln.text) >= 15]
    return min(gutter, GUTTER_CHARS * statistics.median(widths)) if widths else gutter


MAX_CUT_DEPTH = 32  # nested cuts; a region deeper than this (hostile input) is read as it is


def reading_columns(lines: list[Line], size: float, depth: int = 0, min_rows: int = 3) -> list[list[Line]]:
    """The body's lines as groups each read top to bottom, in reading order, by recursive cuts (XY-cut,
    Nagy and Seth 1984): a region splits left | right at a gutter no line crosses when both sides hold
    prose (`_vertical_cut`; a table's columns hold no prose, so a table is read row by row), else top /
    bottom at its widest gap between rows, wider than the lines' own spacing (`_horizontal_cut`), and each
    part is cut again. A title above two columns is cut off first, the columns then split; a page whose
    column layout changes halfway down splits into its parts first. `min_rows`: the rows each side of a
    gutter must hold (3 for lines; 1 for regions' boxes, `jocr.layout.regions`, a column of which may be one
    box)."""
    if len(lines) < 2 or depth > MAX_CUT_DEPTH:
        return [lines] if lines else []
    cut = _vertical_cut(lines, size, min_rows)
    if cut is not None:
        left = [ln for ln in lines if ln.x1 <= cut]
        right = [ln for ln in lines if ln.x1 > cut]
        notes = _margin_side(left, right, lines) if min_rows > 1 else None
        if notes is not None:
            body, side = (right, left) if notes == 0 else (left, right)
            if _vertical_cut(body, size) is not None:  # a body of columns: its notes after it
                return reading_columns(body, size, depth + 1) + [sorted(side, key=lambda ln: (ln.y0, ln.x0))]
            return [
                g for part in _notes_beside(body, side, size) for g in reading_columns(part, size, depth + 1)
            ]
        return reading_columns(left, size, depth + 1, min_rows) + reading_columns(
            right, size, depth + 1, min_rows
        )
    spanning = _spanning_lines(lines, size, min_rows)
    if spanning:  # bands between the lines that cross a gutter, each read on its own, those lines between
        cuts = sorted({(ln.y0 + ln.y1) / 2 for ln in spanning})
        bands: list[list[Line]] = [[] for _ in range(len(cuts) + 1)]
        for line in lines:
            if line not in spanning:
                bands[bisect.bisect_left(cuts, (line.y0 + line.y1) / 2)].append(line)
        groups: list[list[Line]] = []
        spans = sorted(spanning, key=lambda ln: (ln.y0, ln.x0))
        for k, band in enumerate(bands):
            groups += reading_columns(band, size, depth + 1, min_rows) if band else []
            if k < len(spans):
                groups.append([spans[k]])
        return _merged(groups)
    cuts = _horizontal_cuts(lines, size)
    if cuts:
        bands: list[list[Line]] = [[] for _ in range(len(cuts) + 1)]
        for line in lines:
            bands[bisect.bisect_left(cuts, line.y1)].append(line)
        groups = [g for band in bands if band for g in reading_columns(band, size, depth + 1, min_rows)]
        return _merged(groups)
    return [lines]


def _merged(groups: list[list[Line]]) -> list[list[Line]]:
    """Consecutive groups that are one column (no line of either beside a line of the other) read as one,
    so that a column cut by a gap still forms its paragraphs across it."""
    out: list[list[Line]] = []
    for group in groups:
        if out and _stacked(out[-1], group):
            out[-1] = out[-1] + group
        else:
            out.append(group)
    return out


def _stacked(upper: list[Line], lower: list[Line]) -> bool:
    """Whether `lower` lies below `upper` (its top no higher than half a line above `upper`'s bottom) and in
    its column (their x-extents overlap by 0.8 of the narrower). Without the first test, a band across
    the page (a headline, a masthead) joined to the first column under it took in the next columns too:
    their x-extents lie inside the band's, and their lines were read row by row across the columns."""
    a0, a1 = min(ln.x0 for ln in upper), max(ln.x1 for ln in upper)
    b0, b1 = min(ln.x0 for ln in lower), max(ln.x1 for ln in lower)
    overlap = min(a1, b1) - max(a0, b0)
    half_line = 0.5 * statistics.median(ln.y1 - ln.y0 for ln in lower)
    below = min(ln.y0 for ln in lower) >= max(ln.y1 for ln in upper) - half_line
    return below and overlap > 0.8 * min(a1 - a0, b1 - b0)


def _vertical_cut(lines: list[Line], size: float, min_rows: int = 3) -> float | None:
    """The middle of the widest x-interval of at least `min_gutter` (a run splits at gaps over one em, and
    LaTeX's two columns are one em apart) that no line crosses, or, failing one, of a narrower one that
    a column's flush left edge closes (`_aligned_starts`: a newspaper's columns, set close, read from a
    small image), with three rows at least on both sides and prose (lines `PROSE_COLUMNS` wide in the median)
    on both, or on one when both sides are at least 0.3 of the region wide, or lists on both
    (`_lists_side_by_side`), or on neither when the two are columns set apart, not a table's
    (`_set_apart`)."""
    left, right = min(ln.x0 for ln in lines), max(ln.x1 for ln in lines)
    gutter = min_gutter(lines, size)
    spans = sorted((ln.x0, ln.x1) for ln in lines)
    best = narrow = None
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        inside = left + 0.1 * (right - left) < (reach + x0) / 2 < right - 0.1 * (right - left)
        if inside and x0 - reach >= gutter:
            if best is None or x0 - reach > best[1] - best[0]:
                best = (reach, x0)
        elif inside and x0 > reach and (narrow is None or x0 - reach > narrow[1] - narrow[0]):
            if _aligned_starts(lines, x0, gutter):
                narrow = (reach, x0)
        reach = max(reach, x1)
    best = best or narrow
    if best is None:
        return None
    cut = (best[0] + best[1]) / 2
    sides = [[ln for ln in lines if ln.x1 <= cut], [ln for ln in lines if ln.x1 > cut]]
    if not all(len(rows_of(side)) >= min_rows for side in sides):
        return None
    prose = [statistics.median(text_width(ln.text) for ln in side) >= PROSE_COLUMNS for side in sides]
    # A column of short lines (a table, a list of numbers) beside one of prose is a column of the page when
    # both are as wide as page columns are: a table's cells are narrow.
    extent = 0.3 * (right - left)
    wide = all(max(ln.x1 for ln in side) - min(ln.x0 for ln in side) >= extent for side in sides)
    if all(prose) or (any(prose) and wide) or _lists_side_by_side(sides):
        return cut
    margin = any(prose) and min_rows > 1  # notes in the margin beside a column of prose (`_margin_side`)
    return cut if (margin or not any(prose)) and _set_apart(sides) else None


_LINE_NUMBER = re.compile(r"[0-9]{1,4}")
MARGIN_SHARE = 0.3  # a side of short lines narrower than this share of the region is its margin


def _margin_side(left: list[Line], right: list[Line], lines: list[Line]) -> int | None:
    """Which side of a gutter (0 left, 1 right) is the margin beside a column of prose: that side's lines
    are short (under `PROSE_COLUMNS` in the median) and it is narrower than `MARGIN_SHARE` of the region,
    the other side prose. None for columns of a page. `_vertical_cut` has found them set apart (their rows
    do not pair up as a table's do): side notes, an edition's line numbers, a tab of section names."""
    extent = max(ln.x1 for ln in lines) - min(ln.x0 for ln in lines)
    kinds = []
    for side in (left, right):
        width = max(ln.x1 for ln in side) - min(ln.x0 for ln in side)
        prose = statistics.median(text_width(ln.text) for ln in side) >= PROSE_COLUMNS
        kinds.append("prose" if prose else "margin" if width < MARGIN_SHARE * extent else "")
    if sorted(kinds) != ["margin", "prose"]:
        return None
    return kinds.index("margin")


def _notes_beside(body: list[Line], notes: list[Line], size: float) -> list[list[Line]]:
    """The body read top to bottom with each run of notes after the paragraph it stands beside: the notes
    run (rows no more than a line apart) goes after the first body line at or below its top that ends a
    paragraph (ends two body sizes short of where the body's lines end in the median, or is the body's last
    line), so that no paragraph is cut by a note."""
    body = sorted(body, key=lambda ln: (ln.y0, ln.x0))
    right = statistics.median(ln.x1 for ln in body)  # where full lines end (a merged note ends further)
    runs: list[list[Line]] = []
    for row in rows_of(notes):
        if runs and row.y0 - max(ln.y1 for ln in runs[-1]) <= row.y1 - row.y0:
            runs[-1] += row.lines
        else:
            runs.append(list(row.lines))
    counted = [all(_LINE_NUMBER.fullmatch(ln.text.strip()) for ln in run) for run in runs]
    numbers = [ln for run, number in zip(runs, counted, strict=True) if number for ln in run]
    parts: list[list[Line]] = []
    start = 0
    for run in (run for run, number in zip(runs, counted, strict=True) if not number):
        top = min(ln.y0 for ln in run)
        k = start
        while k < len(body) - 1 and (body[k].y1 < top or body[k].x1 >= right - 2 * size):
            k += 1
        if start < len(body):
            parts.append(body[start : k + 1])
            start = k + 1
        parts.append(run)
    parts += [body[start:], numbers]  # an edition's line numbers, after the text they count
    return [p for p in parts if p]


LIST_SHARE = 0.5  # this share of a side's lines (two at least) list items make it a list


def _lists_side_by_side(sides: list[list[Line]]) -> bool:
    """Whether the two sides of a gutter are lists set side by side (a slide's bulleted list beside a
    numbered one): one side a list (`LIST_SHARE` of its lines list items, `geometry.list_item`), the other
    holding two items at least. Their items stand at the same heights, no side holds prose, and without
    this they were read row by row as a table. Values beside a list (a price list) carry no marker, so
    such a list and its values are still read row by row."""
    items = [sum(1 for ln in side if list_item(ln.text)) for side in sides]
    if min(items) < 2:
        return False
    return any(n >= LIST_SHARE * len(side) for n, side in zip(items, sides, strict=True))


BESIDE_ROWS = 0.5  # under this share of the fuller side's rows beside a row of the other: columns set apart


def _set_apart(sides: list[list[Line]]) -> bool:
    """Whether two sides of a gutter, neither of them prose, are columns set apart rather than a table's
    columns: they stand beside each other over half the shorter one's height at least, and fewer than
    `BESIDE_ROWS` of the rows of the side with more rows stand beside a row of the other (boxes overlapping
    in height by half the shorter). A slide's navigation sidebar beside its bulleted body, each at its own
    line pitch, was read row by row with it and taken for a table; a table's cells line up row for row."""
    rows = sorted((rows_of(side) for side in sides), key=len, reverse=True)
    spans = [(min(r.y0 for r in side), max(r.y1 for r in side)) for side in rows]
    shorter = min(b - a for a, b in spans)
    if min(spans[0][1], spans[1][1]) - max(spans[0][0], spans[1][0]) < 0.5 * shorter:
        return False

    paired = sum(1 for row in rows[0] if any(side_by_side(row, other) for other in rows[1]))
    return paired < BESIDE_ROWS * len(rows[0])


# A line of prose is this many columns wide at least (`geometry.text_width`: 15 Latin characters, or 8 CJK
# ones, which print twice as wide: a Chinese newspaper's narrow columns hold 12-14 characters a line).
PROSE_COLUMNS = 15
ALIGNED_STARTS = 0.2  # this share of a region's lines starting at one x is a column's flush left edge


def _aligned_starts(lines: list[Line], x: float, gutter: float) -> bool:
    """Whether `ALIGNED_STARTS` of the lines (five at least) start within a third of a gutter of `x`."""
    near = sum(1 for ln in lines if abs(ln.x0 - x) <= gutter / 3)
    return near >= max(5, ALIGNED_STARTS * len(lines))


MAX_SPANNING = 0.05  # at most this share of a region's lines (and 1 at least) may cross a gutter


def _spanning_lines(lines: list[Line], size: float, min_rows: int = 3) -> list[Line]:
    """The few lines (at most `MAX_SPANNING` of the region's, one at least) that cross an x-interval of at
    least `min_gutter` (or a narrower one closed by a column's flush left edge, `_aligned_starts`) which no
    other line crosses, when without them the region has a gutter there with
    prose on both sides (`_vertical_cut`): a title set between two columns with no gap wide enough to cut
    at, or an OCR line that ran over a narrow gutter into the next column. [] when there are none."""
    if len(lines) < 8:
        return []
    left, right = min(ln.x0 for ln in lines), max(ln.x1 for ln in lines)
    step = max(size / 4, 1e-3)
    bins = int((right - left) / step) + 1
    if bins > 20_000:
        return []
    cover = [0] * (bins + 1)
    for ln in lines:
        cover[int((ln.x0 - left) / step)] += 1
        cover[int((ln.x1 - left) / step)] -= 1
    allowed = max(1, int(MAX_SPANNING * len(lines)))
    gutter = min_gutter(lines, size)
    depth, start, best, narrow = 0, None, None, None
    for k in range(bins):
        depth += cover[k]
        inside = 0.1 * bins < k < 0.9 * bins and 0 < depth <= allowed
        if inside and start is None:
            start = k
        if not inside and start is not None:
            if (k - start) * step >= gutter:
                if best is None or k - start > best[1] - best[0]:
                    best = (start, k)
            elif (narrow is None or k - start > narrow[1] - narrow[0]) and _aligned_starts(
                lines, left + k * step, gutter
            ):  # a gutter set close, as `_vertical_cut` takes one: a column's flush left edge closes it
                narrow = (start, k)
            start = None
    best = best or narrow
    if best is None:
        return []
    cut = left + (best[0] + best[1]) / 2 * step
    crossing = [ln for ln in lines if ln.x0 < cut < ln.x1]
    rest = [ln for ln in lines if not (ln.x0 < cut < ln.x1)]
    if not crossing or len(crossing) > allowed or _vertical_cut(rest, size, min_rows) is None:
        return []
    return crossing


def _horizontal_cuts(lines: list[Line], size: float) -> list[float]:
    """The middles of the widest gaps between consecutive rows, top to bottom: every gap as wide as the
    widest when that is wider than both half a body size and 1.5 times the region's median gap between
    rows (more than the lines' own spacing). All at once, so that a page of evenly spaced blocks is cut in
    one step, not one block per step."""
    rows = rows_of(lines)
    if len(rows) < 2:
        return []
    gaps = []
    bottom = rows[0].y1
    for row in rows[1:]:
        gaps.append((row.y0 - bottom, (bottom + row.y0) / 2))
        bottom = max(bottom, row.y1)
    widest = max(g for g, _ in gaps)
    typical = statistics.median(g for g, _ in gaps)
    if widest <= max(0.5 * size, 1.5 * typical):
        return []
    return [middle for gap, middle in gaps if gap >= widest - 0.25 * size]
