"""Shared by the `jocr export hf` tests: a sample page, a jocr-free subprocess, a published-layout model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from jocr.config import from_published_dict
from jocr.model.ocr import OCRModel
from jocr.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
SAMPLE_PDF = ROOT / "samples" / "sample.pdf"

# Makes jocr unimportable (installed or not): what a user without jocr has.
BLOCK_JOCR = """\
import importlib.abc, sys
class _NoJocr(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "jocr" or name.startswith("jocr."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _NoJocr())
"""


# The exported model and jocr both compute in float32 (the export's default dtype, jocr's CPU default), so
# their logits differ only by summation order (measured: 0 on the bundled models' pages, teacher-forced;
# fp32 rounding is ~1e-6 of logits of magnitude ~20).
LOGIT_TOLERANCE = 1e-3


def path_logits(network, prompt_ids, views, tokens) -> torch.Tensor:
    """(len(tokens) + 1, V) float32 logits predicting each token of a greedy path and the one after it, in one
    teacher-forced pass of a jocr `OCRModel`."""
    with torch.inference_mode():
        seq = torch.tensor([list(prompt_ids) + list(tokens)])
        return network(seq, images=[[views]]).logits[0, len(prompt_ids) - 1 :].float()


def assert_greedy_path_decided(ours, theirs, prompt_ids, views, tokens) -> None:
    """The two networks' logits agree to LOGIT_TOLERANCE along the greedy path `tokens` (and the step after
    it), and every choice on it is wider than twice that: the two computations' greedy tokens are then equal
    by arithmetic, whatever their summation order, so comparing them exactly is deterministic."""
    a = path_logits(ours, prompt_ids, views, tokens)
    b = path_logits(theirs, prompt_ids, views, tokens)
    assert (a - b).abs().max().item() <= LOGIT_TOLERANCE
    best2 = b.topk(2, dim=-1).values
    assert (best2[:, 0] - best2[:, 1]).min().item() > 2 * LOGIT_TOLERANCE


def sample_page(path: Path) -> Path:
    """Page 1 of the bundled sample PDF at 144 dpi (the bundled model's training size), as a PNG."""
    from jocr.documents.pages import open_source

    with open_source(SAMPLE_PDF) as src:
        src.render(0).save(path)
    return path


def run_without_jocr(code: str, cwd: Path, python: str | None = None, timeout: int = 900, env=None):
    """Run `code` in a fresh interpreter where jocr cannot be imported; returns the CompletedProcess."""
    script = cwd / "snippet.py"
    script.write_text(BLOCK_JOCR + "\n" + code)
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("VLLM_")}
    environ.update({"HF_HOME": str(cwd / "hf_home"), "HF_HUB_OFFLINE": "1", **(env or {})})
    return subprocess.run(
        [python or sys.executable, str(script)],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# DeepSeek-OCR's config.json naming (tests/model/test_model_config.py has the full-size one), tiny sizes and
# no image_token_id: like the published file, the `<image>` id must come from the tokenizer.
TINY_LANG = {
    "vocab_size": 300, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
    "num_key_value_heads": 2, "max_position_embeddings": 1024, "first_k_dense_replace": 1,
    "intermediate_size": 128, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "n_shared_experts": 1, "topk_method": "greedy", "scoring_func": "softmax", "use_mla": False,
    "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2, "rope_theta": 10000,
}  # fmt: skip
TINY_PUBLISHED = {
    "architectures": ["DeepseekOCRForCausalLM"],
    "model_type": "deepseek_vl_v2",
    "tile_tag": "2D",
    "language_config": TINY_LANG,
    **TINY_LANG,
    "num_nextn_predict_layers": 1,
    "projector_config": {"input_dim": 128, "n_embed": 64, "projector_type": "linear"},
    "vision_config": {
        "image_size": 128,
        "width": {
            "clip-l-14-224": {"heads": 2, "image_size": 224, "layers": 1, "patch_size": 14, "width": 64},
            "sam_vit_b": {
                "downsample_channels": [32, 64],
                "global_attn_indexes": [0],
                "heads": 2,
                "layers": 1,
                "width": 32,
            },
        },
    },  # fmt: skip
}


def published_checkpoint(path: Path, seed: int = 0) -> Path:
    """A tiny checkpoint in the published layout: DeepSeek-OCR's config naming without image_token_id, a
    tokenizer whose `<image>` is id 3 (not the published 128815), bfloat16 tensors with float32 routers (as
    the published checkpoint stores them), and the persistent buffers reference exports carry."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(TINY_PUBLISHED, indent=2))
    Tokenizer.byte_level().save(path / "tokenizer.json")
    config = from_published_dict({**TINY_PUBLISHED, "image_token_id": 3})
    model = OCRModel(config).init_weights(seed=seed)
    tensors = {}
    for key, tensor in model.state_dict().items():
        keep = key.endswith("mlp.gate.weight")
        tensors[key] = tensor.detach().to(torch.float32 if keep else torch.bfloat16).contiguous()
    tensors["model.vision_model.embeddings.position_ids"] = torch.arange(257)[None]
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    return path
