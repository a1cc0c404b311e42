"""A wide crop folded into rows (`jocr.documents.fold`): about square, every column of ink kept in order,
cut where there is no ink, and a crop that is not wide left as it is."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from jocr.documents.fold import GAP_SHARE, fold_rows, fold_wide


def _strip(width: int, height: int, marks: list[int]) -> Image.Image:
    """White strip with a black bar 6 px wide at each x in `marks`."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for x in marks:
        draw.rectangle((x, 10, x + 5, height - 10), fill="black")
    return image


def test_rows_make_the_fold_about_square():
    assert fold_rows(100, 100) == 1 and fold_rows(150, 60) == 1
    assert fold_rows(900, 100) == round((9 / (1 + GAP_SHARE)) ** 0.5)
    assert fold_rows(100_000, 10) == 6  # at most MAX_ROWS
    assert fold_rows(0, 10) == 1


def test_a_wide_strip_is_folded_at_gaps_and_keeps_its_ink_in_order():
    marks = list(range(20, 1180, 40))  # 29 bars, gaps of 34 px between them
    image = _strip(1200, 100, marks)
    folded = fold_wide(image)
    rows = fold_rows(1200, 100)
    assert rows == 3
    width, height = folded.size
    assert height == 3 * 100 + 2 * round(GAP_SHARE * 100) and width < 1200 / 2
    grey = np.asarray(folded.convert("L"))
    bars = 0
    for k in range(rows):
        band = grey[k * (100 + round(GAP_SHARE * 100)) : k * (100 + round(GAP_SHARE * 100)) + 100]
        dark = (band < 128).any(axis=0)
        runs = np.flatnonzero(np.diff(np.concatenate([[0], dark.astype(int), [0]])) == 1)
        bars += len(runs)
        assert all(dark[r : r + 6].all() for r in runs)  # whole bars: no cut went through one
    assert bars == len(marks)


def test_a_crop_that_is_not_wide_is_left_as_it_is():
    image = _strip(200, 100, [50, 120])
    assert fold_wide(image) is image
