"""Preprocessing against the reference rule (DeepSeek-OCR / vLLM process code) and transformers'
DeepSeek-OCR-2 PIL image processor (the same tiling rule, run here as an independent implementation)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

from jocr.config import VisionConfig, tiny_config
from jocr.documents.preprocess import (
    candidate_grids,
    choose_grid,
    image_tokens_for_size,
    is_blank_page,
    preprocess_image,
    to_tensor,
    views_token_count,
)
from jocr.types import count_image_tokens

# (width, height, min_tiles, max_tiles, expected grid) computed by running the reference rule
# (find_closest_aspect_ratio over calculate_aspect_ratios, tile size 640) on each size.
REFERENCE_GRIDS = [
    (641, 641, 2, 9, (2, 2)),
    (1024, 1024, 2, 9, (2, 2)),
    (1224, 1584, 2, 9, (2, 3)),
    (1584, 1224, 2, 9, (3, 2)),
    (800, 600, 2, 9, (3, 2)),
    (2000, 500, 2, 9, (4, 1)),
    (500, 2000, 2, 9, (1, 4)),
    (1280, 1280, 2, 9, (2, 2)),
    (1920, 1280, 2, 9, (3, 2)),
    (1700, 2200, 2, 9, (2, 3)),
    (3000, 1000, 2, 9, (3, 1)),
    (1000, 3000, 2, 9, (1, 3)),
    (700, 3000, 2, 9, (1, 4)),
    (2480, 3508, 2, 9, (2, 3)),
    (1275, 1650, 2, 9, (2, 3)),
    (660, 1000, 2, 9, (2, 3)),
    (1000, 660, 2, 9, (3, 2)),
    (5000, 700, 2, 9, (7, 1)),
    (1190, 1684, 2, 9, (2, 3)),
    (960, 640, 2, 9, (3, 2)),
    (5000, 700, 2, 6, (6, 1)),
    (1224, 1584, 2, 6, (2, 3)),
    (1024, 1024, 2, 6, (2, 2)),
    # Exact ties: (2, 1) vs (4, 2) at aspect 2, and (2, 2) vs (3, 3) at aspect 1. The later candidate wins
    # only when the image area exceeds half the tiles' area.
    (1280, 640, 2, 9, (2, 1)),
    (2560, 1280, 2, 9, (4, 2)),
    (2000, 2000, 2, 9, (3, 3)),
    (1300, 1300, 2, 9, (2, 2)),
]


@pytest.mark.parametrize("width,height,lo,hi,grid", REFERENCE_GRIDS)
def test_grid_matches_reference_table(width, height, lo, hi, grid):
    assert choose_grid(width, height, lo, hi, 640) == grid


def test_candidate_grids_respect_bounds_and_order():
    grids = candidate_grids(2, 9)
    counts = [c * r for c, r in grids]
    assert counts == sorted(counts)
    assert all(2 <= n <= 9 for n in counts)
    assert len(grids) == 22


def test_grid_agrees_with_transformers_over_many_sizes():
    """transformers orders same-count candidates differently; agreement on a sweep of page sizes shows the
    shared rule (closest aspect, area tie rule) is implemented identically."""
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import get_optimal_tiled_canvas

    rng = np.random.default_rng(0)
    for _ in range(400):
        w, h = (int(v) for v in rng.integers(641, 6000, size=2))
        assert choose_grid(w, h, 2, 9, 640) == get_optimal_tiled_canvas((h, w), (640, 640), 2, 9), (w, h)


def _random_page(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8))


def test_tiles_match_transformers_pil_processor():
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import (
        DeepseekOcr2ImageProcessorPil,
    )

    image = _random_page(900, 1300)
    views = preprocess_image(image, VisionConfig())
    assert views.grid == (2, 3)
    assert views.tiles.shape == (6, 3, 640, 640)
    ref = DeepseekOcr2ImageProcessorPil(tile_size=640, min_patches=2, max_patches=9)
    out = ref(image, return_tensors="pt")
    assert out["num_local_patches"].tolist() == [6]
    torch.testing.assert_close(views.tiles, out["pixel_values_local"].float(), atol=1e-5, rtol=0)


def test_global_view_is_letterboxed_grey():
    image = Image.new("RGB", (2000, 1000), (0, 0, 0))
    views = preprocess_image(image, VisionConfig())
    g = views.global_view
    assert g.shape == (3, 1024, 1024)
    grey = 127 / 255 * 2 - 1
    # Image scaled to 1024x512 and centred: rows 0..255 and 768..1023 are padding.
    assert torch.allclose(g[:, :250], torch.full_like(g[:, :250], grey), atol=1e-6)
    assert torch.allclose(g[:, 780:], torch.full_like(g[:, 780:], grey), atol=1e-6)
    assert torch.allclose(g[:, 300:700], torch.full_like(g[:, 300:700], -1.0), atol=1e-6)
    expected = to_tensor(ImageOps.pad(image, (1024, 1024), color=(127, 127, 127)))
    assert torch.equal(g, expected)


def test_normalisation_matches_totensor_formula():
    image = _random_page(17, 9, seed=3)
    x = to_tensor(image)
    ref = (torch.from_numpy(np.array(image)).permute(2, 0, 1).float() / 255 - 0.5) / 0.5
    assert torch.equal(x, ref)
    assert x.dtype == torch.float32


def test_small_image_is_not_tiled_and_token_counts_agree():
    vision = VisionConfig()
    small = _random_page(640, 400)
    views = preprocess_image(small, vision)
    assert views.tiles is None and views.grid == (1, 1)
    assert views_token_count(views, vision) == 273  # 16 rows of 17 + view separator
    big = _random_page(1224, 1584)
    views = preprocess_image(big, vision)
    n = views_token_count(views, vision)
    assert n == 273 + (3 * 10) * (2 * 10 + 1)
    assert image_tokens_for_size(1224, 1584, vision) == n


def test_single_view_modes():
    image = _random_page(300, 200)
    tiny_mode = VisionConfig(base_size=512, tile_size=512, crop_mode=False, single_view_fit="resize")
    v = preprocess_image(image, tiny_mode)
    assert v.global_view.shape == (3, 512, 512) and v.tiles is None
    assert torch.equal(v.global_view, to_tensor(image.resize((512, 512))))
    base_mode = VisionConfig(base_size=1024, tile_size=1024, crop_mode=False, single_view_fit="pad")
    v = preprocess_image(_random_page(3000, 2000), base_mode)
    assert v.tiles is None and v.grid == (1, 1)
    assert views_token_count(v, base_mode) == 273
    with pytest.raises(ValueError):
        preprocess_image(image, VisionConfig(crop_mode=False, single_view_fit="stretch"))


def test_tiny_preset_counts_match_config():
    cfg = tiny_config()
    v = cfg.vision
    views = preprocess_image(_random_page(200, 130), v)
    assert views.global_view.shape == (3, v.base_size, v.base_size)
    assert views.tiles.shape[1:] == (3, v.tile_size, v.tile_size)
    assert views_token_count(views, v) == cfg.image_token_count(views.grid, tiled=True)
    assert views_token_count(views, v) == count_image_tokens(
        views.grid, True, v.base_size, v.tile_size, v.patch_size, v.compress_factor
    )


def test_modes_are_converted_to_rgb():
    vision = tiny_config().vision
    for mode in ("L", "RGBA", "P", "1", "CMYK"):
        views = preprocess_image(Image.new(mode, (50, 40)), vision)
        assert views.global_view.shape[0] == 3
    rgba = Image.new("RGBA", (10, 10), (0, 0, 0, 0))
    views = preprocess_image(rgba, VisionConfig(base_size=16, tile_size=16, crop_mode=False))
    assert torch.allclose(views.global_view, torch.ones_like(views.global_view))  # transparent -> white


def _page(size=(1224, 1584), level=255, seed=0, speckle=0) -> Image.Image:
    """A page of one grey level with optional Gaussian scanner noise (std `speckle`)."""
    rng = np.random.default_rng(seed)
    pixels = np.full((size[1], size[0]), float(level)) + rng.normal(0.0, speckle, (size[1], size[0]))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "L")


@pytest.mark.parametrize("level,speckle", [(255, 0), (236, 12), (30, 0), (128, 20)])
def test_uniform_pages_are_blank_even_with_scanner_noise(level, speckle):
    assert is_blank_page(_page(level=level, speckle=speckle).convert("RGB"))
    assert is_blank_page(_page(level=level).convert("RGBA"))


def test_a_lone_page_number_or_a_faint_line_is_not_blank():
    from PIL import ImageDraw, ImageFont

    number = _page(level=240, speckle=8)
    ImageDraw.Draw(number).text((600, 1540), "7", fill=60, font=ImageFont.load_default(14))
    assert not is_blank_page(number)
    rule = _page()
    ImageDraw.Draw(rule).line((100, 800, 1100, 800), fill=170, width=2)  # a light grey rule
    assert not is_blank_page(rule)
    tiny = _page(size=(40, 30))
    tiny.putpixel((5, 5), 0)
    assert not is_blank_page(tiny)
