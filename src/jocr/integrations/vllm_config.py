"""Hugging Face config classes that let vLLM read jocr checkpoints (needs `transformers`, which vLLM brings).

A jocr checkpoint's `config.json` is jocr's own layout (`{"model_type": "jocr", "vision": ..., "decoder": ...,
"mtp": ...}`, written by `OCRConfig.save`). vLLM loads configs through `transformers.AutoConfig`, so
`register()` registers `JocrVllmConfig` under model type "jocr". The class keeps jocr's nested sections as
plain dicts (in `jocr_sections`) and repeats the decoder's fields at top level (hidden_size, head_dim, ...)
because vLLM sizes its KV cache and checks attention head sizes from those names.

The published DeepSeek-OCR / jina-ocr-v1 naming (model type "deepseek_vl_v2") is vLLM's own config class;
`ocr_config_from_hf` turns either into a validated `jocr.config.OCRConfig`.
"""

from __future__ import annotations

from typing import Any

from transformers import DeepseekV2Config, PretrainedConfig

from jocr.config import OCRConfig, from_published_dict, with_tokenizer_image_id

TARGET_ARCH = "JocrOCRForCausalLM"
# vLLM names an EAGLE draft "Eagle" + the target architecture (vllm/transformers_utils/configs/eagle.py).
DRAFT_ARCH = "Eagle" + TARGET_ARCH
# A published DeepSeek-OCR-layout checkpoint keeps its own architecture name in config.json; vLLM derives the
# draft name from it, so the FastMTP head of such a checkpoint is registered under this name too.
PUBLISHED_DRAFT_ARCH = "EagleDeepseekOCRForCausalLM"

_SECTIONS = ("vision", "decoder", "mtp", "anchor")
_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "image_token_id")


class JocrVllmConfig(PretrainedConfig):
    """jocr's `config.json` as a transformers config (model type "jocr")."""

    model_type = "jocr"

    def __init__(
        self,
        vision: dict[str, Any] | None = None,
        decoder: dict[str, Any] | None = None,
        mtp: dict[str, Any] | None = None,
        anchor: dict[str, Any] | None = None,
        image_token_id: int = 128815,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("architectures", [TARGET_ARCH])
        defaults = OCRConfig().to_dict()
        # `anchor`: how the model reads a PDF page's text layer (version 0: it does not), which the exported
        # model's `infer` follows.
        given = {"vision": vision, "decoder": decoder, "mtp": mtp, "anchor": anchor}
        # One attribute, not `decoder`: transformers' get_text_config() would take an attribute named
        # "decoder" for a nested text config.
        self.jocr_sections = {k: dict(v if v is not None else defaults[k]) for k, v in given.items()}
        self.image_token_id = int(image_token_id)
        # vLLM's speculative proposer copies the target's `image_token_index` onto the draft's config.
        self.image_token_index = self.image_token_id
        d = self.jocr_sections["decoder"]
        # Flat text fields for vLLM (ModelConfig.get_head_size, get_num_kv_heads, max_model_len, ...).
        self.vocab_size = int(d["vocab_size"])
        self.hidden_size = int(d["hidden_size"])
        self.num_hidden_layers = int(d["num_hidden_layers"])
        self.num_attention_heads = int(d["num_attention_heads"])
        self.num_key_value_heads = int(d["num_key_value_heads"])
        self.head_dim = int(d["head_dim"])
        self.max_position_embeddings = int(d["max_position_embeddings"])
        self.rms_norm_eps = float(d["rms_norm_eps"])
        self.rope_parameters = {"rope_type": "default", "rope_theta": float(d["rope_theta"])}
        # vLLM sets up its expert-parallel group only when the top-level config names routed experts.
        self.n_routed_experts = int(d["n_routed_experts"])
        self.num_experts_per_tok = int(d["num_experts_per_tok"])
        self.tie_word_embeddings = False
        super().__init__(**kwargs)

    def to_ocr_config(self) -> OCRConfig:
        data = {name: self.jocr_sections[name] for name in _SECTIONS}
        for name in _TOKEN_IDS:
            data[name] = getattr(self, name)
        return OCRConfig.from_dict({"model_type": "jocr", **data})

    def get_text_config(self, decoder: bool | None = None, encoder: bool | None = None) -> JocrVllmConfig:
        return self


def ocr_config_from_hf(hf_config: Any) -> OCRConfig:
    """The `OCRConfig` behind a vLLM hf_config: jocr's own, an EAGLE wrapper of it or the published naming."""
    inner = getattr(hf_config, "model", None)  # vLLM's EAGLEConfig keeps the draft's own config here
    if isinstance(inner, PretrainedConfig):
        hf_config = inner
    if isinstance(hf_config, JocrVllmConfig):
        return hf_config.to_ocr_config()
    data = hf_config.to_dict()
    if "language_config" not in data and hasattr(hf_config, "text_config"):
        data["language_config"] = hf_config.text_config.to_dict()
    # vLLM loads the config with the checkpoint directory as its name_or_path; the tokenizer there names
    # `<image>` where the published config.json does not.
    directory = getattr(hf_config, "name_or_path", None)
    if directory:
        data = with_tokenizer_image_id(data, directory)
    return from_published_dict(data)


def text_config_for(config: OCRConfig) -> DeepseekV2Config:
    """The decoder as vLLM's DeepSeek-V2 model reads it: plain multi-head attention (no MLA: both qk head dims
    0, as DeepSeek-OCR's language_config has them), softmax scores, greedy top-k over one expert group."""
    d = config.decoder
    if d.head_dim * d.num_attention_heads != d.hidden_size:
        # vLLM's DeepSeek MHA path derives head_dim as hidden_size // num_heads.
        raise ValueError(
            f"vLLM needs head_dim * num_attention_heads == hidden_size ({d.head_dim} * "
            f"{d.num_attention_heads} != {d.hidden_size})"
        )
    moe = d.n_routed_experts > 0
    text = DeepseekV2Config(
        architectures=["DeepseekV2ForCausalLM"],
        vocab_size=d.vocab_size,
        hidden_size=d.hidden_size,
        intermediate_size=d.intermediate_size,
        num_hidden_layers=d.num_hidden_layers,
        num_attention_heads=d.num_attention_heads,
        num_key_value_heads=d.num_key_value_heads,
        hidden_act="silu",
        max_position_embeddings=d.max_position_embeddings,
        rms_norm_eps=d.rms_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": float(d.rope_theta)},
        qk_nope_head_dim=0,
        qk_rope_head_dim=0,
        v_head_dim=0,
        q_lora_rank=None,
        first_k_dense_replace=d.first_k_dense_replace if moe else d.num_hidden_layers,
        n_routed_experts=max(d.n_routed_experts, 1),
        num_experts_per_tok=d.num_experts_per_tok if moe else 1,
        moe_intermediate_size=d.moe_intermediate_size,
        n_shared_experts=d.n_shared_experts,
        routed_scaling_factor=d.routed_scaling_factor,
        norm_topk_prob=d.norm_topk_prob,
        topk_method="greedy",
        scoring_func="softmax",
        n_group=1,
        topk_group=1,
        tie_word_embeddings=False,
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
    )
    if d.n_shared_experts == 0:
        # vLLM's DeepseekV2MoE reads "no shared experts" as None, which the strict transformers field (an int)
        # refuses; write past the validator.
        text.__dict__["n_shared_experts"] = None
    return text
