"""A crop -> the formula reader's strip (`jocr.documents.formula_strip`)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from jocr.documents.formula_strip import STRIP_MIN_WIDTH, formula_strip


def _crop(size, paper=230, ink=40) -> Image.Image:
    image = Image.new("L", size, paper)
    ImageDraw.Draw(image).rectangle((size[0] // 4, size[1] // 3, size[0] // 2, size[1] // 2), fill=ink)
    return image.convert("RGB")


def test_a_crop_becomes_a_strip_of_the_fixed_height_with_its_aspect_kept():
    strip = formula_strip(_crop((400, 100)))
    assert strip.shape == (64, 256) and strip.dtype == np.uint8


def test_paper_is_zero_and_the_darkest_ink_full_whatever_the_papers_tone():
    for paper, ink in ((255, 0), (200, 90)):
        strip = formula_strip(_crop((200, 50), paper, ink))
        assert np.median(strip) == 0 and strip.max() == 255


def test_a_wide_crop_is_narrowed_to_the_widest_strip_and_padded_below():
    strip = formula_strip(_crop((4000, 100)), max_width=1024)
    assert strip.shape == (64, 1024) and not strip[30:].any()  # 4000 x 100 -> 1024 x 26, then paper


def test_a_narrow_crop_gets_the_smallest_width_and_an_empty_one_is_refused():
    assert formula_strip(_crop((10, 100))).shape == (64, STRIP_MIN_WIDTH)
    with pytest.raises(ValueError):
        formula_strip(Image.new("RGB", (0, 5)))
