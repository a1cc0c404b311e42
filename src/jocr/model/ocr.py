"""`OCRModel`: DeepEncoder + MoE decoder + FastMTP head, with `<image>` placeholder splicing.

Top-level parameter names are the published checkpoint's: `model.sam_model.*`, `model.vision_model.*`,
`model.projector.layers.*`, `model.image_newline`, `model.view_seperator` (sic), `model.embed_tokens`,
`model.layers.{i}.*`, `model.norm`, `lm_head`, `mtp_module.heads.0.*`.

Image token layout per image (DeepSeek-OCR, arXiv 2510.18234; vLLM's deepseek_ocr): [tile grid, global view,
view_seperator], where the tile grid is stitched into (rows*qt) rows of cols*qt tokens and the global view is
q rows of q tokens, and `image_newline` follows every row of both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from jocr.config import OCRConfig
from jocr.model.decoder import DecoderLayer, KVCache, RMSNorm, RotaryEmbedding, default_positions
from jocr.model.kernels import positions_per_row
from jocr.model.mtp import MTPModule
from jocr.model.vision import ClipEncoder, Projector, SamEncoder, deep_encoder_features
from jocr.types import PageViews


@dataclass
class ModelOutput:
    logits: torch.Tensor  # (B, T, V) float32
    hidden_states: torch.Tensor  # (B, T, D) last decoder layer output, before the final norm
    normed_hidden_states: torch.Tensor  # (B, T, D) after the final norm


@dataclass
class MTPOutput:
    logits: torch.Tensor  # (B, T, V) float32 draft logits
    hidden_states: torch.Tensor  # (B, T, D) MTP block output, before the (shared) final norm
    normed_hidden_states: torch.Tensor  # (B, T, D) after it


class OCRBackbone(nn.Module):
    """The `model.*` namespace of the checkpoint: vision encoder, projector, separators and decoder body."""

    def __init__(self, config: OCRConfig) -> None:
        super().__init__()
        v, d = config.vision, config.decoder
        self.sam_model = SamEncoder(v)
        self.vision_model = ClipEncoder(v)
        self.projector = Projector(v)
        self.image_newline = nn.Parameter(torch.zeros(v.projector_dim))
        self.view_seperator = nn.Parameter(torch.zeros(v.projector_dim))
        self.embed_tokens = nn.Embedding(d.vocab_size, d.hidden_size)
        self.layers = nn.ModuleList(
            DecoderLayer(d, i, moe=d.is_moe_layer(i)) for i in range(d.num_hidden_layers)
        )
        self.norm = RMSNorm(d.hidden_size, d.rms_norm_eps)


class OCRModel(nn.Module):
    def __init__(self, config: OCRConfig) -> None:
        super().__init__()
        self.config = config.validate()
        d = config.decoder
        self.model = OCRBackbone(config)
        self.lm_head = nn.Linear(d.hidden_size, d.vocab_size, bias=False)
        self.rotary = RotaryEmbedding(d.head_dim, d.rope_theta)
        self.mtp_module = MTPModule(d, config.mtp) if config.mtp.enabled else None

    # Weights ------------------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls, path: str | Path, dtype: torch.dtype | None = None, device: str | torch.device | None = None
    ) -> OCRModel:
        from jocr.model.weights import load_pretrained

        return load_pretrained(cls, path, dtype=dtype, device=device)

    def save_pretrained(
        self,
        path: str | Path,
        dtype: torch.dtype | str | None = None,
        max_shard_size: int | str | None = None,
    ) -> Path:
        """config.json and the weights (`jocr.model.weights.save_pretrained`; dtype "int8": weight-only
        int8 matrices, bf16 elsewhere)."""
        from jocr.model.weights import save_pretrained

        return save_pretrained(self, path, dtype=dtype, max_shard_size=max_shard_size)

    def init_weights(self, std: float = 0.02, seed: int | None = None) -> OCRModel:
        """Random initialisation for training from scratch and for tests (normal(0, std) matrices, unit norms,
        zero biases)."""
        from jocr.model.weights import init_weights

        init_weights(self, std=std, seed=seed)
        return self

    @property
    def dtype(self) -> torch.dtype:
        return self.model.embed_tokens.weight.dtype

    @property
    def device(self) -> torch.device:
        return self.model.embed_tokens.weight.device

    # Vision -------------------------------------------------------------------------------------------
    def _encode_views(self, views: torch.Tensor, chunk: int = 8) -> torch.Tensor:
        # views: (N, 3, S, S) -> (N, q, q, D)
        views = views.to(device=self.device, dtype=self.dtype)
        outs = [
            deep_encoder_features(
                self.model.sam_model, self.model.vision_model, self.model.projector, views[i : i + chunk]
            )
            for i in range(0, views.shape[0], chunk)
        ]
        return torch.cat(outs, dim=0)

    def _with_newlines(self, grid: torch.Tensor) -> torch.Tensor:
        # grid: (R, C, D) -> (R * (C + 1), D) with image_newline after every row
        r, _, dim = grid.shape
        newline = self.model.image_newline.to(grid.dtype).expand(r, 1, dim)
        return torch.cat([grid, newline], dim=1).reshape(-1, dim)

    def encode_images(self, images: list[PageViews]) -> list[torch.Tensor]:
        """Vision embeddings per image, (N_i, D) with N_i = config.image_token_count(grid, tiled)."""
        if not images:
            return []
        globals_ = self._encode_views(torch.stack([pv.global_view for pv in images]))  # (N, q, q, D)
        tiled = [pv for pv in images if pv.num_tiles > 0]
        tile_feats = self._encode_views(torch.cat([pv.tiles for pv in tiled])) if tiled else None
        out, offset = [], 0
        for i, pv in enumerate(images):
            parts = []
            if pv.num_tiles > 0:
                cols, rows = pv.grid
                if cols * rows != pv.num_tiles:
                    raise ValueError(f"image {i}: grid {pv.grid} does not match {pv.num_tiles} tiles")
                feats = tile_feats[offset : offset + pv.num_tiles]  # (n, qt, qt, D)
                offset += pv.num_tiles
                _, qt, _, dim = feats.shape
                # (rows, cols, qt, qt, D) -> (rows, qt, cols, qt, D)
                stitched = feats.view(rows, cols, qt, qt, dim).permute(0, 2, 1, 3, 4)
                parts.append(self._with_newlines(stitched.reshape(rows * qt, cols * qt, dim)))
            parts.append(self._with_newlines(globals_[i]))
            parts.append(self.model.view_seperator.to(globals_.dtype)[None])
            out.append(torch.cat(parts, dim=0))
        return out

    def encode_rows(self, images: list[list[PageViews] | None]) -> list[list[torch.Tensor] | None]:
        """Per batch row, the embeddings of its images (None for a row without any), as `embed` takes them.
        A page shared by several rows (G sampled readings of one page, n completions of one request) is the
        same PageViews object: it is encoded once."""
        unique = {id(pv): pv for row in images if row for pv in row}
        encoded = dict(zip(unique, self.encode_images(list(unique.values()))))
        return [[encoded[id(pv)] for pv in row] if row else None for row in images]

    # Text ---------------------------------------------------------------------------------------------
    def embed(
        self,
        input_ids: torch.Tensor,  # (B, T)
        image_embeds: list[torch.Tensor | list[torch.Tensor] | None] | None = None,
    ) -> torch.Tensor:
        """Token embeddings with `<image>` placeholders replaced, in order, by each row's image embeddings
        (one (N, D) tensor or a list of them per row, or None)."""
        embeds = self.model.embed_tokens(input_ids)  # (B, T, D)
        mask = input_ids == self.config.image_token_id  # (B, T)
        counts = mask.sum(dim=1).tolist()
        rows = list(image_embeds) if image_embeds is not None else [None] * input_ids.shape[0]
        if len(rows) != input_ids.shape[0]:
            raise ValueError(f"image_embeds has {len(rows)} rows for a batch of {input_ids.shape[0]}")
        flat = []
        for b, row in enumerate(rows):
            if isinstance(row, (list, tuple)):
                row = torch.cat(list(row), dim=0) if row else None
            have = 0 if row is None else int(row.shape[0])
            if have != counts[b]:
                raise ValueError(f"row {b}: {counts[b]} <image> placeholders but {have} image embeddings")
            if row is not None:
                flat.append(row)
        if not flat:
            return embeds
        values = torch.cat(flat, dim=0).to(embeds.dtype)  # (sum N, D), row-major like masked_scatter
        return embeds.masked_scatter(mask[..., None], values)

    def decode(
        self,
        inputs_embeds: torch.Tensor,  # (B, T, D)
        positions: torch.Tensor,  # (B, T)
        cache: KVCache | None = None,
        num_logits_to_keep: int | None = None,
    ) -> ModelOutput:
        cos, sin = self.rotary(positions, inputs_embeds.dtype)
        h = inputs_embeds
        with positions_per_row(inputs_embeds.shape[1]):  # which products take the kernels
            for layer in self.model.layers:
                h = layer(h, cos, sin, positions, cache)
            normed = self.model.norm(h)
            head_in = normed if num_logits_to_keep is None else normed[:, -num_logits_to_keep:]
            logits = self.lm_head(head_in).float()
        return ModelOutput(logits, h, normed)

    def forward(
        self,
        input_ids: torch.Tensor,  # (B, T) long
        images: list[list[PageViews] | None] | None = None,
        positions: torch.Tensor | None = None,  # (B, T) long
        cache: KVCache | None = None,
        num_logits_to_keep: int | None = None,
        image_embeds: list[list[torch.Tensor] | None] | None = None,
    ) -> ModelOutput:
        """Logits and hidden states. `num_logits_to_keep` (optional) computes logits for the last n positions
        only (prefill of long pages need not materialise (T, V) logits). `image_embeds` (instead of
        `images`): rows already encoded by `encode_rows` (a page shared by requests prefilled apart is encoded
        once)."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (B, T), got shape {tuple(input_ids.shape)}")
        if positions is None:
            positions = default_positions(input_ids)
        if image_embeds is not None:
            if images is not None:
                raise ValueError("pass images or image_embeds, not both")
            return self.decode(self.embed(input_ids, image_embeds), positions, cache, num_logits_to_keep)
        if images is not None:
            if len(images) != input_ids.shape[0]:
                raise ValueError(f"images has {len(images)} rows for a batch of {input_ids.shape[0]}")
            image_embeds = self.encode_rows(images)
        return self.decode(self.embed(input_ids, image_embeds), positions, cache, num_logits_to_keep)

    # FastMTP --------------------------------------------------------------------------------------------
    def mtp_step(
        self,
        prev_hidden: torch.Tensor,  # (B, T, D) verifier / previous draft state, per MTPConfig.feedback
        next_ids: torch.Tensor,  # (B, T) the tokens that follow prev_hidden's positions
        positions: torch.Tensor,  # (B, T) positions for RoPE and the cache slots of layer num_hidden_layers
        cache: KVCache | None = None,
        num_logits_to_keep: int | None = None,
    ) -> MTPOutput:
        """One draft step; `num_logits_to_keep` computes logits for the last n positions only (a catch-up over
        several committed positions needs the newest one: the lm_head is most of a draft step's bytes)."""
        if self.mtp_module is None:
            raise RuntimeError("this model has no MTP head (config.mtp.enabled is false)")
        head = self.mtp_module.heads[0]
        embed = head.embed_tokens if hasattr(head, "embed_tokens") else self.model.embed_tokens
        shared = getattr(head, "shared_head", None)
        norm = shared.norm if shared is not None and hasattr(shared, "norm") else self.model.norm
        lm_head = shared.head if shared is not None and hasattr(shared, "head") else self.lm_head
        token_embeds = embed(next_ids)  # (B, T, D)
        cos, sin = self.rotary(positions, token_embeds.dtype)
        with positions_per_row(next_ids.shape[1]):
            h = head(token_embeds, prev_hidden, cos, sin, positions, cache)
            normed = norm(h)
            head_in = normed if num_logits_to_keep is None else normed[:, -num_logits_to_keep:]
            logits = lm_head(head_in).float()
        return MTPOutput(logits, h, normed)

    def mtp_feedback(self, output: ModelOutput | MTPOutput) -> torch.Tensor:
        """The state to feed to the next draft step, taken before or after the final norm per MTPConfig."""
        if self.config.mtp.feedback == "post_norm":
            return output.normed_hidden_states
        return output.hidden_states
