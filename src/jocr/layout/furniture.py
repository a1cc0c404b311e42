"""Page furniture: running headers, running footers and page numbers, found from where a page's lines sit,
so that Markdown leaves them out while the document tree keeps them, marked (docs/parsing.md, "Page
furniture"; docs/layout.md).

The rules read positions (and font sizes where the source has them: the text layer does, an anchor's
`@i x,y` lines do not), so they work on a page's text-layer lines (`edge_furniture`) and on the anchors of
an anchored page's windows alone (`furniture_runs`):

- the page's line levels are the distinct line tops (steps of `JITTER` of the page's height or less are one
  line); its line pitch is the median step between consecutive levels;
- top: where the levels within `TOP_BAND` of the top edge are followed by a step of at least
  `MIN_GAP_PITCHES` line pitches, every line above that step is furniture (the lowest such step within the
  band counts, so a header of two lines goes whole); bottom: the same within `BOTTOM_BAND` of the bottom
  edge, mirrored. A group that holds a line set larger than the body (`TITLE_SIZE` times the body's size)
  is a title block, not furniture (a title in a half-inch top margin), unless its lines are OCR's and one
  is a page number (an OCR line's size is its box's height, unreliable beside small print); on a
  landscape page (a slide) a top group of one line that is no page number is the slide's title;
- the outermost level within a band is a page number when it holds one line only and that line is a number
  of up to four digits (also "- 7 -", "Page 7", "7 of 12"): at the top always (a number above the body),
  at the bottom when it is set apart from the line above it (`NUMBER_GAP_PITCHES`) or does not start where
  that line starts: a year alone on a paragraph's last line, one pitch down at its left edge, stays, and
  so does the last row of a table of numbers (several lines on one level). Further up, within
  `NUMBER_BAND`, the last line of a page is a page number when it is a lone number `MIN_GAP_PITCHES`
  below the body (a LaTeX page with a deep bottom margin: its number at 78% of the height).

A first body line inside a band is followed by the next body line one pitch down, so it stays. The bands
are narrow because a title can sit near the top edge: on `mathfuncs.pdf` of the olmOCR-Bench sample the
title's top is at 68 of 999, so a band of 7% at the top would drop it; running headers there sit above
31. Bottom furniture reaches up to 930 (a page number in large type, `ff518b12...pdf`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import replace

from jocr.layout.geometry import Line, side_by_side
from jocr.layout.tree import FOOTER, HEADER, PAGE_NUMBER
from jocr.lines.references import anchor_entries
from jocr.types import GRID_MAX as GRID

# Line tops at most this far down from the top edge (a share of the page's height): wider where font sizes
# are known, since a title set larger than the body is then told from a running header.
TOP_BAND, TOP_BAND_SIZED = 0.05, 0.08
BOTTOM_BAND = 0.1  # line tops at least this far up from the bottom edge (LaTeX's A4 page numbers: 8.2%)
MIN_GAP_PITCHES = 2.0
NUMBER_GAP_PITCHES = 1.3
NUMBERED_HEAD_BAND = 0.1  # the top of a running header with its page number beside it, from the top edge
HEAD_NUMBER_GAP = 4.0  # ... that number this many line heights from its row (a title's number: 1-2)
EDGE_SHARE = 0.03  # ... and this close to the edge of the page's text
NUMBER_BAND = 0.25  # a lone number below the body, set apart by MIN_GAP_PITCHES, this far up is a page number
JITTER = 2 / GRID  # steps this small are lines of one level (sub- and superscripts, rounding)
TITLE_SIZE = 1.15
_NUMBER_LINE = re.compile(
    r"(?:page|p\.|seite|página)?\s*[-–—(]?\s*[0-9]{1,4}\s*[-–—)]?(?:\s*(?:of|/)\s*[0-9]{1,4})?", re.I
)


def furniture_runs(anchors: Sequence[str], lines: Sequence | None = None) -> list[frozenset[int]]:
    """For each window's anchor text of one page, the numbers of its runs that are page furniture. `lines`,
    when given, are the page's source lines in the anchor's order (run i is `lines[i - 1]` page-wide), whose
    boxes and font sizes replace the positions the anchors give."""
    kinds = anchor_furniture(anchors, lines)
    out, offset = [], 0
    for anchor in anchors:
        entries = anchor_entries(anchor)
        out.append(frozenset(n for n in entries if offset + n - 1 in kinds))
        offset += len(entries)
    return out


def anchor_lines(anchors: Sequence[str]) -> tuple[list[Line], float, float]:
    """The page's runs as `Line`s (index: page-wide run number - 1) on the anchors' 0-999 grid, with an
    estimated extent (a run's box is its top-left corner only), and the grid's width and height."""
    out, offset = [], 0
    for anchor in anchors:
        entries = anchor_entries(anchor)
        for number, run in entries.items():
            out.append(Line(offset + number - 1, run.text, (run.x, run.y, run.x, run.y), 0.0, estimated=True))
        offset += len(entries)
    return out, float(GRID), float(GRID)


def anchor_furniture(anchors: Sequence[str], lines: Sequence | None = None) -> dict[int, str]:
    """Page-wide run index -> furniture kind, for a page read in windows `anchors`."""
    if lines is not None:
        from jocr.layout.geometry import source_lines

        page = source_lines(lines)
        total = sum(len(anchor_entries(a)) for a in anchors)
        width, height = page_size(anchors)
        if len(page) >= total and page and width > 0:
            return edge_furniture(page[:total], width, height)
    grid_lines, width, height = anchor_lines(anchors)
    return edge_furniture(grid_lines, width, height)


def page_size(anchors: Sequence[str]) -> tuple[float, float]:
    """The page's size in points from its anchors' `page WxH` header ((0, 0) when none has one)."""
    for anchor in anchors:
        match = re.match(r"page (\d+)x(\d+)", anchor)
        if match:
            return float(match.group(1)), float(match.group(2))
    return 0.0, 0.0


def edge_furniture(
    lines: Sequence[Line], width: float, height: float, paper: Sequence[float] | None = None
) -> dict[int, str]:
    """`Line.index` -> HEADER, FOOTER or PAGE_NUMBER for the furniture lines of a page `width` x `height`.
    `paper` (top, bottom): where the sheet itself lies within the image (a photographed page with the
    table around it, `jocr.lines.ocr.paper_rows`); the bands are then measured from the sheet's edges."""
    if height <= 0 or not lines:
        return {}
    if paper is not None and 0 <= paper[0] < paper[1] <= height:
        # The sheet holds every line read on it: where lines lie beyond the sheet as found, a dark band
        # printed on the page (a slide's title bar, a dark tile) was taken for the table around it, and
        # the sheet reaches those lines.
        sheet_top = min(float(paper[0]), min(ln.y0 for ln in lines))
        sheet_bottom = max(float(paper[1]), max(ln.y1 for ln in lines))
        top, height = sheet_top, sheet_bottom - sheet_top
        lines = [replace(ln, box=(ln.x0, ln.y0 - top, ln.x1, ln.y1 - top)) for ln in lines]
    jitter = JITTER * height
    levels = _levels([ln.y0 for ln in lines], jitter)
    steps = [b - a for a, b in zip(levels, levels[1:], strict=False)]
    if len(steps) < 2:  # too few lines to tell a body from its edges
        return {}
    pitch = statistics.median(steps)
    gap = MIN_GAP_PITCHES * pitch
    sizes = [ln.size for ln in lines if ln.size > 0]
    body = statistics.median(sizes) if sizes else 0.0
    top_band, bottom_band = (TOP_BAND_SIZED if body else TOP_BAND) * height, height - BOTTOM_BAND * height
    kinds: dict[int, str] = {}

    def mark(group: list[Line], kind: str) -> None:
        if body and any(ln.size >= TITLE_SIZE * body for ln in group) and not _numbered_ocr_group(group):
            return  # a title block in the margin, not a running header
        for ln in group:  # a number in a running header or footer is its page number
            kinds[ln.index] = PAGE_NUMBER if _NUMBER_LINE.fullmatch(ln.text.strip()) else kind

    top = -1.0
    for above, below in zip(levels, levels[1:], strict=False):
        if above > top_band:
            break
        if below - above >= gap:
            top = above
    head = [ln for ln in lines if ln.y0 <= top + jitter]
    if not _slide_title(head, width, height):
        mark(head, HEADER)
    bottom = float("inf")
    for below, above in zip(reversed(levels), list(reversed(levels))[1:], strict=False):
        if below < bottom_band:
            break
        if below - above >= gap:
            bottom = below
    mark([ln for ln in lines if ln.y0 >= bottom - jitter], FOOTER)

    if not any(kind == HEADER for kind in kinds.values()):
        mark(_numbered_head(lines, pitch, width, height), HEADER)
    first, last = levels[0], levels[-1]
    if first <= top_band:
        row = [ln for ln in lines if ln.y0 <= first + jitter]
        if _page_number(row):
            kinds[row[0].index] = PAGE_NUMBER
    if last >= height - NUMBER_BAND * height:
        row = [ln for ln in lines if ln.y0 >= last - jitter]
        above = [ln for ln in lines if ln.y0 < last - jitter]
        if _page_number(row) and above:
            nearest = max(above, key=lambda ln: ln.y0)
            step = last - nearest.y0
            elsewhere = abs(row[0].x0 - nearest.x0) > 0.02 * width
            near_edge = last >= bottom_band and (step >= NUMBER_GAP_PITCHES * pitch or elsewhere)
            if near_edge or step >= MIN_GAP_PITCHES * pitch:
                kinds[row[0].index] = PAGE_NUMBER
    return kinds


def _numbered_head(lines: Sequence[Line], pitch: float, width: float, height: float) -> list[Line]:
    """The top row of a page when it is a running head with its page number at one end ("8   第四章
    绘图命令", "从键盘输入变到油墨   9") set apart from the body by less than `MIN_GAP_PITCHES` (printed
    Chinese sets its lines further apart than Latin text, so the gap under its running head is fewer line
    pitches) but at least `NUMBER_GAP_PITCHES`, within `NUMBERED_HEAD_BAND` of the top; else []. The number
    stands at the text's left or right edge, `HEAD_NUMBER_GAP` line heights or more from the rest of the
    row: a section number before its title ("2  Methods") stands an em or two from it."""
    first = min(lines, key=lambda ln: ln.y0)
    if first.y0 > NUMBERED_HEAD_BAND * height:
        return []
    row = sorted((ln for ln in lines if side_by_side(ln, first)), key=lambda ln: ln.x0)
    below = [ln.y0 for ln in lines if ln.y0 > max(r.y0 for r in row) and not side_by_side(ln, first)]
    if len(row) < 2 or not below or min(below) - first.y0 < NUMBER_GAP_PITCHES * pitch:
        return []
    left, right = min(ln.x0 for ln in lines), max(ln.x1 for ln in lines)
    line_height = max(ln.y1 - ln.y0 for ln in row) or pitch  # an anchor's lines have no height: the pitch
    edge, gap = EDGE_SHARE * width, HEAD_NUMBER_GAP * line_height
    number_left = _NUMBER_LINE.fullmatch(row[0].text.strip()) and row[0].x0 - left <= edge
    number_right = _NUMBER_LINE.fullmatch(row[-1].text.strip()) and right - row[-1].x1 <= edge
    if number_left and row[1].x0 - row[0].x1 >= gap or number_right and row[-1].x0 - row[-2].x1 >= gap:
        return row
    return []


SLIDE_ASPECT = 1.15  # a page this much wider than tall is a slide (4:3 and 16:9) or a landscape sheet


def _slide_title(group: list[Line], width: float, height: float) -> bool:
    """Whether the top group of a landscape page is its title: one line that is no page number. A slide
    carries no running header; a navigation bar across its top is several lines and stays furniture."""
    if width < SLIDE_ASPECT * height or len(group) != 1:
        return False
    return _NUMBER_LINE.fullmatch(group[0].text.strip()) is None


def _numbered_ocr_group(group: list[Line]) -> bool:
    """Whether an edge group of OCR lines holds a page number: then it is a running header or footer
    whatever its size. An OCR line's size is its box's height, which a page of small print (a screenshot's
    interface text) makes look large beside the median; a title block carries no page number."""
    ocr = all(ln.source != "textlayer" and not ln.estimated for ln in group)
    return ocr and any(_NUMBER_LINE.fullmatch(ln.text.strip()) for ln in group)


def _page_number(row: list[Line]) -> bool:
    return len(row) == 1 and _NUMBER_LINE.fullmatch(row[0].text.strip()) is not None


def _levels(tops: list[float], jitter: float) -> list[float]:
    """The distinct tops, those within `jitter` of the previous one taken as one level."""
    levels: list[float] = []
    for y in sorted(set(tops)):
        if not levels or y - levels[-1] > jitter:
            levels.append(y)
    return levels
