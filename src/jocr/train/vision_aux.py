"""Auxiliary bag-of-tokens loss on the vision features, for training a reader from scratch.

Why: trained from scratch with image -> Markdown cross-entropy alone, the decoder first learns the text
prior; while it cannot read yet, the variation of the image tokens only adds noise to its predictions, and the
cheapest way to remove it is to make the encoder's output constant. Measured on the first CPU run: after 740
steps the projected image embeddings had std 176 but differed between two pages by 0.007 on average, and
swapping images between batch rows left the loss unchanged to three decimals, i.e. the encoder had collapsed
and the model could not start reading. This loss asks the mean-pooled projected features of a page to predict
which tokens its Markdown contains (a softmax over the vocabulary against the normalised bag of target
tokens), so a constant encoder is never a good solution and the image tokens carry content from the first
steps. The head is part of the trainer only; it is saved with the trainer state, not with the model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from jocr.train.data import IGNORE_INDEX


class BagOfTokensHead(nn.Module):
    def __init__(self, dim: int, vocab_size: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, vocab_size)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        # feats: (B, N, D) projected image features -> (B, V) logits
        return self.proj(self.norm(feats.mean(dim=1)))


class ProjectorTap:
    """Collects the projector's outputs during one forward pass (a forward hook on model.model.projector)."""

    def __init__(self, model) -> None:
        self.outputs: list[torch.Tensor] = []
        self._handle = model.model.projector.register_forward_hook(self._hook)

    def _hook(self, module, inputs, output) -> None:
        self.outputs.append(output)

    def take(self) -> torch.Tensor | None:
        """(num_views, N, D) features of the last forward, or None when nothing was recorded."""
        outs, self.outputs = self.outputs, []
        return torch.cat(outs, dim=0) if outs else None

    def close(self) -> None:
        self._handle.remove()


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
