"""Suite-wide rule: a test that skips fails, unless it is marked `vllm` or `gpu` (the only things a CPU
clone may lack). Data the tests need lives in tests/data; system packages come from scripts/setup.sh.
Also the fixtures tests of several folders share: `model_dir`, a tiny random checkpoint, and `never_stops`."""

from __future__ import annotations

import pytest

ALLOWED_SKIP_MARKERS = ("vllm", "gpu")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    if any(item.get_closest_marker(name) for name in ALLOWED_SKIP_MARKERS):
        return
    report.outcome = "failed"
    report.longrepr = f"skipped without a vllm or gpu marker: {_skip_reason(report)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.skipped:  # e.g. a module-level importorskip: the whole file would vanish from the run
        report.outcome = "failed"
        report.longrepr = f"{collector.nodeid}: skipped at collection: {_skip_reason(report)}"


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    """A tiny random checkpoint directory (config.json, model.safetensors, byte-level tokenizer.json): real
    loading and pipeline, garbage text. Read only: tests that change a checkpoint write their own."""
    from jocr.config import tiny_config
    from jocr.model import OCRModel
    from jocr.tokenizer import Tokenizer

    path = tmp_path_factory.mktemp("tiny-model")
    OCRModel(tiny_config()).init_weights(seed=0).save_pretrained(path)
    Tokenizer.byte_level().save(path / "tokenizer.json")
    return path


@pytest.fixture
def never_stops(monkeypatch):
    """Generation requests made without stop ids, stop strings or a stop test: a reading of the random
    `model_dir` checkpoint (greedy or sampled, from any image) always runs to its token limit, where it
    could otherwise hit its EOS token by chance. Every request path builds its requests through
    `jocr.engine.requests.GenerationRequest` at call time, so patching it there reaches them all."""
    from jocr.engine import requests

    made = requests.GenerationRequest

    def unstoppable(*args, **fields):
        return made(*args, **{**fields, "stop_token_ids": (), "stop_strings": (), "stop_when": None})

    monkeypatch.setattr(requests, "GenerationRequest", unstoppable)


@pytest.fixture
def tiny_formula_reader():
    """A factory of tiny random formula readers (`jocr.model.formula_reader`), eval mode, seeded: printable
    ASCII and two commands as vocabulary."""
    import torch

    from jocr.model.formula_reader import SPECIALS, FormulaReader, FormulaReaderConfig

    def make(seed: int = 0):
        torch.manual_seed(seed)
        vocab = [*SPECIALS, *(chr(c) for c in range(32, 127)), "\\frac", "\\alpha"]
        cfg = FormulaReaderConfig(dim=32, heads=2, ffn=64, encoder_layers=1, decoder_layers=1, max_tokens=40,
                                  dropout=0.0, vocab=vocab)  # fmt: skip
        return FormulaReader(cfg).eval()

    return make
