"""Plain data passed between layers that must not import each other (documents -> model, engine).

Only torch and dataclasses here: this module sits at the bottom of the dependency order with config.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# The 0-999 grid of DeepSeek-OCR's grounding boxes (run_dpsk_ocr_pdf.py maps x to pixels as
# int(x / 999 * width)); anchors write their runs' positions on the same grid.
GRID_MAX = 999


@dataclass
class PageViews:
    """One image prepared for the vision encoder, as DeepSeek-OCR's crop mode lays it out.

    global_view: (3, base, base) float, normalised with mean 0.5 / std 0.5 (padded with grey 127).
    tiles: (n, 3, tile, tile) float in row-major order, or None when the image is not tiled.
    grid: (cols, rows) of the tile grid; (1, 1) when there are no tiles.
    """

    global_view: torch.Tensor
    tiles: torch.Tensor | None
    grid: tuple[int, int]

    @property
    def num_tiles(self) -> int:
        return 0 if self.tiles is None else int(self.tiles.shape[0])


def view_side_tokens(view_size: int, patch_size: int, compress_factor: int) -> int:
    """Tokens along one side of a view: pixels / (patch size * compressor stride product)."""
    return view_size // (patch_size * compress_factor)


def count_image_tokens(
    grid: tuple[int, int],
    tiled: bool,
    base_size: int,
    tile_size: int,
    patch_size: int,
    compress_factor: int,
) -> int:
    """Number of `<image>` placeholders for one image (DeepSeek-OCR's sequence layout, docs/architecture.md).

    Global view: q rows of q + 1 (image_newline after every row) plus one view separator.
    Tiles (when tiled): (rows * qt) rows of (cols * qt + 1).
    """
    q = view_side_tokens(base_size, patch_size, compress_factor)
    total = q * (q + 1) + 1
    if tiled:
        cols, rows = grid
        qt = view_side_tokens(tile_size, patch_size, compress_factor)
        total += (rows * qt) * (cols * qt + 1)
    return total
