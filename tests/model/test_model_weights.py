"""Checkpoint IO: sharded published layout round trip, bf16, clear errors for missing / unexpected keys."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from model_helpers import tiny
from safetensors.torch import load_file, save_file

from jocr.config import OCRConfig
from jocr.model import OCRModel
from jocr.model.weights import CheckpointError, empty_model, parse_size
from jocr.types import PageViews


def sample_inputs(config: OCRConfig):
    v = config.vision
    g = torch.Generator().manual_seed(0)
    pv = PageViews(torch.randn(3, v.base_size, v.base_size, generator=g), None, (1, 1))
    n = config.image_token_count()
    ids = torch.cat([torch.tensor([0]), torch.full((n,), config.image_token_id), torch.arange(10, 20)])[None]
    return ids, [[pv]]


def test_sharded_round_trip_gives_identical_logits(tmp_path):
    config = tiny()
    model = OCRModel(config).init_weights(seed=1).eval()
    model.save_pretrained(tmp_path, max_shard_size="300KB")
    shards = sorted(p.name for p in tmp_path.glob("model-*.safetensors"))
    assert len(shards) > 2 and shards[0] == f"model-00001-of-{len(shards):05d}.safetensors"
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert set(index["weight_map"]) == set(model.state_dict())
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "jocr"
    loaded = OCRModel.from_pretrained(tmp_path)
    ids, images = sample_inputs(config)
    with torch.no_grad():
        a = model(ids, images=images)
        b = loaded(ids, images=images)
        ma = model.mtp_step(a.hidden_states[:, :-1], ids[:, 1:], torch.arange(ids.shape[1] - 1)[None])
        mb = loaded.mtp_step(b.hidden_states[:, :-1], ids[:, 1:], torch.arange(ids.shape[1] - 1)[None])
    assert torch.equal(a.logits, b.logits)
    assert torch.equal(ma.logits, mb.logits)


def test_single_file_bf16(tmp_path):
    model = OCRModel(tiny()).init_weights(seed=2).eval()
    model.save_pretrained(tmp_path, dtype=torch.bfloat16)
    assert (tmp_path / "model.safetensors").is_file()
    assert load_file(tmp_path / "model.safetensors")["lm_head.weight"].dtype == torch.bfloat16
    loaded = OCRModel.from_pretrained(tmp_path)
    assert loaded.dtype == torch.bfloat16
    as_fp32 = OCRModel.from_pretrained(tmp_path, dtype="float32")
    assert as_fp32.dtype == torch.float32
    ids, images = sample_inputs(model.config)
    with torch.no_grad():
        out = loaded(ids, images=images)
    assert out.logits.dtype == torch.float32 and torch.isfinite(out.logits).all()


def test_missing_key_is_named(tmp_path):
    model = OCRModel(tiny()).init_weights(seed=3)
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    del tensors["model.layers.1.mlp.experts.2.up_proj.weight"]
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(
        CheckpointError, match=r"missing key\(s\): model\.layers\.1\.mlp\.experts\.2\.up_proj"
    ):
        OCRModel.from_pretrained(tmp_path)


def test_unexpected_key_and_shape_mismatch_are_named(tmp_path):
    model = OCRModel(tiny()).init_weights(seed=3)
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["model.layers.7.mlp.gate.weight"] = torch.zeros(2, 2)
    tensors["model.vision_model.embeddings.position_ids"] = torch.arange(17)[
        None
    ]  # reference buffer: ignored
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"unexpected key\(s\): model\.layers\.7\.mlp\.gate\.weight"):
        OCRModel.from_pretrained(tmp_path)
    del tensors["model.layers.7.mlp.gate.weight"]
    tensors["model.norm.weight"] = torch.ones(7)
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"model\.norm\.weight has shape \(7,\)"):
        OCRModel.from_pretrained(tmp_path)


def test_missing_files_are_clear_errors(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        OCRModel.from_pretrained(tmp_path / "nope")
    OCRConfig.preset("tiny").save(tmp_path)
    with pytest.raises(CheckpointError, match="model.safetensors"):
        OCRModel.from_pretrained(tmp_path)


def test_published_config_json_loads_and_builds(tmp_path):
    """A DeepSeek-OCR style config.json (language fields nested and repeated at top level) with tiny sizes."""
    lang = {
        "vocab_size": 400, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 2, "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 4,
        "num_experts_per_tok": 2, "n_shared_experts": 2, "first_k_dense_replace": 1, "topk_method": "greedy",
        "use_mla": False, "q_lora_rank": None, "kv_lora_rank": None, "bos_token_id": 0, "eos_token_id": 1,
    }  # fmt: skip
    data = {
        "model_type": "deepseek_vl_v2",
        "tile_tag": "2D",
        "global_view_pos": "head",
        "language_config": lang,
        **lang,
        "image_token_id": 300,
        "projector_config": {"input_dim": 64, "n_embed": 64, "projector_type": "linear"},
        "vision_config": {
            "image_size": 128,
            "width": {
                "clip-l-14-224": {"heads": 2, "image_size": 8, "layers": 1, "patch_size": 2, "width": 32},
                "sam_vit_b": {
                    "downsample_channels": [16, 32],
                    "global_attn_indexes": [1],
                    "heads": 1,
                    "layers": 2,
                    "width": 32,
                },
            },
        },  # fmt: skip
    }
    (tmp_path / "config.json").write_text(json.dumps(data))
    config = OCRConfig.load(tmp_path)
    assert config.decoder.head_dim == 32 and config.decoder.rope_theta == 10000.0  # library defaults
    assert config.vision.clip_depth == 1 and config.vision.compressor_channels == (16, 32)
    assert config.mtp.enabled is False  # no num_nextn_predict_layers
    assert config.vision.patch_size == 16 and config.vision.base_size == 128
    assert parse_size("2GB") == 2 * 10**9 and parse_size("1KiB") == 1024


def test_mixed_precision_checkpoint_loads_in_one_dtype(tmp_path):
    """Router weights kept in float32 beside bf16 tensors (as some exports do) still give a bf16 model."""
    model = OCRModel(tiny()).init_weights(seed=4).eval()
    model.save_pretrained(tmp_path, dtype=torch.bfloat16)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["model.layers.1.mlp.gate.weight"] = tensors["model.layers.1.mlp.gate.weight"].float()
    save_file(tensors, tmp_path / "model.safetensors")
    loaded = OCRModel.from_pretrained(tmp_path)
    assert {p.dtype for p in loaded.parameters()} == {torch.bfloat16}
    ids, images = sample_inputs(loaded.config)
    with torch.no_grad():
        assert torch.isfinite(loaded(ids, images=images).logits).all()


def test_empty_model_has_the_built_model_s_tensors_on_the_meta_device():
    config = tiny()
    built, empty = OCRModel(config), empty_model(OCRModel, config)
    shapes = {k: (tuple(t.shape), t.dtype) for k, t in built.state_dict().items()}
    assert {k: (tuple(t.shape), t.dtype) for k, t in empty.state_dict().items()} == shapes
    assert all(t.is_meta for t in empty.state_dict().values())
    assert not any(t.is_meta for t in OCRModel(config).state_dict().values())  # the mode ends with the build
    assert torch.equal(OCRModel(config).model.norm.weight, torch.ones(config.decoder.hidden_size))


# In a new interpreter (an earlier test may have imported torch._dynamo already): load both bundled models,
# as `jocr parse` does (load_formatted, format "auto") and as stored (load_pretrained), compare every tensor
# with the checkpoint's bytes, and say whether torch._dynamo was imported on the way.
LOAD_AND_COMPARE = """
import sys, torch
from safetensors.torch import load_file
from jocr.model import OCRModel
from jocr.model.formats import load_formatted
from jocr.model.weights import load_pretrained
from jocr.pipeline.model import anchored_member, bundled_model_dir
root = bundled_model_dir()
for directory in (root, anchored_member(root)):
    stored = load_file(directory / "model.safetensors")
    plain = load_pretrained(OCRModel, directory).state_dict()
    formatted = load_formatted(directory).state_dict()
    assert set(plain) == set(formatted) == set(stored), directory
    for key, tensor in stored.items():
        assert plain[key].dtype == tensor.dtype and torch.equal(plain[key], tensor), key
        assert torch.equal(formatted[key].to(tensor.dtype), tensor), key  # upcasts are exact
        assert torch.equal(formatted[key].float(), tensor.float()), key
print("dynamo" if "torch._dynamo" in sys.modules else "no dynamo")
"""


def test_bundled_models_load_bit_identically_without_importing_dynamo():
    out = subprocess.run(
        [sys.executable, "-c", LOAD_AND_COMPARE], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "no dynamo"
