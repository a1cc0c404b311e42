"""Auxiliary bag-of-tokens loss on the vision features, for training a reader from scratch.

Why: trained from scratch with image -> Markdown cross-entropy alone, the decoder first learns the text
prior; while it cannot read yet, the variation of the image tokens only adds noise to its predictions, and the
cheapest way to remove it is to make the encoder's output constant. Measured on the first CPU run: after 740
steps the projected image embeddings had std 176 but differed between two pages by 0.007 on average, and
swapping images between batch rows left the loss unchanged to three decimals, i.e. the encoder had collapsed
and the model could not start reading. This loss asks the mean-pooled projected features of a page to predict
which tokens its Markdown contains (a softmax over the vocabulary against the normalised bag of target
tokens), so a constant encoder is never a good solution and the image tokens carry content from the first
steps. The heads are part of the trainer only: saved with the trainer state, never with the model (a finished
stage also leaves its CTC head beside its model directory, for the next stage to start from).

The bag of tokens says *what* a page holds but not *where*; the reading loss below adds the where. The
global view's token grid, read in raster order (row by row, left to right), must spell the page's visible
characters under connectionist temporal classification (Graves et al., 2006). Each grid token emits `slots`
CTC steps, because a 32-pixel cell of the small model holds two to three characters; the alphabet is
characters, not the decoder's BPE ids, because glyphs recur in every page while words are rare, and a word
token would have to be emitted by one cell although it spans several. Text lines of the small model's pages
run along grid rows and tables are serialised row-major, so raster order is close to reading order. Markup
that prints nothing (HTML tags, Markdown markers) and LaTeX (whose source does not spell its glyphs) is left
out of the target. This is the joint CTC-attention recipe of speech recognition (Watanabe et al., 2017), where
the CTC branch lets the attention decoder find its alignment in a fraction of the steps. Measured on the
CPU model: a BPE-id version of this loss (one step per cell) stayed at the unigram level for 700 steps.
"""

from __future__ import annotations

import re

import torch
import torch.nn.functional as F
from torch import nn

from jocr.train import IGNORE_INDEX


class BagOfTokensHead(nn.Module):
    def __init__(self, dim: int, vocab_size: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, vocab_size)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        # feats: (B, N, D) projected image features -> (B, V) logits
        return self.proj(self.norm(feats.mean(dim=1)))


class OutputTap:
    """Collects a module's outputs during one forward pass (a forward hook), e.g. model.model.projector."""

    def __init__(self, module: nn.Module) -> None:
        self.outputs: list[torch.Tensor] = []
        self._handle = module.register_forward_hook(self._hook)

    def _hook(self, module, inputs, output) -> None:
        self.outputs.append(output)

    def take(self) -> torch.Tensor | None:
        """The outputs of the last forward concatenated on dim 0 (one row per view), or None."""
        outs, self.outputs = self.outputs, []
        return torch.cat(outs, dim=0) if outs else None

    def close(self) -> None:
        self._handle.remove()


# Visible characters the reading loss spells; anything else maps to UNKNOWN (index len(ALPHABET)).
ALPHABET = " " + "".join(chr(c) for c in range(33, 127)) + "£€°±×µ·–—’“”"
CHAR_INDEX = {ch: i for i, ch in enumerate(ALPHABET)}
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]", re.S)
_INLINE_MATH = re.compile(r"\$[^$\n]*?[\\^_{}=][^$\n]*?\$|\\\(.*?\\\)")
_TAG = re.compile(r"<[^>]+>")
_LINE_MARKER = re.compile(r"^\s*(?:#+\s+|[-*+]\s+)", re.M)


def visible_text(markdown: str) -> str:
    """The characters a page prints: tags, Markdown markers and LaTeX removed, whitespace collapsed."""
    text = _DISPLAY_MATH.sub(" ", markdown)
    text = _INLINE_MATH.sub(" ", text)
    text = _TAG.sub(" ", text)
    text = _LINE_MARKER.sub("", text).replace("**", "")
    return " ".join(text.split())


def char_targets(text: str) -> torch.Tensor:
    """(L,) class ids of `text` in ALPHABET (UNKNOWN = len(ALPHABET)); the blank is len(ALPHABET) + 1."""
    unknown = len(ALPHABET)
    return torch.tensor([CHAR_INDEX.get(ch, unknown) for ch in text], dtype=torch.long)


class GridCTCHead(nn.Module):
    """`slots` CTC steps per grid token over ALPHABET + UNKNOWN + blank (the last class)."""

    def __init__(self, dim: int, slots: int = 4) -> None:
        super().__init__()
        self.slots = slots
        self.classes = len(ALPHABET) + 2
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, slots * self.classes)

    @property
    def blank(self) -> int:
        return self.classes - 1

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        # feats: (B, N, D) grid tokens in raster order -> (B, N * slots, classes) logits
        b, n, _ = feats.shape
        return self.proj(self.norm(feats)).reshape(b, n * self.slots, self.classes)


def grid_ctc_loss(head: GridCTCHead, feats: torch.Tensor, texts: list[str]) -> torch.Tensor:
    """Mean per-character CTC loss of spelling each row's visible text off its raster-ordered grid.

    feats: (B, N, D), one view per row; texts: B visible texts (`visible_text`). Empty texts, and texts longer
    than the grid can spell, contribute zero.
    """
    targets = [char_targets(t) for t in texts]
    lengths = torch.tensor([len(t) for t in targets], dtype=torch.long)  # (B,)
    has = lengths > 0
    if not bool(has.any()):
        return feats.sum() * 0.0
    logp = F.log_softmax(head(feats[has]).float(), dim=-1).transpose(0, 1)  # (N * slots, B', classes)
    flat = torch.cat([t for t, h in zip(targets, has) if h])
    in_lengths = torch.full((logp.shape[1],), logp.shape[0], dtype=torch.long)
    return F.ctc_loss(
        logp, flat, in_lengths, lengths[has], blank=head.blank, reduction="mean", zero_infinity=True
    )


def bag_targets(labels: torch.Tensor, vocab_size: int, min_id: int) -> torch.Tensor:
    """labels (B, T) -> (B, V) normalised counts of the answer tokens with id >= min_id (specials dropped)."""
    bag = torch.zeros(labels.shape[0], vocab_size)
    keep = (labels != IGNORE_INDEX) & (labels >= min_id)  # (B, T)
    ids = labels.clamp_min(0)
    bag.scatter_add_(1, ids, keep.float())
    return bag / bag.sum(dim=1, keepdim=True).clamp_min(1.0)


def bag_of_tokens_loss(head: BagOfTokensHead, feats: torch.Tensor, labels: torch.Tensor, min_id: int):
    """Cross-entropy of the head's token distribution against the page's bag of answer tokens.

    feats: (B, N, D), one view per row; labels: (B, T). Rows without content tokens contribute nothing.
    """
    target = bag_targets(labels, head.proj.out_features, min_id)  # (B, V)
    logp = F.log_softmax(head(feats).float(), dim=-1)  # (B, V)
    has = target.sum(dim=1) > 0
    if not bool(has.any()):
        return feats.sum() * 0.0
    return -(target[has] * logp[has]).sum(dim=1).mean()
