"""DeepEncoder: SAM-style windowed ViT -> conv compressor -> CLIP-style ViT -> linear projector.

Follows DeepSeek-OCR's `deepencoder/` (sam_vary_sdpa.py, clip_sdpa.py) and vLLM's deepseek_ocr.py; parameter
names are the published ones under `model.sam_model.*`, `model.vision_model.*`, `model.projector.layers.*`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from jocr.config import VisionConfig


def resize_abs_pos_2d(pos: torch.Tensor, side: int) -> torch.Tensor:
    """Resize a (1, G, G, C) position table to (1, side, side, C): bicubic, antialiased, in float32
    (SAM's get_abs_pos; a 1024 table of 64x64 becomes 40x40 for a 640 tile)."""
    if pos.shape[1] == side:
        return pos
    grid = pos.permute(0, 3, 1, 2).float()  # (1, C, G, G)
    grid = F.interpolate(grid, size=(side, side), mode="bicubic", antialias=True, align_corners=False)
    return grid.to(pos.dtype).permute(0, 2, 3, 1)


def resize_rel_pos(rel_pos: torch.Tensor, length: int) -> torch.Tensor:
    """Resize a (L, C) relative-position table to `length` rows, linearly (SAM's get_rel_pos)."""
    if rel_pos.shape[0] == length:
        return rel_pos
    table = rel_pos.float().t().unsqueeze(0)  # (1, C, L)
    table = F.interpolate(table, size=length, mode="linear")
    return table.squeeze(0).t().to(rel_pos.dtype)


def rel_pos_table(q_size: int, k_size: int, rel_pos: torch.Tensor) -> torch.Tensor:
    """(q_size, k_size, C) embeddings of the relative offsets between query and key coordinates."""
    rel_pos = resize_rel_pos(rel_pos, 2 * max(q_size, k_size) - 1)
    q_coords = torch.arange(q_size, device=rel_pos.device)[:, None] * max(k_size / q_size, 1.0)
    k_coords = torch.arange(k_size, device=rel_pos.device)[None, :] * max(q_size / k_size, 1.0)
    offsets = (q_coords - k_coords) + (k_size - 1) * max(q_size / k_size, 1.0)
    return rel_pos[offsets.long()]


class LayerNorm2d(nn.Module):
    """LayerNorm over channels of a (B, C, H, W) map (SAM's neck)."""

    def __init__(self, channels: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Same maths as SAM's explicit mean/variance version; the fused kernel on a channels-last view is
        # about 4x faster forward + backward on CPU.
        x = F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class PatchEmbed(nn.Module):
    def __init__(self, patch: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).permute(0, 2, 3, 1)  # (B, 3, H*p, W*p) -> (B, H, W, C)


class SamAttention(nn.Module):
    """Multi-head attention with decomposed relative positions added to the logits (MViTv2 / SAM)."""

    def __init__(self, dim: int, heads: int, rel_size: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.rel_pos_h = nn.Parameter(torch.zeros(2 * rel_size - 1, self.head_dim))
        self.rel_pos_w = nn.Parameter(torch.zeros(2 * rel_size - 1, self.head_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, dim = x.shape  # (B, H, W, C)
        qkv = self.qkv(x).reshape(b, h * w, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # each (B, nH, HW, hd)
        rh = rel_pos_table(h, h, self.rel_pos_h)  # (h, h, hd)
        rw = rel_pos_table(w, w, self.rel_pos_w)  # (w, w, hd)
        rq = q.reshape(b, self.heads, h, w, self.head_dim)
        rel_h = torch.einsum("bnhwc,hkc->bnhwk", rq, rh)  # (B, nH, h, w, kh)
        rel_w = torch.einsum("bnhwc,wkc->bnhwk", rq, rw)  # (B, nH, h, w, kw)
        bias = (rel_h[..., :, None] + rel_w[..., None, :]).reshape(b, self.heads, h * w, h * w)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))  # (B, nH, HW, hd)
        out = out.transpose(1, 2).reshape(b, h, w, dim)
        return self.proj(out)


def window_partition(x: torch.Tensor, window: int) -> tuple[torch.Tensor, tuple[int, int]]:
    """(B, H, W, C) -> (B * nWin, window, window, C), zero-padding H and W up to multiples of the window.
    Padded tokens take part in attention as keys, exactly as in SAM."""
    b, h, w, c = x.shape
    pad_h, pad_w = (-h) % window, (-w) % window
    if pad_h or pad_w:
        x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
    hp, wp = h + pad_h, w + pad_w
    x = x.view(b, hp // window, window, wp // window, window, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, window, window, c), (hp, wp)


def window_unpartition(windows: torch.Tensor, window: int, padded: tuple[int, int], size: tuple[int, int]):
    hp, wp = padded
    h, w = size
    b = windows.shape[0] // ((hp // window) * (wp // window))
    x = windows.view(b, hp // window, wp // window, window, window, -1)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(b, hp, wp, -1)  # (B, Hp, Wp, C)
    return x[:, :h, :w].contiguous()


class SamMLP(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.lin1 = nn.Linear(dim, hidden)
        self.lin2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin2(F.gelu(self.lin1(x)))


class SamBlock(nn.Module):
    def __init__(self, config: VisionConfig, window: int, grid: int) -> None:
        super().__init__()
        dim = config.sam_width
        self.window = window
        self.norm1 = nn.LayerNorm(dim, eps=config.sam_layernorm_eps)
        self.attn = SamAttention(dim, config.sam_heads, window if window > 0 else grid)
        self.norm2 = nn.LayerNorm(dim, eps=config.sam_layernorm_eps)
        self.mlp = SamMLP(dim, int(dim * config.sam_mlp_ratio))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.norm1(x)  # (B, H, W, C)
        if self.window > 0:
            size = (x.shape[1], x.shape[2])
            x, padded = window_partition(x, self.window)
            x = window_unpartition(self.attn(x), self.window, padded, size)
        else:
            x = self.attn(x)
        x = shortcut + x
        return x + self.mlp(self.norm2(x))


class SamEncoder(nn.Module):
    """`model.sam_model`: patch embed, windowed / global blocks, neck, compressor net_2, net_3."""

    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        grid = config.sam_image_size // config.patch_size
        self.patch_embed = PatchEmbed(config.patch_size, config.sam_width)
        self.pos_embed = nn.Parameter(torch.zeros(1, grid, grid, config.sam_width))
        self.blocks = nn.ModuleList(
            SamBlock(config, 0 if i in config.sam_global_attn_indexes else config.sam_window_size, grid)
            for i in range(config.sam_depth)
        )
        out = config.sam_out_channels
        self.neck = nn.Sequential(
            nn.Conv2d(config.sam_width, out, kernel_size=1, bias=False),
            LayerNorm2d(out),
            nn.Conv2d(out, out, kernel_size=3, padding=1, bias=False),
            LayerNorm2d(out),
        )
        self.num_compressors = len(config.compressor_channels)
        channels = (out, *config.compressor_channels)
        for i in range(self.num_compressors):
            conv = nn.Conv2d(channels[i], channels[i + 1], kernel_size=3, stride=2, padding=1, bias=False)
            self.add_module(f"net_{i + 2}", conv)  # published names: net_2, net_3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B, 3, S, S) -> (B, C_out, S / (patch * compress), same)
        x = self.patch_embed(x)  # (B, H, W, C)
        x = x + resize_abs_pos_2d(self.pos_embed, x.shape[1])
        for block in self.blocks:
            x = block(x)
        x = self.neck(x.permute(0, 3, 1, 2))  # (B, C_neck, H, W)
        for i in range(self.num_compressors):
            x = getattr(self, f"net_{i + 2}")(x)
        return x


class ClipEmbeddings(nn.Module):
    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        dim = config.clip_width
        self.class_embedding = nn.Parameter(torch.zeros(dim))
        # Present in published checkpoints but never applied: CLIP takes SAM's compressed map instead.
        self.patch_embedding = nn.Conv2d(3, dim, config.clip_patch_size, config.clip_patch_size, bias=False)
        self.position_embedding = nn.Embedding(config.clip_grid**2 + 1, dim)

    def positions(self, num_patches: int) -> torch.Tensor:
        """(1 + num_patches, C): CLS row kept, patch grid resized bicubically (clip_sdpa's get_abs_pos)."""
        table = self.position_embedding.weight  # (1 + G*G, C)
        src, tgt = math.isqrt(table.shape[0] - 1), math.isqrt(num_patches)
        if src == tgt:
            return table
        grid = resize_abs_pos_2d(table[1:].view(1, src, src, -1), tgt).reshape(tgt * tgt, -1)
        return torch.cat([table[:1], grid], dim=0)

    def forward(self, patch_embeds: torch.Tensor) -> torch.Tensor:
        # patch_embeds: (B, C, h, w) -> (B, 1 + h*w, C)
        b = patch_embeds.shape[0]
        x = patch_embeds.flatten(2).transpose(1, 2)  # (B, hw, C)
        cls = self.class_embedding.to(x.dtype).expand(b, 1, -1)
        x = torch.cat([cls, x], dim=1)
        return x + self.positions(x.shape[1] - 1).to(x.dtype)


class ClipAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv_proj = nn.Linear(dim, dim * 3)  # packed (3, heads, head_dim) on the output axis
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, dim = x.shape
        qkv = self.qkv_proj(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])  # (B, nH, T, hd)
        return self.out_proj(out.transpose(1, 2).reshape(b, t, dim))


class ClipMLP(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc1(x)
        return self.fc2(x * torch.sigmoid(1.702 * x))  # quick_gelu


class ClipLayer(nn.Module):
    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        dim = config.clip_width
        self.layer_norm1 = nn.LayerNorm(dim, eps=config.clip_layernorm_eps)
        self.self_attn = ClipAttention(dim, config.clip_heads)
        self.layer_norm2 = nn.LayerNorm(dim, eps=config.clip_layernorm_eps)
        self.mlp = ClipMLP(dim, config.clip_ffn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class ClipTransformer(nn.Module):
    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(ClipLayer(config) for _ in range(config.clip_depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class ClipEncoder(nn.Module):
    """`model.vision_model`: CLS + interpolated positions, pre_layrnorm (sic), layers, no final norm."""

    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        self.embeddings = ClipEmbeddings(config)
        self.pre_layrnorm = nn.LayerNorm(config.clip_width, eps=config.clip_layernorm_eps)
        self.transformer = ClipTransformer(config)

    def forward(self, patch_embeds: torch.Tensor) -> torch.Tensor:
        # patch_embeds: (B, C, h, w) -> (B, 1 + h*w, C)
        return self.transformer(self.pre_layrnorm(self.embeddings(patch_embeds)))


class Projector(nn.Module):
    """`model.projector.layers`: the linear projector of DeepSeek-OCR (projector_type "linear")."""

    def __init__(self, config: VisionConfig) -> None:
        super().__init__()
        self.layers = nn.Linear(config.feature_dim, config.projector_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def deep_encoder_features(
    sam: SamEncoder, clip: ClipEncoder, projector: Projector, views: torch.Tensor
) -> torch.Tensor:
    """(B, 3, S, S) views -> (B, q, q, D) projected features, q = S / (patch * compress).

    Features are concat(CLIP output without CLS, flattened SAM map), in that order (vLLM's deepseek_ocr)."""
    sam_map = sam(views)  # (B, C, q, q)
    clip_out = clip(sam_map)  # (B, 1 + q*q, C_clip)
    b, _, q, _ = sam_map.shape
    feats = torch.cat([clip_out[:, 1:], sam_map.flatten(2).transpose(1, 2)], dim=-1)  # (B, q*q, 2048)
    return projector(feats).view(b, q, q, -1)
