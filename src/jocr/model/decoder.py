"""DeepSeek-V2-style MoE decoder with plain multi-head attention (DeepSeek-OCR's "DeepSeek3B-MoE-A570M").

Parameter names follow the published checkpoint (`model.layers.{i}.self_attn.{q,k,v,o}_proj`,
`mlp.gate`, `mlp.experts.{e}.{gate,up,down}_proj`, `mlp.shared_experts.*`, `input_layernorm`,
`post_attention_layernorm`) so weights load without renaming.

KV cache layout (the engine owns it; see docs/architecture.md): `cache.update(layer_idx, k, v, positions)`
takes k, v of shape (B, H_kv, T, D) after RoPE and returns the whole (B, H_kv, S, D) buffers plus a boolean
(B, 1, T, S) visibility mask, or None when that mask is plain causal with S = T (a prompt written from slot
0): SDPA then skips the masked half (`is_causal`; on this CPU 39 ms instead of 70 ms for one layer of a
1,610-token prompt, bitwise the same output). Without a cache, attention is plain causal over the given
sequence.

Row invariance: in inference passes whose sequences are short (decode, verify, draft steps, short prompts:
`kernels.row_invariant`), attention, every linear product and the router's scores go through
jocr's kernels (model/kernels), which compute each query row's result in an order that depends only on
that row's inputs and the keys it sees: not on the batch, on the other queries of the pass (1 or k + 1) or
on the cache slots past it. torch's SDPA does not (measured: last-bit differences between 1 and 4 queries,
and with extra masked slots), so those passes do not use it.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from jocr.config import DecoderConfig
from jocr.model.kernels import attention as kernel_attention
from jocr.model.kernels import linear as kernel_linear
from jocr.model.kernels import row_invariant


class KVCache(Protocol):
    def update(
        self, layer_idx: int, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]: ...


class RMSNorm(nn.Module):
    """RMSNorm computed in float32 and cast back before the weight (as DeepSeek-V2 / Llama do)."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(dtype)


class RotaryEmbedding(nn.Module):
    """Rotate-half RoPE over the full head_dim (vLLM's DeepSeek-OCR path with use_mla false)."""

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.theta = theta

    def forward(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        # positions: (B, T) -> cos, sin: (B, 1, T, D). Frequencies are recomputed (D/2 values, negligible)
        # rather than kept as a buffer, so models built on the meta device need no buffer re-initialisation.
        exponents = torch.arange(0, self.head_dim, 2, dtype=torch.float32, device=positions.device)
        inv_freq = 1.0 / (self.theta ** (exponents / self.head_dim))  # (D/2,)
        freqs = positions[..., None].float() * inv_freq  # (B, T, D/2)
        emb = torch.cat((freqs, freqs), dim=-1)[:, None]  # (B, 1, T, D)
        return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: (B, H, T, D); cos, sin: (B, 1, T, D)
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, config: DecoderConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        hidden = config.hidden_size
        self.q_proj = nn.Linear(hidden, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, hidden, bias=False)

    def forward(
        self,
        x: torch.Tensor,  # (B, T, D_model)
        cos: torch.Tensor,  # (B, 1, T, D)
        sin: torch.Tensor,
        positions: torch.Tensor,  # (B, T)
        cache: KVCache | None,
    ) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, D)
        v = self.v_proj(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        gqa = self.num_kv_heads != self.num_heads
        # Only caches that state jocr's visibility rule (a query at position p sees exactly slots 0 .. p) can
        # be read by the kernel; others (e.g. a left-padded Transformers cache) bring their own mask.
        if self._invariant(q, b * t) and (cache is None or getattr(cache, "prefix_visible", False)):
            if cache is None:  # causal by index: query t sees keys 0 .. t
                k_all, v_all = k, v
                visible = torch.arange(1, t + 1, device=x.device).expand(b, t)  # (B, T)
            else:
                k_all, v_all, _ = cache.update(self.layer_idx, k, v, positions)  # (B, Hkv, S, D)
                k_all, v_all = k_all.float(), v_all.float()  # a copy only for a cache kept in another dtype
                visible = positions + 1  # (B, T): slots 0 .. position, the cache's visibility rule
            out = kernel_attention(q, k_all, v_all, visible, self.head_dim**-0.5)  # (B, T, H, D)
            return self.o_proj(out.view(b, t, self.num_heads * self.head_dim))
        if cache is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1, enable_gqa=gqa)
        else:
            k_all, v_all, mask = cache.update(self.layer_idx, k, v, positions)  # (B, Hkv, S, D), (B, 1, T, S)
            out = F.scaled_dot_product_attention(
                q,
                k_all.to(q.dtype),
                v_all.to(q.dtype),
                attn_mask=mask,
                is_causal=mask is None and t > 1,
                enable_gqa=gqa,
            )
        out = out.transpose(1, 2).reshape(b, t, self.num_heads * self.head_dim)  # (B, T, H*D)
        return self.o_proj(out)

    def _invariant(self, q: torch.Tensor, rows: int) -> bool:
        """Whether this pass attends through the row-invariant kernel (module docstring)."""
        return (
            q.dtype == torch.float32
            and q.device.type == "cpu"
            and self.head_dim % 16 == 0
            and self.num_heads % self.num_kv_heads == 0
            and row_invariant(rows)
        )


class MLP(nn.Module):
    """SwiGLU MLP: the dense layers, each routed expert and the (merged) shared experts."""

    def __init__(self, hidden: int, intermediate: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


# Without the kernels, a pass of at most this many positions scores its rows one at a time. A batched fp32
# product takes other paths for a few rows than for many (MKL: last-bit differences between 1-3 rows and 4
# or more, measured at 64 x 1280), which can flip a near-tie in the top-k, so a row could route differently
# alone, in a batch of 8 or in a FastMTP verify pass. One `mv` per row costs a few microseconds; prompts
# (longer passes) keep the batched product. With the kernels, `kernels.row_invariant` passes use them.
ROW_INVARIANT_MAX_ROWS = 64


class Router(nn.Module):
    """Softmax scoring, greedy top-k, no renormalisation by default (DeepSeek-V2 `topk_method: greedy`).

    Scores are computed in float32 (as the reference keeps `gate.weight` in fp32)."""

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.scale = config.routed_scaling_factor
        self.renormalise = config.norm_topk_prob
        self.weight = nn.Parameter(torch.empty(config.n_routed_experts, config.hidden_size))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # x: (N, D) -> weights (N, k) float32, indices (N, k)
        scores = self.logits(x.float()).softmax(dim=-1)  # (N, E)
        weights, indices = torch.topk(scores, self.top_k, dim=-1)
        if self.renormalise:
            weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-20)
        return weights * self.scale, indices

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        # x: (N, D) float32 -> (N, E); a row's logits do not depend on the rows beside it in short passes
        weight = self.weight.float()
        if weight.shape[1] % 16 == 0 and row_invariant(x.shape[0]):
            return kernel_linear(x.contiguous(), weight.contiguous())
        if 0 < x.shape[0] <= ROW_INVARIANT_MAX_ROWS:
            return torch.stack([torch.mv(weight, row) for row in x])
        return F.linear(x, weight)


class _GatherRows(torch.autograd.Function):
    """`x[perm]` for a permutation `perm` whose inverse is known: the backward is another gather instead of
    the scatter-add that autograd would use for a general index (several times slower on CPU)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, perm: torch.Tensor, inverse: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(inverse)
        return x.index_select(0, perm)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (inverse,) = ctx.saved_tensors
        return grad.index_select(0, inverse), None, None


def _gather_rows(x: torch.Tensor, perm: torch.Tensor, inverse: torch.Tensor) -> torch.Tensor:
    return _GatherRows.apply(x, perm, inverse)


class MoE(nn.Module):
    """Routed experts + always-on shared experts. Compute scales with active experts: token-expert pairs are
    sorted by expert and each chosen expert runs once on exactly its tokens."""

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        self.num_experts = config.n_routed_experts
        self.gate = Router(config)
        self.experts = nn.ModuleList(
            MLP(config.hidden_size, config.moe_intermediate_size) for _ in range(self.num_experts)
        )
        self.shared_experts = (
            MLP(config.hidden_size, config.moe_intermediate_size * config.n_shared_experts)
            if config.n_shared_experts > 0
            else None
        )
        # Set by model/formats.py on a CPU: routed + shared experts of a few rows in one kernel call (the same
        # maths, one Python call instead of three per chosen expert); returns None where it does not apply.
        self.fast_experts = None

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.gate(x)

    def routed(self, x: torch.Tensor, weights: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        # x: (N, D); weights, indices: (N, k)
        n, k = indices.shape
        flat = indices.reshape(-1)  # (N*k,) expert of each (token, slot) pair
        order = torch.argsort(flat, stable=True)  # pairs grouped by expert
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.numel(), device=order.device)
        counts = torch.bincount(flat, minlength=self.num_experts).tolist()
        pairs = x.unsqueeze(1).expand(n, k, x.shape[-1]).reshape(n * k, -1)  # (N*k, D) token of each pair
        grouped = _gather_rows(pairs, order, inverse)  # (N*k, D) sorted by expert
        # split (not slicing) so that the backward is one concatenation, not a zero-filled gradient per expert
        outputs = [
            self.experts[expert_id](chunk)
            for expert_id, chunk in enumerate(grouped.split(counts))
            if counts[expert_id]
        ]
        ys = _gather_rows(torch.cat(outputs, dim=0), inverse, order)  # (N*k, D) back in pair order
        return (ys.view(n, k, -1) * weights.unsqueeze(-1).to(ys.dtype)).sum(dim=1)  # (N, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])  # (N, D)
        weights, indices = self.route(flat)
        if self.fast_experts is not None:
            out = self.fast_experts(flat, weights, indices)  # (N, D) or None
            if out is not None:
                return out.view(shape)
        out = self.routed(flat, weights, indices)
        if self.shared_experts is not None:
            out = out + self.shared_experts(flat)
        return out.view(shape)


class DecoderLayer(nn.Module):
    def __init__(self, config: DecoderConfig, layer_idx: int, moe: bool) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Attention(config, layer_idx)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MoE(config) if moe else MLP(config.hidden_size, config.intermediate_size)

    def forward(
        self,
        x: torch.Tensor,  # (B, T, D)
        cos: torch.Tensor,
        sin: torch.Tensor,
        positions: torch.Tensor,
        cache: KVCache | None,
    ) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, positions, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


def default_positions(input_ids: torch.Tensor) -> torch.Tensor:
    b, t = input_ids.shape
    return torch.arange(t, device=input_ids.device).unsqueeze(0).expand(b, t)
