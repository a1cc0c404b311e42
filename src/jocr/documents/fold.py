"""A wide crop folded into rows, so that it fills the model's square view (the formula task's input).

The image model sees one 384x384 view, 12x12 feature tokens; a display formula is 3 to 15 times wider than
tall, so letterboxed it covers one or two rows of tokens and its glyphs shrink to a few pixels. Folded, the
formula is cut at the columns with the least ink near n equal parts, and the parts are stacked top to bottom
with a gap between them, n chosen so the result is about square: the view keeps about sqrt(width / height)
times the resolution. Training (`jocr.train.data`, formula crops) and reading (`jocr parse --task formula`,
`jocr.pipeline.formulas`) fold the same way, so the model learns to read the rows in order.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

MAX_ROWS = 6
GAP_SHARE = 0.35  # the gap between rows, as a share of the crop's height
CUT_REACH = 0.2  # a cut is sought this share of a part's width either side of the equal cut


def fold_rows(width: int, height: int) -> int:
    """How many rows a width x height crop is folded into (1: not folded)."""
    if width <= 0 or height <= 0:
        return 1
    return max(1, min(MAX_ROWS, round(math.sqrt(width / (height * (1 + GAP_SHARE))))))


def fold_wide(image: Image.Image) -> Image.Image:
    """`image` (RGB) folded into `fold_rows` rows on its own paper colour; unchanged when one row."""
    width, height = image.size
    rows = fold_rows(width, height)
    if rows == 1:
        return image
    rgb = np.asarray(image.convert("RGB"))  # (H, W, 3)
    grey = rgb.astype(np.float32).mean(axis=2)  # (H, W)
    paper = tuple(int(v) for v in np.median(np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]]), axis=0))
    ink = np.abs(grey - grey.max()).sum(axis=0)  # (W,) ink per column
    cuts = [0]
    part = width / rows
    for k in range(1, rows):
        ideal = k * part
        lo = max(cuts[-1] + 1, int(ideal - CUT_REACH * part))
        hi = min(width - 1, int(ideal + CUT_REACH * part) + 1)
        window = ink[lo:hi]
        # least ink, nearest the equal cut among equals
        best = min(range(len(window)), key=lambda i: (window[i], abs(lo + i - ideal)))
        cuts.append(lo + best)
    cuts.append(width)
    gap = round(GAP_SHARE * height)
    canvas = Image.new(
        "RGB", (max(b - a for a, b in zip(cuts, cuts[1:])), rows * height + (rows - 1) * gap), paper
    )
    for k, (a, b) in enumerate(zip(cuts, cuts[1:])):
        canvas.paste(image.crop((a, 0, b, height)), (0, k * (height + gap)))
    return canvas
