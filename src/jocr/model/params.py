"""Parameter counts, computed on the meta device (nothing is allocated, so the full model costs nothing).

What counts as *active per decoded token* (the "A570M" of DeepSeek3B-MoE-A570M):
- every decoder layer's attention and norms, the dense MLP of the first `first_k_dense_replace` layers,
  each MoE layer's router, its shared experts and `num_experts_per_tok` of its `n_routed_experts` routed
  experts, the final norm and the lm_head (a full matrix product per token);
- not the input embedding table (a row lookup, no multiply-adds), not the vision encoder (it runs once per
  image, not per token) and not the MTP draft head (reported separately as `mtp_active_params`).
"""

from __future__ import annotations

from jocr.config import OCRConfig

VISION_PREFIXES = (
    "model.sam_model.",
    "model.vision_model.",
    "model.projector.",
    "model.image_newline",
    "model.view_seperator",
)


def count_parameters(config: OCRConfig) -> dict[str, int]:
    from jocr.model.ocr import OCRModel
    from jocr.model.weights import empty_model

    model = empty_model(OCRModel, config)
    d = config.decoder
    counts = {
        "vision_params": 0,
        "embedding_params": 0,
        "decoder_layer_params": 0,
        "routed_expert_params": 0,
        "lm_head_params": 0,
        "mtp_params": 0,
    }
    for name, param in model.named_parameters():
        n = param.numel()
        if name.startswith(VISION_PREFIXES):
            counts["vision_params"] += n
        elif name.startswith("model.embed_tokens."):
            counts["embedding_params"] += n
        elif name.startswith("lm_head."):
            counts["lm_head_params"] += n
        elif name.startswith("mtp_module."):
            counts["mtp_params"] += n
        elif ".mlp.experts." in name:
            counts["routed_expert_params"] += n
        else:  # attention, norms, dense MLPs, routers, shared experts, final norm
            counts["decoder_layer_params"] += n
    total = sum(counts.values())
    routed_active = 0
    if d.n_routed_experts:
        routed_active = counts["routed_expert_params"] * d.num_experts_per_tok // d.n_routed_experts
    active = counts["decoder_layer_params"] + routed_active + counts["lm_head_params"]
    # The MTP head shares the lm_head (and embedding) unless configured otherwise; its own block is dense.
    mtp_active = counts["mtp_params"] - sum(
        p.numel() for n, p in model.named_parameters() if n.startswith("mtp_module.") and "embed_tokens" in n
    )
    return {
        "total_params": total,
        "active_params": active,
        "mtp_active_params": mtp_active,
        "routed_expert_active_params": routed_active,
        **counts,
    }
