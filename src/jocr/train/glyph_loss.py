"""Glyph reading loss: every cell of the encoder's feature maps names the characters printed in it.

Why: the sequence losses (answer cross-entropy, and the raster CTC of `vision_aux`) tell the encoder *what* a
page says but leave it to find *where*; from scratch on two CPU cores that search is what takes longest (the
raster CTC fell from 3.9 to 2.5 nats/char in 7,000 steps x 16 pages and still spelled single letters). The
synthetic renderer knows where it printed each character (`jocr.synth.glyphs`), so the alignment can be given
instead of searched for, as in the character-region supervision of scene-text detectors (Baek et al.,
CRAFT, 2019) and in fully convolutional character classifiers. Two heads, both kept by the trainer only:

- fine: each patch of the SAM neck output (patch_size pixels, 48x48 for the CPU model) is classified as the
  character whose box holds its centre, or as paper;
- grid: each token of the projector output (the 12x12 grid the decoder reads, 32 pixels a side) lists, in
  `slots` ordered slots, the characters whose centres fall in its cell, in reading order (line by line, left
  to right), then EMPTY. This is exactly what the decoder must be able to copy from each image token.

Pixels under regions printed without recorded characters (formulas) are left out (IGNORE_INDEX), as are grid
cells with more characters than slots, and degraded pages (their geometry no longer matches the boxes).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from jocr.synth.glyphs import GlyphMap
from jocr.train import IGNORE_INDEX
from jocr.train.vision_aux import ALPHABET, CHAR_INDEX

UNKNOWN = len(ALPHABET)
EMPTY = len(ALPHABET) + 1
CLASSES = len(ALPHABET) + 2
DEFAULT_SLOTS = 8


def view_mapping(size: tuple[int, int], view: int, fit: str) -> tuple[float, float, float, float]:
    """(scale_x, scale_y, offset_x, offset_y) from page pixels to the global view's pixels.

    fit "pad" is `ImageOps.pad` (aspect kept, centred; jocr.documents.preprocess.global_view), "resize" a
    plain resize to a square.
    """
    w, h = size
    if fit == "resize":
        return view / w, view / h, 0.0, 0.0
    scale = min(view / w, view / h)
    new_w, new_h = round(w * scale), round(h * scale)
    return new_w / w, new_h / h, float((view - new_w) // 2), float((view - new_h) // 2)


def _span(centres: np.ndarray, lo: float, hi: float) -> slice | None:
    """The run of cells whose centres lie in [lo, hi), or None."""
    hit = np.nonzero((centres >= lo) & (centres < hi))[0]
    return slice(hit[0], hit[-1] + 1) if hit.size else None


def glyph_targets(
    gmap: GlyphMap, view: int, patch: int, cell: int, slots: int = DEFAULT_SLOTS, fit: str = "pad"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Targets of one page: fine (F*F,) and grid (G*G, slots) class ids, F = view // patch, G = view // cell.

    Classes: ALPHABET index, UNKNOWN, EMPTY (paper, or an unused slot), IGNORE_INDEX (left out).
    """
    sx, sy, ox, oy = view_mapping(gmap.size, view, fit)

    def to_view(box) -> tuple[float, float, float, float]:
        return box[0] * sx + ox, box[1] * sy + oy, box[2] * sx + ox, box[3] * sy + oy

    side_f, side_g = view // patch, view // cell
    fine = np.full((side_f, side_f), EMPTY, dtype=np.int64)
    grid = np.full((side_g, side_g, slots), EMPTY, dtype=np.int64)
    centres_f = (np.arange(side_f) + 0.5) * patch  # (F,) view pixels
    # A printed line is assigned to one grid row, at the middle of its lower-case band (its baseline minus a
    # third of its median glyph height), so that ascenders and descenders do not scatter it over two rows.
    heights: dict[float, list[float]] = {}
    for g in gmap.glyphs:
        heights.setdefault(g.baseline, []).append(g.box[3] - g.box[1])
    line_mid = {b: b - float(np.median(h)) / 3 for b, h in heights.items()}
    members: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for g in gmap.glyphs:
        x0, y0, x1, y1 = to_view(g.box)
        cls = CHAR_INDEX.get(g.char, UNKNOWN)
        cols, rows = _span(centres_f, x0, x1), _span(centres_f, y0, y1)
        if cols and rows:
            fine[rows, cols] = cls
        cx, cy = (x0 + x1) / 2, line_mid[g.baseline] * sy + oy
        r, c = int(cy // cell), int(cx // cell)
        if 0 <= r < side_g and 0 <= c < side_g:
            members.setdefault((r, c), []).append((g.baseline * sy + oy, x0, cls))
    for (r, c), chars in members.items():
        if len(chars) > slots:
            grid[r, c] = IGNORE_INDEX
            continue
        chars.sort(key=lambda t: (round(t[0]), t[1]))  # line by line, then left to right
        grid[r, c, : len(chars)] = [cls for _, _, cls in chars]
    for box in gmap.unread:
        x0, y0, x1, y1 = to_view(box)
        cols = _span(centres_f, x0 - patch / 2, x1 + patch / 2)
        rows = _span(centres_f, y0 - patch / 2, y1 + patch / 2)
        if cols and rows:
            fine[rows, cols] = IGNORE_INDEX
        c0, c1 = max(0, int(x0 // cell)), min(side_g - 1, int(x1 // cell))
        r0, r1 = max(0, int(y0 // cell)), min(side_g - 1, int(y1 // cell))
        grid[r0 : r1 + 1, c0 : c1 + 1] = IGNORE_INDEX
    return torch.from_numpy(fine.reshape(-1)), torch.from_numpy(grid.reshape(side_g * side_g, slots))


def ignored_targets(view: int, patch: int, cell: int, slots: int = DEFAULT_SLOTS):
    """Targets of a page without a glyph map: everything IGNORE_INDEX."""
    side_f, side_g = view // patch, view // cell
    return (
        torch.full((side_f * side_f,), IGNORE_INDEX, dtype=torch.long),
        torch.full((side_g * side_g, slots), IGNORE_INDEX, dtype=torch.long),
    )


class GlyphHeads(nn.Module):
    """fine: a 1x1-conv MLP on the SAM neck map; grid: a linear slot classifier on the projector tokens."""

    def __init__(self, neck_channels: int, dim: int, slots: int = DEFAULT_SLOTS, hidden: int = 128) -> None:
        super().__init__()
        self.slots = slots
        self.fine = nn.Sequential(
            nn.Conv2d(neck_channels, hidden, 1), nn.GELU(), nn.Conv2d(hidden, CLASSES, 1)
        )
        self.norm = nn.LayerNorm(dim)
        self.grid = nn.Linear(dim, slots * CLASSES)

    def forward(self, neck: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # neck: (B, C, F, F) -> (B, F*F, CLASSES); tokens: (B, G*G, D) -> (B, G*G, slots, CLASSES)
        fine = self.fine(neck).flatten(2).transpose(1, 2)
        b, n, _ = tokens.shape
        grid = self.grid(self.norm(tokens)).reshape(b, n, self.slots, CLASSES)
        return fine, grid


def glyph_loss(
    heads: GlyphHeads,
    neck: torch.Tensor,
    tokens: torch.Tensor,
    fine_targets: torch.Tensor,
    grid_targets: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Mean of the fine and grid cross-entropies, and the accuracies on cells that hold a character.

    neck: (B, C, F, F); tokens: (B, G*G, D); fine_targets: (B, F*F); grid_targets: (B, G*G, slots).
    """
    fine_logits, grid_logits = heads(neck, tokens)
    fine_logits, grid_logits = fine_logits.float(), grid_logits.float()
    losses, stats = [], {}
    for name, logits, target in (("fine", fine_logits, fine_targets), ("grid", grid_logits, grid_targets)):
        flat_logits, flat_target = logits.reshape(-1, CLASSES), target.reshape(-1)
        if bool((flat_target != IGNORE_INDEX).any()):
            losses.append(F.cross_entropy(flat_logits, flat_target, ignore_index=IGNORE_INDEX))
        chars = (flat_target != IGNORE_INDEX) & (flat_target != EMPTY)
        hits = (flat_logits.detach().argmax(-1) == flat_target) & chars
        stats[f"{name}_acc"] = float(hits.sum()) / max(1, int(chars.sum()))
    if not losses:
        return neck.sum() * 0.0 + tokens.sum() * 0.0, stats
    return torch.stack(losses).mean(), stats
