import numpy as np
import torch
from PIL import Image, ImageOps

from jocr.synth.glyphs import Glyph, GlyphMap
from jocr.train import IGNORE_INDEX
from jocr.train.data import Sample, collate
from jocr.train.glyph_loss import (
    CLASSES,
    EMPTY,
    UNKNOWN,
    GlyphHeads,
    glyph_loss,
    glyph_targets,
    view_mapping,
)
from jocr.train.vision_aux import CHAR_INDEX


def _glyph(ch, x0, x1, baseline, top=10):
    return Glyph(ch, (x0, baseline - top, x1, baseline), baseline)


def test_grid_cells_list_their_characters_line_by_line_then_left_to_right():
    # Two lines inside the first 32-px grid row: "ab" at baseline 12 and "c" at baseline 28 (cell 0),
    # then "d" in cell 1 and an unknown character in cell 2.
    gmap = GlyphMap(
        size=(96, 96),
        glyphs=[
            _glyph("c", 4, 12, 28),
            _glyph("b", 14, 22, 12),
            _glyph("a", 2, 12, 12),
            _glyph("d", 40, 50, 12),
            _glyph("Ж", 70, 80, 12),
        ],
    )
    fine, grid = glyph_targets(gmap, view=96, patch=8, cell=32, slots=4)
    assert fine.shape == (144,) and grid.shape == (9, 4)
    assert grid[0].tolist() == [CHAR_INDEX["a"], CHAR_INDEX["b"], CHAR_INDEX["c"], EMPTY]
    assert grid[1].tolist() == [CHAR_INDEX["d"], EMPTY, EMPTY, EMPTY]
    assert grid[2, 0] == UNKNOWN and (grid[3:] == EMPTY).all()
    fine_map = fine.reshape(12, 12)
    assert fine_map[0, 0] == CHAR_INDEX["a"]  # patch centre (4, 4) lies in a's box (2..12, 2..12)
    assert fine_map[0, 2] == CHAR_INDEX["b"] and fine_map[11, 11] == EMPTY


def test_overfull_cells_and_unread_regions_are_left_out():
    many = [_glyph(ch, 2 + 3 * i, 4 + 3 * i, 20) for i, ch in enumerate("abcdefghi")]
    gmap = GlyphMap(size=(64, 64), glyphs=many, unread=[(40.0, 40.0, 60.0, 60.0)])
    fine, grid = glyph_targets(gmap, view=64, patch=8, cell=32, slots=8)
    assert (grid[0] == IGNORE_INDEX).all()  # nine characters do not fit eight slots
    assert (grid[3] == IGNORE_INDEX).all() and (grid[1] == EMPTY).all()
    fine_map = fine.reshape(8, 8)
    assert (fine_map[5:8, 5:8] == IGNORE_INDEX).all() and fine_map[0, 7] == EMPTY


def test_view_mapping_matches_the_letterboxed_global_view():
    # A black dot on a wide page must land where ImageOps.pad puts it.
    page = Image.new("L", (300, 150), 255)
    page.paste(0, (200, 50, 210, 60))
    sx, sy, ox, oy = view_mapping(page.size, 96, "pad")
    view = np.asarray(ImageOps.pad(page, (96, 96), color=127))
    ys, xs = np.nonzero(view < 60)
    assert abs(xs.mean() - (205 * sx + ox)) < 1.0 and abs(ys.mean() - (55 * sy + oy)) < 1.0
    assert view_mapping((300, 150), 96, "resize") == (96 / 300, 96 / 150, 0.0, 0.0)


def test_glyph_loss_learns_from_informative_features_only():
    """The heads reach high accuracy when the features say which character is where; not from noise."""
    torch.manual_seed(0)
    fine_t = torch.randint(0, 20, (4, 16))
    grid_t = torch.full((4, 4, 2), EMPTY)
    grid_t[:, :, 0] = torch.randint(0, 20, (4, 4))
    results = {}
    for name in ("informative", "constant"):
        neck = torch.zeros(4, CLASSES, 4, 4)
        tokens = torch.zeros(4, 4, CLASSES)
        if name == "informative":
            neck.view(4, CLASSES, 16).scatter_(1, fine_t.unsqueeze(1), 1.0)
            tokens.scatter_(2, grid_t[:, :, :1], 1.0)
        heads = GlyphHeads(CLASSES, CLASSES, slots=2, hidden=64)
        opt = torch.optim.Adam(heads.parameters(), lr=0.02)
        for _ in range(150):
            loss, stats = glyph_loss(heads, neck, tokens, fine_t, grid_t)
            opt.zero_grad()
            loss.backward()
            opt.step()
        results[name] = stats
    assert results["informative"]["fine_acc"] > 0.95 and results["informative"]["grid_acc"] > 0.95
    assert results["constant"]["fine_acc"] < 0.3 and results["constant"]["grid_acc"] < 0.3


def test_collate_fills_missing_glyph_targets_with_ignore():
    from jocr.types import PageViews

    views = PageViews(global_view=torch.zeros(3, 8, 8), tiles=None, grid=(1, 1))
    with_targets = Sample(
        0,
        [1, 2],
        [IGNORE_INDEX, 2],
        views,
        "p",
        glyph_fine=torch.ones(4, dtype=torch.long),
        glyph_grid=torch.ones(1, 2, dtype=torch.long),
    )
    without = Sample(1, [1], [IGNORE_INDEX], views, "p")
    batch = collate([with_targets, without], pad_id=0)
    assert batch["glyph_fine"].shape == (2, 4) and batch["glyph_grid"].shape == (2, 1, 2)
    assert (batch["glyph_fine"][1] == IGNORE_INDEX).all() and (batch["glyph_fine"][0] == 1).all()
    assert "glyph_fine" not in collate([without], pad_id=0)
