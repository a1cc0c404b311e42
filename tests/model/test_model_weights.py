"""Checkpoint IO: sharded published layout round trip, bf16, clear errors for missing / unexpected keys;
weight-only int8 files (error bound, logits, size, every loader, one-line errors for broken files)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch
from model_helpers import tiny
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from jocr.config import OCRConfig
from jocr.model import OCRModel
from jocr.model.weights import (
    DTYPE_KEY,
    QUANTIZATION_KEY,
    SCALE_SUFFIX,
    CheckpointError,
    empty_model,
    int8_keys,
    parse_size,
)
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


# Weight-only int8 storage ----------------------------------------------------------------------------
def int8_pair(tmp_path, seed: int = 5):
    """A tiny fp32 model saved as bf16 and as int8 -> (model, bf16 dir, int8 dir)."""
    model = OCRModel(tiny()).init_weights(seed=seed).eval()
    model.save_pretrained(tmp_path / "bf16", dtype="bfloat16")
    model.save_pretrained(tmp_path / "int8", dtype="int8")
    return model, tmp_path / "bf16", tmp_path / "int8"


def test_int8_files_hold_int8_matrices_with_row_scales_and_say_so(tmp_path):
    model, bf16, int8 = int8_pair(tmp_path)
    stored = load_file(int8 / "model.safetensors")
    quantized = int8_keys(model)
    assert "lm_head.weight" in quantized and "model.embed_tokens.weight" in quantized
    assert "model.layers.1.mlp.gate.weight" not in quantized  # routers, norms, convs stay bf16
    for key, tensor in stored.items():
        if key in quantized:
            assert tensor.dtype == torch.int8 and stored[key + SCALE_SUFFIX].shape == (tensor.shape[0],)
        elif not key.endswith(SCALE_SUFFIX):
            assert tensor.dtype in (torch.bfloat16, torch.int64, torch.int32, torch.bool), key
    with safe_open(str(int8 / "model.safetensors"), framework="pt") as f:
        assert f.metadata()[QUANTIZATION_KEY] == "int8" and f.metadata()[DTYPE_KEY] == "bfloat16"
    ratio = (int8 / "model.safetensors").stat().st_size / (bf16 / "model.safetensors").stat().st_size
    assert ratio < 0.6  # about half: the tiny model's convolutions and position tables stay bf16
    # loads as bf16, the dtype a bf16 file gives, unless another is asked for
    assert OCRModel.from_pretrained(int8).dtype == torch.bfloat16
    assert OCRModel.from_pretrained(int8, dtype="float32").dtype == torch.float32


def test_int8_round_trip_error_is_at_most_half_a_step_per_row(tmp_path):
    model, _, int8 = int8_pair(tmp_path)
    scales = {k[: -len(SCALE_SUFFIX)]: t for k, t in load_file(int8 / "model.safetensors").items()
              if k.endswith(SCALE_SUFFIX)}  # fmt: skip
    original = model.state_dict()
    loaded = OCRModel.from_pretrained(int8, dtype="float32").state_dict()
    assert set(scales) == int8_keys(model)
    for key, tensor in original.items():
        if key in scales:
            step = scales[key][:, None]  # (N, 1): one step per output row
            assert torch.all((loaded[key] - tensor).abs() <= step / 2 * (1 + 1e-5)), key
            assert torch.allclose(step * 127, tensor.abs().amax(dim=1, keepdim=True))  # symmetric: max -> 127
        elif tensor.is_floating_point():
            assert torch.equal(loaded[key], tensor.to(torch.bfloat16).float()), key


def test_an_int8_model_computes_about_what_the_original_does(tmp_path):
    model, bf16, int8 = int8_pair(tmp_path)
    ids, images = sample_inputs(model.config)
    with torch.no_grad():
        ref = model(ids, images=images).logits
        via_bf16 = OCRModel.from_pretrained(bf16, dtype="float32")(ids, images=images).logits
        via_int8 = OCRModel.from_pretrained(int8, dtype="float32")(ids, images=images).logits
    assert (via_int8 - ref).abs().max() < 0.15 * ref.std()
    assert (via_int8.argmax(-1) == ref.argmax(-1)).float().mean() >= 0.9
    assert not torch.equal(via_int8, via_bf16)  # it did go through int8


def test_an_int8_directory_loads_through_every_entry_point(tmp_path):
    from jocr.model.formats import load_formatted
    from jocr.pipeline import load_model
    from jocr.tokenizer import Tokenizer

    model, _, int8 = int8_pair(tmp_path)
    Tokenizer.byte_level().save(int8 / "tokenizer.json")
    ids, images = sample_inputs(model.config)
    outputs = []
    for dtype, quantize in (("auto", "none"), ("float32", "none"), ("bfloat16", "none"), ("auto", "int8")):
        loaded = load_model(int8, dtype=dtype, quantize=quantize, cache=False)
        with torch.no_grad():
            outputs.append(loaded.model(ids, images=images).logits.float())
        assert loaded.engine(0, 1) is not None
    assert all((out - outputs[0]).abs().max() < 0.05 for out in outputs)
    assert load_formatted(int8).model.embed_tokens.weight.dtype == torch.float32  # auto: fp32 embeddings


def test_sharded_int8_keeps_each_weight_with_its_scale(tmp_path):
    model = OCRModel(tiny()).init_weights(seed=6).eval()
    model.save_pretrained(tmp_path, dtype="int8", max_shard_size="200KB")
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())["weight_map"]
    assert len(set(index.values())) > 2
    assert all(index[k + SCALE_SUFFIX] == index[k] for k in int8_keys(model))
    single = tmp_path / "single"
    model.save_pretrained(single, dtype="int8")
    a, b = OCRModel.from_pretrained(tmp_path).state_dict(), OCRModel.from_pretrained(single).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def rewrite(directory, edit, metadata=None):
    """Load the single file's tensors and metadata, apply `edit(tensors)`, write them back."""
    path = directory / "model.safetensors"
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
    tensors = load_file(path)
    edit(tensors)
    save_file(tensors, path, metadata=meta if metadata is None else metadata)


Q = "lm_head.weight"


@pytest.mark.parametrize(
    "fault, message",
    [
        ("truncated", "not a readable safetensors file"),
        ("no metadata", "is stored as int8 without"),
        ("no scale", "is stored as int8 without"),
        ("short scale", "scales for"),
        ("nan scale", "not a finite float32 vector"),
        ("scale of a float weight", "which is not stored as int8"),
        ("unknown scheme", "unknown jocr.quantization 'int4'"),
        ("unknown dtype", "unknown jocr.dtype 'float8'"),
    ],
)
def test_corrupt_or_mismatched_int8_files_are_one_line_errors(tmp_path, fault, message):
    _, _, int8 = int8_pair(tmp_path)
    path = int8 / "model.safetensors"
    meta = {"format": "pt", QUANTIZATION_KEY: "int8", DTYPE_KEY: "bfloat16"}
    if fault == "truncated":
        path.write_bytes(path.read_bytes()[:1000])
    elif fault == "no metadata":
        rewrite(int8, lambda t: None, metadata={"format": "pt"})
    elif fault == "no scale":
        rewrite(int8, lambda t: t.pop(Q + SCALE_SUFFIX))
    elif fault == "short scale":
        rewrite(int8, lambda t: t.update({Q + SCALE_SUFFIX: t[Q + SCALE_SUFFIX][:-1].clone()}))
    elif fault == "nan scale":
        rewrite(int8, lambda t: t[Q + SCALE_SUFFIX].__setitem__(0, float("nan")))
    elif fault == "scale of a float weight":
        key = "model.layers.1.mlp.gate.weight"
        rewrite(int8, lambda t: t.update({key + SCALE_SUFFIX: torch.ones(t[key].shape[0])}))
    elif fault == "unknown scheme":
        rewrite(int8, lambda t: None, metadata={**meta, QUANTIZATION_KEY: "int4"})
    else:
        rewrite(int8, lambda t: None, metadata={**meta, DTYPE_KEY: "float8"})
    with pytest.raises(CheckpointError, match=re.escape(message)) as info:
        OCRModel.from_pretrained(int8)
    assert "\n" not in str(info.value) and len(str(info.value)) < 400


def test_quantize_command_writes_a_loadable_int8_copy(tmp_path, capsys):
    from jocr.cli import main
    from jocr.tokenizer import Tokenizer

    _, bf16, _ = int8_pair(tmp_path)
    Tokenizer.byte_level().save(bf16 / "tokenizer.json")
    assert main(["model", "quantize", str(bf16), str(tmp_path / "q")]) == 0
    assert "int8 weights" in capsys.readouterr().out
    assert (tmp_path / "q" / "tokenizer.json").read_bytes() == (bf16 / "tokenizer.json").read_bytes()
    assert OCRModel.from_pretrained(tmp_path / "q").dtype == torch.bfloat16
    assert main(["model", "info", "--model", str(tmp_path / "q"), "--json"]) == 0
    [member] = json.loads(capsys.readouterr().out)["members"]
    assert member["name"] == "image" and member["storage"] == "int8"
    assert main(["model", "quantize", str(bf16), str(tmp_path / "q")]) == 2  # not over an existing model
    assert main(["model", "quantize", str(tmp_path / "nothing"), str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("jocr model: error:") for line in err)
