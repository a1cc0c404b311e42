"""Page image -> `PageViews` (global view + tiles), exactly as DeepSeek-OCR prepares images.

Rules (DeepSeek-OCR `process/image_process.py` and vLLM's DeepSeek-OCR processor):
- Crop mode: an image wider or taller than `tile_size` is tiled. Candidate grids (cols, rows) with
  min_tiles <= cols*rows <= max_tiles are ordered by tile count; the grid with the closest aspect ratio wins,
  and on an exact tie a later candidate replaces the current one if the image area exceeds
  0.5 * tile_size^2 * cols * rows. The image is resized (aspect not kept) to (tile*cols, tile*rows) with PIL's
  default filter (bicubic) and cut into tiles left to right, top to bottom.
- The global view is the whole image letterboxed (aspect kept, bicubic, centred) onto a base_size square of
  grey (127, 127, 127), i.e. `PIL.ImageOps.pad` with the normalisation mean as colour.
- Single-view modes (crop_mode off): "resize" squashes the image to base_size (tiny/small modes, where the
  reference resizes when the view is <= 640), "pad" letterboxes it (base/large modes).
- Pixels: x / 255, then (x - 0.5) / 0.5, in float32 (torchvision ToTensor + Normalize, computed the same way).

Only PIL, numpy and torch here (no torchvision) so the vLLM integration can reuse this module.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from PIL import Image, ImageOps

from jocr.types import PageViews, count_image_tokens

MEAN = (0.5, 0.5, 0.5)
STD = (0.5, 0.5, 0.5)
# int(0.5 * 255) as the reference computes its padding colour.
PAD_COLOR = tuple(int(m * 255) for m in MEAN)


@lru_cache(maxsize=64)
def candidate_grids(min_tiles: int, max_tiles: int) -> tuple[tuple[int, int], ...]:
    """Grids (cols, rows) with min_tiles <= cols*rows <= max_tiles, ordered by tile count.

    The order among grids with the same tile count decides some ties; it is that of a Python set filled
    n -> cols -> rows and then stably sorted by count, which is how the reference enumerates them.
    """
    grids = {
        (i, j)
        for n in range(min_tiles, max_tiles + 1)
        for i in range(1, n + 1)
        for j in range(1, n + 1)
        if min_tiles <= i * j <= max_tiles
    }
    return tuple(sorted(grids, key=lambda g: g[0] * g[1]))


def choose_grid(width: int, height: int, min_tiles: int, max_tiles: int, tile_size: int) -> tuple[int, int]:
    """The tile grid (cols, rows) for an image of `width` x `height` pixels (the reference tie rule)."""
    aspect = width / height
    area = width * height
    best_diff = float("inf")
    best = (1, 1)
    for cols, rows in candidate_grids(min_tiles, max_tiles):
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best_diff = diff
            best = (cols, rows)
        elif diff == best_diff and area > 0.5 * tile_size * tile_size * cols * rows:
            best = (cols, rows)
    return best


def needs_tiles(width: int, height: int, vision) -> bool:
    """Crop mode tiles an image only when a side exceeds the tile size."""
    return bool(vision.crop_mode) and (width > vision.tile_size or height > vision.tile_size)


def page_grid(width: int, height: int, vision) -> tuple[tuple[int, int], bool]:
    """(grid, tiled) for an image size under `vision` (a `jocr.config.VisionConfig`)."""
    if not needs_tiles(width, height, vision):
        return (1, 1), False
    grid = choose_grid(width, height, vision.min_tiles, vision.max_tiles, vision.tile_size)
    # The reference only stores tiles when the grid is larger than 1x1 (min_tiles=1 can choose 1x1).
    return grid, grid != (1, 1)


def image_tokens_for_size(width: int, height: int, vision) -> int:
    """`<image>` placeholders an image of this size needs, without preprocessing it."""
    grid, tiled = page_grid(width, height, vision)
    return count_image_tokens(
        grid, tiled, vision.base_size, vision.tile_size, vision.patch_size, vision.compress_factor
    )


# x / 255, then (x - 0.5) / 0.5, evaluated once per byte value with the same float32 operations as
# torchvision's ToTensor + Normalize; indexing this table gives identical values at a fraction of the cost.
_LUT = ((torch.arange(256, dtype=torch.float32) / 255.0 - MEAN[0]) / STD[0]).numpy()


def _normalised(array: np.ndarray) -> torch.Tensor:
    """(H, W, 3) uint8 -> (3, H, W) float32, normalised."""
    planar = np.ascontiguousarray(array.transpose(2, 0, 1))  # (3, H, W) uint8: a cheap byte copy
    return torch.from_numpy(_LUT[planar])


def to_tensor(image: Image.Image) -> torch.Tensor:
    """RGB PIL image -> (3, H, W) float32 normalised with mean 0.5 / std 0.5."""
    return _normalised(np.asarray(image, dtype=np.uint8))


def to_rgb(image: Image.Image) -> Image.Image:
    """RGB with transparency composited over white (as the page would print); 16-bit grey scaled to 8 bits."""
    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        return image.point(lambda v: v / 256).convert("L").convert("RGB")
    return image.convert("RGB")


# A page counts as blank when, averaged over cells of about 1/200 of its longest side (so that scanner
# speckle and paper grain average out while a line of text or a lone page number does not), no cell differs
# from the page's median shade by this many grey levels or more.
BLANK_CELLS = 200
BLANK_CONTRAST = 24


def is_blank_page(image: Image.Image, contrast: int = BLANK_CONTRAST) -> bool:
    """True when the page carries no ink: a uniform page of any shade (white, grey scan, dark frame)."""
    # A grey scan is already what is measured; other modes go through to_rgb (transparency over white).
    grey = image if image.mode == "L" else to_rgb(image).convert("L")
    scale = max(1, max(grey.size) // BLANK_CELLS)
    if scale > 1:
        grey = grey.reduce(scale)  # box average over scale x scale cells
    cells = np.asarray(grey, dtype=np.int16)
    return int(np.abs(cells - int(np.median(cells))).max()) < contrast


def global_view(image: Image.Image, size: int) -> Image.Image:
    """Letterbox onto a grey square, aspect kept (ImageOps.pad: bicubic, centred)."""
    return ImageOps.pad(image, (size, size), color=PAD_COLOR)


def tile_tensor(image: Image.Image, grid: tuple[int, int], tile_size: int) -> torch.Tensor:
    """The image resized to (tile*cols, tile*rows), aspect not kept, cut row-major into tiles: one normalised
    tensor (cols * rows, 3, tile, tile).

    The tiles are cut by reordering bytes before normalising, so the float tensor is written only once."""
    cols, rows = grid
    t = tile_size
    resized = np.asarray(image.resize((t * cols, t * rows)), dtype=np.uint8)  # (rows * t, cols * t, 3)
    blocks = resized.reshape(rows, t, cols, t, 3).transpose(0, 2, 4, 1, 3)  # (rows, cols, 3, t, t)
    x = torch.from_numpy(_LUT[np.ascontiguousarray(blocks)])
    return x.reshape(rows * cols, 3, t, t)


def preprocess_image(image: Image.Image, vision) -> PageViews:
    """One page image -> PageViews under `vision` (a `jocr.config.VisionConfig`)."""
    image = to_rgb(image)
    width, height = image.size
    if width < 1 or height < 1:
        raise ValueError(f"empty image ({width}x{height})")
    if vision.crop_mode:
        grid, tiled = page_grid(width, height, vision)
        tiles = None
        if tiled:
            tiles = tile_tensor(image, grid, vision.tile_size)  # (cols * rows, 3, tile, tile)
        view = global_view(image, vision.base_size)
        return PageViews(global_view=to_tensor(view), tiles=tiles, grid=grid)
    fit = getattr(vision, "single_view_fit", "pad")
    if fit == "resize":
        view = image.resize((vision.base_size, vision.base_size))
    elif fit == "pad":
        view = global_view(image, vision.base_size)
    else:
        raise ValueError(f"unknown single_view_fit {fit!r} (expected 'pad' or 'resize')")
    return PageViews(global_view=to_tensor(view), tiles=None, grid=(1, 1))


def views_token_count(views: PageViews, vision) -> int:
    """`<image>` placeholders for prepared views (the model checks this count against the prompt)."""
    return count_image_tokens(
        views.grid,
        views.tiles is not None,
        vision.base_size,
        vision.tile_size,
        vision.patch_size,
        vision.compress_factor,
    )
