"""Model test helpers: tiny configs and a reference KV cache that follows the cache protocol."""

from __future__ import annotations

import dataclasses

import torch

from jocr.config import OCRConfig


class ReferenceCache:
    """Preallocated per-layer K/V buffers; `update` writes at `positions` and returns the visibility mask
    `mask[b, 0, t, s] = s <= positions[b, t]` (docs/architecture.md, cache protocol)."""

    def __init__(self, num_layers: int, batch: int, kv_heads: int, head_dim: int, max_len: int) -> None:
        self.k = torch.zeros(num_layers, batch, kv_heads, max_len, head_dim)
        self.v = torch.zeros_like(self.k)
        self.calls: list[int] = []

    def update(self, layer_idx, k, v, positions):
        self.calls.append(layer_idx)
        b_idx = torch.arange(k.shape[0])[:, None]  # (B, 1)
        self.k[layer_idx].permute(0, 2, 1, 3)[b_idx, positions] = k.permute(0, 2, 1, 3)
        self.v[layer_idx].permute(0, 2, 1, 3)[b_idx, positions] = v.permute(0, 2, 1, 3)
        slots = torch.arange(self.k.shape[3])
        mask = (slots[None, None, :] <= positions[:, :, None])[:, None]  # (B, 1, T, S)
        return self.k[layer_idx], self.v[layer_idx], mask


def make_cache(config: OCRConfig, batch: int, max_len: int) -> ReferenceCache:
    d = config.decoder
    return ReferenceCache(d.num_hidden_layers + 1, batch, d.num_key_value_heads, d.head_dim, max_len)


def tiny(**vision_overrides) -> OCRConfig:
    config = OCRConfig.preset("tiny")
    if vision_overrides:
        config = dataclasses.replace(config, vision=dataclasses.replace(config.vision, **vision_overrides))
    return config.validate()
