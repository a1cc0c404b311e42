"""`--device cuda`: without CUDA a one-line error (runs everywhere); with CUDA (marked `gpu`, skipped on a
machine without one) the bundled model parses the sample on the device, speculation gives the tokens of plain
greedy decoding there, and the engine's tokens equal the naive greedy oracle's on the same device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "sample.pdf"
MODELS = ROOT / "models"
MAX_TOKENS = 48
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_cuda_without_a_device_is_a_one_line_error(tmp_path, parse_cli, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the same answer on a machine with one
    code, err = parse_cli([str(SAMPLE), "-o", str(tmp_path), "--device", "cuda"])
    assert code != 0
    assert "CUDA is not available" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.gpu
@needs_cuda
def test_sample_on_cuda_speculation_equals_plain_greedy():
    import jocr
    from jocr.pipeline import load_model

    model = load_model(MODELS, device="cuda")
    plain = jocr.parse(SAMPLE, model=model, spec=0, max_tokens=MAX_TOKENS, ocr="none")
    drafted = jocr.parse(SAMPLE, model=model, spec="auto", max_tokens=MAX_TOKENS, ocr="none")
    assert all(p.num_tokens > 0 and p.error is None for p in plain.pages)
    assert [p.raw for p in drafted.pages] == [p.raw for p in plain.pages]


@pytest.mark.gpu
@needs_cuda
def test_engine_on_cuda_equals_the_naive_oracle():
    from jocr.documents.pages import open_source
    from jocr.engine.generate import naive_generate
    from jocr.engine.requests import GenerationRequest
    from jocr.layout.request import PageRequestBuilder
    from jocr.pipeline import load_model

    loaded = load_model(MODELS, device="cuda")
    with open_source(SAMPLE) as src:
        image = src.render(0)
    page = PageRequestBuilder(loaded.tokenizer, loaded.model.config.vision).page(image)
    req = GenerationRequest(prompt_ids=page.prompt_ids, images=[page.views], max_tokens=MAX_TOKENS)
    oracle = naive_generate(loaded.model, req, eos_id=loaded.tokenizer.eos_id)
    [result] = loaded.engine(spec=0).generate([req])
    assert result.token_ids == oracle.token_ids
