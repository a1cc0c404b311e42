"""Config presets, JSON IO in both dialects, token counts."""

from __future__ import annotations

import dataclasses
import json

import pytest

from jocr.config import OCRConfig, VisionConfig, from_published_dict

# jina-ocr-v1's published config.json: DeepSeek-OCR's layout plus the MTP fields.
JINA_LANG = {
    "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2, "first_k_dense_replace": 1, "hidden_size": 1280,
    "intermediate_size": 6848, "kv_lora_rank": None, "lm_head": True, "max_position_embeddings": 32768,
    "moe_intermediate_size": 896, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2,
    "num_attention_heads": 10, "num_experts_per_tok": 6, "num_hidden_layers": 12, "num_key_value_heads": 10,
    "q_lora_rank": None, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0, "rm_head": False, "topk_group": 1,
    "topk_method": "greedy", "use_mla": False, "v_head_dim": 0, "vocab_size": 129280, "rope_theta": 1000000,
    "rms_norm_eps": 1e-06, "routed_scaling_factor": 1.0, "scoring_func": "softmax", "norm_topk_prob": False,
}  # fmt: skip
JINA_CONFIG = {
    "architectures": ["DeepseekOCRForCausalLM"],
    "model_type": "deepseek_vl_v2",
    "candidate_resolutions": [[1024, 1024]],
    "global_view_pos": "head",
    "tile_tag": "2D",
    "language_config": JINA_LANG,
    **JINA_LANG,
    "num_nextn_predict_layers": 1,
    "mtp_num_speculative_steps": 3,
    "mtp_recursive": True,
    "projector_config": {
        "input_dim": 2048,
        "model_type": "mlp_projector",
        "n_embed": 1280,
        "projector_type": "linear",
    },
    "vision_config": {
        "image_size": 1024,
        "mlp_ratio": 3.7362,
        "model_name": "deeplip_b_l",
        "model_type": "vision",
        "width": {
            "clip-l-14-224": {"heads": 16, "image_size": 224, "layers": 24, "patch_size": 14, "width": 1024},
            "sam_vit_b": {
                "downsample_channels": [512, 1024],
                "global_attn_indexes": [2, 5, 8, 11],
                "heads": 12,
                "layers": 12,
                "width": 768,
            },
        },
    },  # fmt: skip
}


def test_published_config_maps_to_the_deepseek_ocr_preset():
    assert from_published_dict(JINA_CONFIG) == OCRConfig.preset("deepseek-ocr")


def test_deepseek_ocr_config_without_rope_fields_uses_library_defaults():
    data = json.loads(json.dumps(JINA_CONFIG))
    for section in (data, data["language_config"]):
        del section["rope_theta"], section["rms_norm_eps"]
    del data["num_nextn_predict_layers"]
    config = from_published_dict(data)
    assert config.decoder.rope_theta == 10000.0 and config.decoder.rms_norm_eps == 1e-6
    assert not config.mtp.enabled


def test_published_config_rejects_what_we_cannot_run():
    for patch in ({"use_mla": True}, {"topk_method": "noaux_tc"}, {"tile_tag": "1D"}):
        with pytest.raises(ValueError):
            from_published_dict({**JINA_CONFIG, **patch})


@pytest.mark.parametrize("name", ["deepseek-ocr", "tiny"])
def test_presets_round_trip(tmp_path, name):
    config = OCRConfig.preset(name)
    path = config.save(tmp_path)
    assert path.name == "config.json"
    assert OCRConfig.load(tmp_path) == config
    assert OCRConfig.from_dict(config.to_dict()) == config


def test_tiny_preset_is_small_and_vllm_friendly():
    config = OCRConfig.preset("tiny")
    assert config.decoder.head_dim >= 32 and config.decoder.num_hidden_layers == 2
    assert config.decoder.n_routed_experts == 4
    assert config.image_token_count() == 4 * 5 + 1


def test_token_counts_of_the_published_layout():
    config = OCRConfig.preset("deepseek-ocr")
    assert config.vision.compress_factor == 4 and config.vision.feature_dim == 2048
    assert config.image_token_count() == 273
    assert config.image_token_count((2, 2), True) == 273 + 20 * 21
    assert config.image_token_count((3, 1), True) == 273 + 10 * 31
    small = dataclasses.replace(config.vision, base_size=640, crop_mode=False, single_view_fit="resize")
    assert count_for(small) == 10 * 11 + 1


def count_for(vision: VisionConfig) -> int:
    return dataclasses.replace(OCRConfig.preset("deepseek-ocr"), vision=vision).image_token_count()


def test_bad_configs_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown key"):
        OCRConfig.from_dict({"model_type": "jocr", "decoder": {"hidden": 3}})
    with pytest.raises(ValueError, match="feedback"):
        OCRConfig.from_dict({"model_type": "jocr", "mtp": {"feedback": "sideways"}})
    with pytest.raises(ValueError, match="unknown preset"):
        OCRConfig.preset("huge")
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(ValueError, match="invalid JSON"):
        OCRConfig.load(tmp_path)
