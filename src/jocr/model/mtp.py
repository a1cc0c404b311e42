"""FastMTP draft head (arXiv 2509.18362), in the DeepSeek-V3 MTP module layout that jina-ocr-v1 publishes.

One head, reused for every draft step (draft parameters do not grow with K):

    h' = block(eh_proj(concat(enorm(embed(t_next)), hnorm(h))))

then the (shared) final norm and lm_head give the draft logits. Step 1 takes the verifier's hidden state, step
k > 1 the head's own output (recursive feedback); `MTPConfig.feedback` says whether that state is taken before
or after the final norm. The block is a dense decoder layer that uses KV-cache layer index num_hidden_layers.
Published keys: `mtp_module.heads.0.{enorm,hnorm,eh_proj,mtp_block.*}`; unshared variants add
`embed_tokens` and `shared_head.{norm,head}` (DeepSeek-V3 naming).
"""

from __future__ import annotations

import torch
from torch import nn

from jocr.config import DecoderConfig, MTPConfig
from jocr.model.decoder import DecoderLayer, KVCache, RMSNorm


class SharedHead(nn.Module):
    def __init__(self, config: DecoderConfig, with_norm: bool, with_head: bool) -> None:
        super().__init__()
        if with_norm:
            self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        if with_head:
            self.head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)


class MTPHead(nn.Module):
    def __init__(self, config: DecoderConfig, mtp: MTPConfig) -> None:
        super().__init__()
        d = config.hidden_size
        self.enorm = RMSNorm(d, config.rms_norm_eps)
        self.hnorm = RMSNorm(d, config.rms_norm_eps)
        self.eh_proj = nn.Linear(2 * d, d, bias=False)
        self.mtp_block = DecoderLayer(config, layer_idx=config.num_hidden_layers, moe=False)
        if not mtp.share_embedding:
            self.embed_tokens = nn.Embedding(config.vocab_size, d)
        if not (mtp.share_norm and mtp.share_lm_head):
            self.shared_head = SharedHead(config, not mtp.share_norm, not mtp.share_lm_head)

    def forward(
        self,
        token_embeds: torch.Tensor,  # (B, T, D) embeddings of the next tokens
        prev_hidden: torch.Tensor,  # (B, T, D)
        cos: torch.Tensor,
        sin: torch.Tensor,
        positions: torch.Tensor,  # (B, T)
        cache: KVCache | None,
    ) -> torch.Tensor:
        x = torch.cat([self.enorm(token_embeds), self.hnorm(prev_hidden.to(token_embeds.dtype))], dim=-1)
        return self.mtp_block(self.eh_proj(x), cos, sin, positions, cache)  # (B, T, D)


class MTPModule(nn.Module):
    """`mtp_module.heads`: a ModuleList so the published `heads.0.*` names line up."""

    def __init__(self, config: DecoderConfig, mtp: MTPConfig) -> None:
        super().__init__()
        self.heads = nn.ModuleList([MTPHead(config, mtp)])
