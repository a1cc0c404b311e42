"""Decoder parity against transformers' DeepseekV2ForCausalLM (MoE, dense MLP, norms, lm_head) with its
attention swapped for the plain multi-head attention + rotate-half RoPE that DeepSeek-OCR uses (transformers'
DeepseekOcr2 text attention), plus MoE grouped compute vs a naive every-expert reference, and the cache."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from model_helpers import make_cache

from jocr.config import DecoderConfig, OCRConfig
from jocr.model import OCRModel
from jocr.model.decoder import MoE

transformers = pytest.importorskip("transformers")

DEC = DecoderConfig(
    vocab_size=300,
    hidden_size=64,
    num_hidden_layers=3,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=32,
    rope_theta=1e6,
    max_position_embeddings=512,
    rms_norm_eps=1e-6,
    first_k_dense_replace=1,
    intermediate_size=96,
    n_routed_experts=8,
    num_experts_per_tok=3,
    moe_intermediate_size=32,
    n_shared_experts=2,
)


def text_model(decoder: DecoderConfig = DEC) -> OCRModel:
    config = dataclasses.replace(OCRConfig.preset("tiny"), decoder=decoder, image_token_id=3)
    config = dataclasses.replace(
        config, vision=dataclasses.replace(config.vision, projector_dim=decoder.hidden_size)
    )
    return OCRModel(config).init_weights(std=0.1, seed=1).eval()


def hf_reference(decoder: DecoderConfig):
    from transformers import DeepseekV2Config, DeepseekV2ForCausalLM
    from transformers.models.deepseek_ocr2.configuration_deepseek_ocr2 import DeepseekOcr2TextConfig
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import (
        DeepseekOcr2TextAttention,
        DeepseekOcr2TextRotaryEmbedding,
    )

    common = dict(
        vocab_size=decoder.vocab_size,
        hidden_size=decoder.hidden_size,
        intermediate_size=decoder.intermediate_size,
        num_hidden_layers=decoder.num_hidden_layers,
        num_attention_heads=decoder.num_attention_heads,
        num_key_value_heads=decoder.num_key_value_heads,
        head_dim=decoder.head_dim,
        max_position_embeddings=decoder.max_position_embeddings,
        rms_norm_eps=decoder.rms_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": decoder.rope_theta},
        n_routed_experts=decoder.n_routed_experts,
        num_experts_per_tok=decoder.num_experts_per_tok,
        moe_intermediate_size=decoder.moe_intermediate_size,
        n_shared_experts=decoder.n_shared_experts,
        routed_scaling_factor=decoder.routed_scaling_factor,
        topk_method="greedy",
        n_group=1,
        topk_group=1,
    )
    hf_config = DeepseekV2Config(
        **common,
        first_k_dense_replace=decoder.first_k_dense_replace,
        q_lora_rank=None,
        kv_lora_rank=16,
        qk_nope_head_dim=0,
        qk_rope_head_dim=decoder.head_dim,
        v_head_dim=decoder.head_dim,
        norm_topk_prob=False,
    )
    hf_config._attn_implementation = "eager"
    hf = DeepseekV2ForCausalLM(hf_config).eval()
    mha_config = DeepseekOcr2TextConfig(**common)
    mha_config._attn_implementation = "eager"
    hf.model.rotary_emb = DeepseekOcr2TextRotaryEmbedding(mha_config)
    for i, layer in enumerate(hf.model.layers):
        layer.self_attn = DeepseekOcr2TextAttention(mha_config, i)
    return hf


def copy_into_hf(ours: OCRModel, hf) -> None:
    """Map our (published-layout) weights into transformers' layout, incl. its fused 3-D expert tensors."""
    sd = ours.state_dict()
    target = hf.state_dict()
    with torch.no_grad():
        for key, param in target.items():
            if key.endswith("mlp.experts.gate_up_proj"):
                prefix = key[: -len("gate_up_proj")]
                for e in range(param.shape[0]):
                    gate, up = sd[f"{prefix}{e}.gate_proj.weight"], sd[f"{prefix}{e}.up_proj.weight"]
                    param[e].copy_(torch.cat([gate, up], dim=0))
            elif key.endswith("mlp.experts.down_proj"):
                prefix = key[: -len("down_proj")]
                for e in range(param.shape[0]):
                    param[e].copy_(sd[f"{prefix}{e}.down_proj.weight"])
            else:
                param.copy_(sd[key])


@pytest.mark.parametrize("kv_heads", [2, 1])  # plain multi-head (published) and grouped-query attention
def test_decoder_matches_transformers_deepseek_v2(kv_heads):
    decoder = dataclasses.replace(DEC, num_key_value_heads=kv_heads)
    ours = text_model(decoder)
    hf = hf_reference(decoder)
    copy_into_hf(ours, hf)
    ids = torch.randint(4, DEC.vocab_size, (2, 37), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = hf(input_ids=ids).logits.float()
        got = ours(ids).logits
    assert got.shape == expected.shape == (2, 37, DEC.vocab_size)
    assert expected.abs().max() > 1e-2  # a real signal, not all zeros
    assert (got - expected).abs().max().item() <= 1e-4


def naive_moe(moe: MoE, x: torch.Tensor) -> torch.Tensor:
    """Every expert on every token, weighted by a dense (N, E) routing matrix."""
    weights, indices = moe.route(x)
    dense = torch.zeros(x.shape[0], moe.num_experts).scatter(1, indices, weights)  # (N, E)
    out = torch.zeros_like(x)
    for e, expert in enumerate(moe.experts):
        out = out + dense[:, e : e + 1] * expert(x)
    return out + moe.shared_experts(x)


def test_moe_grouped_equals_every_expert_reference():
    moe = text_model().model.layers[1].mlp
    assert isinstance(moe, MoE)
    x = torch.randn(2, 50, DEC.hidden_size)
    with torch.no_grad():
        assert (moe(x) - naive_moe(moe, x.reshape(-1, DEC.hidden_size)).view_as(x)).abs().max() < 1e-5


def test_moe_runs_only_chosen_experts():
    moe = text_model().model.layers[1].mlp
    seen = []
    for e, expert in enumerate(moe.experts):
        expert.register_forward_hook(lambda mod, inp, out, e=e: seen.append((e, inp[0].shape[0])))
    x = torch.randn(1, DEC.hidden_size)
    with torch.no_grad():
        _, indices = moe.route(x)
        moe(x)
    assert sorted(e for e, _ in seen) == sorted(indices[0].tolist())
    assert all(n == 1 for _, n in seen)


def test_cache_prefill_then_decode_matches_full_forward():
    model = text_model()
    ids = torch.randint(4, DEC.vocab_size, (2, 20), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        full = model(ids).logits
        cache = make_cache(model.config, batch=2, max_len=32)
        pos = torch.arange(20).expand(2, 20)
        pre = model(ids[:, :12], positions=pos[:, :12], cache=cache).logits
        steps = [
            model(ids[:, t : t + 1], positions=pos[:, t : t + 1], cache=cache).logits for t in range(12, 20)
        ]
    got = torch.cat([pre, *steps], dim=1)
    assert (got - full).abs().max() < 1e-4


def test_rollback_by_rewriting_slots():
    """A rejected draft is rolled back by overwriting its slot: the result matches a clean run."""
    model = text_model()
    ids = torch.randint(4, DEC.vocab_size, (1, 10), generator=torch.Generator().manual_seed(6))
    pos = torch.arange(10)[None]
    with torch.no_grad():
        clean = model(ids, positions=pos).logits[:, -1]
        cache = make_cache(model.config, batch=1, max_len=16)
        model(ids[:, :9], positions=pos[:, :9], cache=cache)
        wrong = ids[:, 9:] * 0 + 7
        model(wrong, positions=pos[:, 9:], cache=cache)
        redo = model(ids[:, 9:], positions=pos[:, 9:], cache=cache).logits[:, -1]
    assert (redo - clean).abs().max() < 1e-4


def test_num_logits_to_keep():
    model = text_model()
    ids = torch.randint(4, DEC.vocab_size, (1, 9))
    with torch.no_grad():
        full = model(ids)
        last = model(ids, num_logits_to_keep=1)
    assert last.logits.shape == (1, 1, DEC.vocab_size)
    assert torch.allclose(last.logits[:, 0], full.logits[:, -1], atol=1e-5)
    assert last.hidden_states.shape == full.hidden_states.shape


def test_router_scores_a_row_the_same_alone_and_beside_others():
    # At the published width (64 experts x 1280) a batched fp32 product differs in the last bit between 1-3
    # rows and more; routing must not, or speculation (a verify pass of k + 1 positions) or batching could
    # change which experts a position takes, and so a greedy token.
    from jocr.config import DecoderConfig
    from jocr.model.decoder import ROW_INVARIANT_MAX_ROWS, Router

    torch.manual_seed(0)
    config = DecoderConfig(hidden_size=1280, n_routed_experts=64, num_experts_per_tok=6)
    router = Router(config)
    torch.nn.init.normal_(router.weight, std=0.02)
    x = torch.randn(ROW_INVARIANT_MAX_ROWS, 1280)
    alone = torch.cat([router.logits(x[i : i + 1]) for i in range(len(x))])
    for n in (2, 3, 4, 8, 32, ROW_INVARIANT_MAX_ROWS):
        assert torch.equal(router.logits(x[:n]), alone[:n]), n
    weights, indices = router(x[:4])
    assert torch.equal(indices, torch.cat([router(x[i : i + 1])[1] for i in range(4)]))
    # longer passes (prompts) keep the batched product, within float32 rounding of the same scores
    long = torch.randn(ROW_INVARIANT_MAX_ROWS + 1, 1280)
    assert torch.allclose(router.logits(long)[:4], router.logits(long[:4]), atol=1e-4)
