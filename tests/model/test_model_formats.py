"""Weight formats (jocr.model.formats) and the decode kernels (jocr.model.kernels) on the tiny preset.

The fast paths must give the reference's greedy tokens: `auto` (bf16 bytes, fp32 compute) against fp32
compute of the same weights, and speculative verification against plain decoding in every format."""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from jocr.config import DecoderConfig
from jocr.engine import Engine, EngineConfig, GenerationRequest, naive_generate
from jocr.model import kernels
from jocr.model.decoder import MoE
from jocr.model.formats import (
    FusedExperts,
    PackedLinear,
    apply_format,
    check_fits,
    load_formatted,
    quantize_int8,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "engine"))
from engine_models import build_cycle_model, random_prompt  # noqa: E402

needs_kernel = pytest.mark.skipif(not kernels.available(), reason="no AVX2 CPU / C compiler")


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@needs_kernel
@pytest.mark.parametrize("fmt", ["bf16", "fp32", "int8"])
def test_kernel_matches_fp32_product_and_is_identical_for_any_row_count(fmt):
    torch.set_num_threads(2)  # the kernel's threads split the outputs; a row's sums must not care
    g = torch.Generator().manual_seed(0)
    w = torch.randn(37, 96, generator=g)
    x = torch.randn(150, 96, generator=g)  # past one tile of x rows (linear.c MTILE = 64)
    if fmt == "int8":
        weight, scale = quantize_int8(w)
        ref = F.linear(x.double(), weight.double()) * scale.double()
    else:
        weight, scale = (w.bfloat16() if fmt == "bf16" else w), None
        ref = F.linear(x.double(), weight.double())
    alone = torch.cat([kernels.linear(x[i : i + 1].contiguous(), weight, scale) for i in range(len(x))])
    assert (alone.double() - ref).abs().max() < 1e-4
    for m in (*range(2, 10), 31, 32, 64, 65, 150):
        y = kernels.linear(x[:m].contiguous(), weight, scale)
        assert torch.equal(y, alone[:m])  # a row's result does not depend on its neighbours


@needs_kernel
@pytest.mark.parametrize("kv_heads", [4, 2])
def test_attention_kernel_gives_a_query_the_same_result_in_any_pass(kv_heads):
    """A query's attention output depends only on its keys: not on the batch, on the queries beside it (1 or
    k + 1 in a verify pass, a whole prompt), or on the cache slots past what it sees; close to SDPA."""
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(0)
    heads, dim, seen = 4, 32, 40
    q = torch.randn(8, heads, 4, dim, generator=g)  # (B, H, T, D)
    k = torch.randn(8, kv_heads, seen + 40, dim, generator=g)  # (B, Hkv, S, D)
    v = torch.randn(8, kv_heads, seen + 40, dim, generator=g)

    def first_query(batch: int, queries: int, extra: int) -> torch.Tensor:
        visible = torch.arange(seen, seen + queries).expand(batch, queries)  # (B, T)
        width = seen + queries - 1 + extra
        keys, values = k[:batch, :, :width], v[:batch, :, :width]
        return kernels.attention(q[:batch, :, :queries], keys, values, visible, 0.2)[0, 0]  # (H, D)

    ref = first_query(1, 1, 0)
    for batch in (1, 8):
        for queries in (1, 2, 4):
            for extra in (0, 3, 30):
                assert torch.equal(first_query(batch, queries, extra), ref), (batch, queries, extra)
    sdpa = F.scaled_dot_product_attention(
        q[:1, :, :1], k[:1, :, :seen], v[:1, :, :seen], scale=0.2, enable_gqa=kv_heads != heads
    )  # (1, H, 1, D)
    assert (sdpa[0, :, 0] - ref).abs().max() < 1e-5


@needs_kernel
@pytest.mark.parametrize("dim", [16, 32, 48, 64])
def test_attention_kernel_gives_each_query_of_a_pass_its_result_alone(dim):
    """Queries taken two at a time (the second seeing fewer, as many or more keys than the first, or none),
    eight keys summed at once and a tail of L % 8 keys: every query's output is bitwise what it gets alone,
    and close to SDPA over the keys it sees."""
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(1)
    heads, kv_heads, slots = 4, 2, 45
    q = torch.randn(3, heads, 5, dim, generator=g) * 3  # (B, H, T, D)
    k = torch.randn(3, kv_heads, slots, dim, generator=g)  # (B, Hkv, S, D)
    v = torch.randn(3, kv_heads, slots, dim, generator=g)
    visible = torch.tensor([[37, 9, 0, 45, 20], [1, 2, 3, 4, 5], [13, 13, 40, 8, 17]])  # (B, T)
    out = kernels.attention(q, k, v, visible, 0.3)  # (B, T, H, D)
    for b in range(3):
        for t in range(5):
            alone = kernels.attention(
                q[b : b + 1, :, t : t + 1], k[b : b + 1], v[b : b + 1], visible[b : b + 1, t : t + 1], 0.3
            )
            assert torch.equal(out[b, t], alone[0, 0]), (b, t)
            seen = int(visible[b, t])
            if seen == 0:
                assert not out[b, t].any()
                continue
            sdpa = F.scaled_dot_product_attention(
                q[b : b + 1, :, t : t + 1],
                k[b : b + 1, :, :seen],
                v[b : b + 1, :, :seen],
                scale=0.3,
                enable_gqa=True,
            )  # (1, H, 1, D)
            assert (sdpa[0, :, 0] - out[b, t]).abs().max() < 1e-4


@needs_kernel
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_fused_moe_matches_the_expert_loop_and_is_identical_for_any_row_count(quantize):
    """One kernel call for the routed + shared experts (FusedExperts) computes what the per-expert loop of
    MoE.routed computes; given the routing, a row's output does not depend on the rows beside it; a deep
    copy or a pickled copy points at its own weights."""
    torch.set_num_threads(2)  # the kernel's threads split every expert's rows of outputs
    config = DecoderConfig(
        hidden_size=64,
        n_routed_experts=8,
        num_experts_per_tok=3,
        moe_intermediate_size=32,
        n_shared_experts=2,
    )
    moe = MoE(config)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in moe.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    apply_format(moe.to(torch.bfloat16), "auto", quantize)
    fused = moe.fast_experts
    assert isinstance(fused, FusedExperts)
    x = torch.randn(kernels.MAX_ROWS, 64, generator=g)
    with torch.inference_mode():
        weights, indices = moe.route(x)
        assert len(set(indices.flatten().tolist())) > 3  # several experts, some chosen by several rows
        out = fused(x, weights, indices)
        ref = moe.routed(x, weights, indices) + moe.shared_experts(x)  # the per-expert path
        assert (out - ref).abs().max() < 1e-5
        alone = torch.cat(
            [fused(x[i : i + 1], weights[i : i + 1], indices[i : i + 1]) for i in range(len(x))]
        )
        assert torch.equal(out, alone)
        assert torch.equal(moe(x), out)  # MoE.forward takes the fused path
        assert fused(torch.randn(kernels.MAX_ROWS + 1, 64), weights[:1], indices[:1]) is None  # prefill
        for copied in (copy.deepcopy(moe), pickle.loads(pickle.dumps(moe))):
            ptrs = copied.fast_experts.table.ptrs[0]
            assert not torch.equal(ptrs, fused.table.ptrs[0])
            assert ptrs[0] == copied.experts[0].gate_proj.weight.data_ptr()
            assert torch.equal(copied(x), out)


def test_int8_quantisation_error_is_within_half_a_step():
    w = torch.randn(64, 48, generator=torch.Generator().manual_seed(1))
    q, s = quantize_int8(w)
    assert q.dtype == torch.int8 and (q.float() * s[:, None] - w).abs().max() <= s.max() / 2 + 1e-7


def _requests(seed: int, count: int = 4) -> list[GenerationRequest]:
    g = torch.Generator().manual_seed(seed)
    return [GenerationRequest(prompt_ids=random_prompt(g), max_tokens=20) for _ in range(count)]


@pytest.fixture(scope="module")
def bf16_model():
    return build_cycle_model(0, noise=60.0).to(torch.bfloat16)


def test_auto_keeps_bf16_bytes_and_computes_fp32(bf16_model):
    model = apply_format(copy.deepcopy(bf16_model), "auto")
    assert isinstance(model.lm_head, PackedLinear) and model.lm_head.weight.dtype == torch.bfloat16
    moes = [layer.mlp for layer in model.model.layers if isinstance(layer.mlp, MoE)]
    assert moes and all(isinstance(m.fast_experts, FusedExperts) == kernels.available() for m in moes)
    assert model.model.sam_model.patch_embed.proj.weight.dtype == torch.float32
    assert model.model.embed_tokens.weight.dtype == torch.float32
    ids = torch.randint(11, 200, (2, 9), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        ref = apply_format(copy.deepcopy(bf16_model), "float32")(ids).logits
        out = model(ids).logits
        steps = torch.cat([model(ids[:, : t + 1]).logits[:, -1:] for t in range(3)], dim=1)  # kernel rows
    assert (out - ref).abs().max() < 1e-4
    assert (steps - ref[:, :3]).abs().max() < 1e-4


@pytest.mark.parametrize("fmt", [("auto", "none"), ("float32", "int8")])
def test_fast_paths_give_the_reference_tokens(bf16_model, fmt):
    """AR and FastMTP speculation (batch 1 and 3) reproduce naive greedy decoding of the same format."""
    model = apply_format(copy.deepcopy(bf16_model), *fmt)
    requests = _requests(3)
    refs = [naive_generate(model, r) for r in requests]
    if fmt[1] == "none":  # auto computes what float32 computes: the same tokens as the upcast model
        full = apply_format(copy.deepcopy(bf16_model), "float32")
        assert [naive_generate(full, r).token_ids for r in requests] == [r.token_ids for r in refs]
    for cfg in (
        dict(drafter="none", max_batch_size=1),
        dict(drafter="mtp", num_draft_tokens=3, max_batch_size=1),
        dict(drafter="mtp", num_draft_tokens=3, max_batch_size=3),
    ):
        results = Engine(model, EngineConfig(**cfg)).generate(requests)
        assert [r.token_ids for r in results] == [r.token_ids for r in refs], cfg


def test_bfloat16_with_int8_is_refused(bf16_model):
    with pytest.raises(ValueError, match="int8"):
        apply_format(copy.deepcopy(bf16_model), "bfloat16", "int8")


def test_a_checkpoint_that_does_not_fit_is_refused_with_both_figures(bf16_model, tmp_path, monkeypatch):
    with pytest.raises(MemoryError, match=r"needs 2\.0 GB of memory but only 1\.0 GB is available"):
        check_fits(2_000_000_000, "model", available=1_000_000_000)
    bf16_model.save_pretrained(tmp_path / "m")
    monkeypatch.setattr("jocr.model.formats.memory_available", lambda: 1000)
    with pytest.raises(MemoryError, match="GB is available"):
        load_formatted(tmp_path / "m")
    monkeypatch.undo()
    model = load_formatted(tmp_path / "m", "auto")
    assert isinstance(model.lm_head, PackedLinear)


def test_small_checkpoints_keep_one_exact_fp32_copy_for_long_passes(bf16_model, monkeypatch):
    """A long pass (torch's GEMM) uses a kept fp32 copy equal to the per-call upcast, bit for bit; the copy is
    made once, on the first long pass; checkpoints past FLOAT_COPY_MAX_BYTES (and int8) upcast per call."""
    model = apply_format(copy.deepcopy(bf16_model), "auto")
    packed = [m for m in model.modules() if isinstance(m, PackedLinear)]
    assert packed and all(p.keep_float and p._float is None for p in packed)
    ids = torch.randint(11, 200, (1, kernels.QUERY_MAX + 9), generator=torch.Generator().manual_seed(4))
    with torch.inference_mode():
        kept = model(ids).logits
        layer = model.lm_head
        copy_made = layer._float
        assert copy_made is not None and copy_made.dtype == torch.float32
        assert torch.equal(copy_made, layer.weight.float())
        assert layer.float_weight() is copy_made  # reused, not made again
        plain = copy.deepcopy(model)
        for p in plain.modules():
            if isinstance(p, PackedLinear):
                p.keep_float, p._float = False, None
        assert torch.equal(plain(ids).logits, kept)  # the same bits as upcasting per call
    assert all(p._float is None for p in plain.modules() if isinstance(p, PackedLinear))
    monkeypatch.setattr("jocr.model.formats.FLOAT_COPY_MAX_BYTES", 1000)
    big = apply_format(copy.deepcopy(bf16_model), "auto")
    assert not any(m.keep_float for m in big.modules() if isinstance(m, PackedLinear))
    monkeypatch.undo()
    int8 = apply_format(copy.deepcopy(bf16_model), "float32", "int8")
    assert not any(m.keep_float for m in int8.modules() if isinstance(m, PackedLinear))
