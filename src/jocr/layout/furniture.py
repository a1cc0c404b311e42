"""Page furniture on anchored pages: running headers, running footers and page numbers, found from where the
anchor puts their runs, so that an anchored page's Markdown leaves them out (docs/parsing.md, "Page
furniture").

An anchored model is trained to drop furniture (its targets never hold it), but the bundled member often
names those runs anyway. The text layer tells them apart by position alone: furniture sits at the very
top or bottom edge of the page, set apart from the body by a gap of several lines. The rule reads only the
anchors' `@i x,y` lines (y: the run's top on the 0-999 grid of the page's height), so wherever a page's
text is assembled from its windows' outputs it needs nothing but those windows' anchors:

- the page's line levels are the distinct run tops of all its windows; its line pitch is the median step
  between consecutive levels (steps of `JITTER` or less are one line);
- top: where the levels within `TOP_BAND` of the top edge are followed by a step of at least
  `MIN_GAP_PITCHES` line pitches, every run above that step is furniture (the lowest such step within
  the band counts, so a header of two lines goes whole); bottom: the same within `BOTTOM_BAND` of the
  bottom edge, mirrored;
- the outermost line within a band, when all it holds is numbers of up to four digits, is a page
  number, however close the line before it (a slide's "1" in its corner, below its footer).

A first body line inside a band is followed by the next body line one pitch down, so it stays. The bands
are narrow because a title can sit near the top edge: on `mathfuncs.pdf` of the olmOCR-Bench sample the
title's top is at 68 of 999, so a band of 7% at the top would drop it; running headers there sit above
31. Bottom furniture reaches up to 930 (a page number in large type, `ff518b12...pdf`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from jocr.lines.references import AnchorRun, anchor_entries
from jocr.types import GRID_MAX as GRID

TOP_BAND = 50  # run tops at most this far down from the top edge (5% of the page's height)
BOTTOM_BAND = 70  # run tops at least GRID - this far down (the bottom 7%)
MIN_GAP_PITCHES = 2.0
JITTER = 2  # grid steps this small are runs of one line (sub- and superscripts, rounding)
PAGE_NUMBER = re.compile(r"[0-9]{1,4}")


def furniture_runs(anchors: Sequence[str]) -> list[frozenset[int]]:
    """For each window's anchor text of one page, the numbers of its runs that are page furniture."""
    entries = [anchor_entries(anchor) for anchor in anchors]
    levels = sorted({run.y for runs in entries for run in runs.values()})
    steps = [b - a for a, b in zip(levels, levels[1:], strict=False) if b - a > JITTER]
    if len(steps) < 2:  # too few lines to tell a body from its edges
        return [frozenset() for _ in anchors]
    gap = MIN_GAP_PITCHES * statistics.median(steps)
    top, bottom = _top_cut(levels, gap), _bottom_cut(levels, gap)
    everything = [run for runs in entries for run in runs.values()]
    first, last = levels[0], levels[-1]
    if top < first <= TOP_BAND and _page_numbers([r for r in everything if r.y <= first + JITTER]):
        top = first + JITTER
    if bottom > last >= GRID - BOTTOM_BAND and _page_numbers([r for r in everything if r.y >= last - JITTER]):
        bottom = last - JITTER
    return [
        frozenset(number for number, run in runs.items() if run.y <= top or run.y >= bottom)
        for runs in entries
    ]


def _page_numbers(runs: list[AnchorRun]) -> bool:
    return all(PAGE_NUMBER.fullmatch(run.text) for run in runs)


def _top_cut(levels: list[int], gap: float) -> int:
    """The lowest level of the top furniture, or -1 when there is none."""
    cut = -1
    for above, below in zip(levels, levels[1:], strict=False):
        if above > TOP_BAND:
            break
        if below - above >= gap:
            cut = above
    return cut


def _bottom_cut(levels: list[int], gap: float) -> int:
    """The highest level of the bottom furniture, or GRID + 1 when there is none."""
    cut = GRID + 1
    for below, above in zip(reversed(levels), list(reversed(levels))[1:], strict=False):
        if below < GRID - BOTTOM_BAND:
            break
        if below - above >= gap:
            cut = below
    return cut
