"""A formula crop -> the formula reader's input strip (docs/elements.md, "The formula reader").

The reader sees a formula as one grey strip of fixed height: the crop (with whatever margin its region
had) in grey, scaled to `height` pixels with its aspect kept, narrowed to `max_width` if wider (then the
height shrinks and the strip is padded below), ink bright on a dark ground so that padding reads as
paper, its contrast stretched so the paper's tone (the median, a formula being mostly paper) is 0 and the
darkest ink 255: scans, photos and clean renders reach the reader alike. Training crops and page crops go
through this one function.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

STRIP_HEIGHT = 64
STRIP_MAX_WIDTH = 1024
STRIP_MIN_WIDTH = 16  # narrower strips are padded to this (a one-glyph formula still gets a few columns)


def formula_strip(
    image: Image.Image, height: int = STRIP_HEIGHT, max_width: int = STRIP_MAX_WIDTH
) -> np.ndarray:
    """(height, W) uint8 ink map of `image` (0 paper, 255 ink), scaled as above, W <= `max_width`, W >= 16.
    Raises ValueError for an image with no pixels."""
    width0, height0 = image.size
    if width0 < 1 or height0 < 1:
        raise ValueError("an empty image holds no formula")
    scale = height / height0
    if width0 * scale > max_width:
        scale = max_width / width0
    size = (max(1, round(width0 * scale)), max(1, min(height, round(height0 * scale))))
    grey = image.convert("L").resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    ink = 255.0 - np.asarray(grey, dtype=np.float32)  # (h, w)
    paper, darkest = np.percentile(ink, 50), ink.max()
    ink = np.clip((ink - paper) * (255.0 / max(darkest - paper, 1.0)), 0, 255).astype(np.uint8)
    out = np.zeros((height, max(STRIP_MIN_WIDTH, size[0])), dtype=np.uint8)
    out[: size[1], : size[0]] = ink
    return out
