"""The one retry policy of `jocr parse` and `jocr batch`: greedy once by default; with retries, only a page
read from its image alone that did not finish is sampled again, and the first reading that finishes is
kept, else the greedy one. `DocumentRun` (parse) applies it as `jocr.bulk.stages.PageReader` does (the
two are compared in tests/bulk/test_stages.py)."""

from __future__ import annotations

import pytest
from PIL import Image

from jocr.pipeline.retry import Attempt, RetryConfig, choose, retry_seed


def attempt(reason: str | None, temperature: float = 0.0) -> Attempt:
    return Attempt(None if reason is None else [[1]], None if reason is None else [reason],
                   "boom" if reason is None else None, 0.1, temperature)  # fmt: skip


def test_greedy_once_by_default():
    policy = RetryConfig()
    assert policy.retries == 0 and policy.temperature(0) == 0.0
    assert not policy.again([attempt("length")], anchored=False)


@pytest.mark.parametrize("reason", ["length", "repetition", "timeout", None])
def test_an_unfinished_image_only_page_is_read_again_up_to_retries(reason):
    policy = RetryConfig(retries=2)
    assert policy.again([attempt(reason)], anchored=False)
    assert not policy.again([attempt(reason)], anchored=True)  # its unread runs are its fallback
    assert policy.again([attempt(reason), attempt(reason, 0.2)], anchored=False)
    assert not policy.again([attempt(reason), attempt(reason, 0.2), attempt(reason, 0.5)], anchored=False)
    assert not policy.again([attempt("stop")], anchored=False)
    assert [policy.temperature(i) for i in range(3)] == [0.0, 0.2, 0.5]


def test_the_first_finished_reading_is_kept_else_the_greedy_one():
    greedy, sampled = attempt("length"), attempt("stop", 0.2)
    assert choose([greedy]) == (greedy, "ok")
    assert choose([greedy, sampled]) == (sampled, "retried")
    assert choose([greedy, attempt("repetition", 0.2)]) == (greedy, "fallback")
    assert choose([attempt(None), sampled]) == (sampled, "retried")
    assert choose([attempt(None), attempt(None, 0.2)]) == (None, "failed")


def test_bad_retries_and_seeds():
    with pytest.raises(ValueError, match="^retries must be 0 to 3, not 4$"):
        RetryConfig(retries=4)
    assert retry_seed("a.pdf", 1, 1) == retry_seed("a.pdf", 1, 1) != retry_seed("a.pdf", 1, 2)


@pytest.mark.usefixtures("never_stops")
def test_parse_samples_a_retry_with_the_policys_temperature_and_seed(tmp_path, model_dir, monkeypatch):
    import jocr
    from jocr.engine import requests

    made, request = [], requests.GenerationRequest  # `never_stops`': no reading finishes by chance

    def recorded(**fields):
        made.append((fields.get("temperature", 0.0), fields.get("seed")))
        return request(**fields)

    monkeypatch.setattr(requests, "GenerationRequest", recorded)
    Image.effect_noise((300, 400), 60).convert("RGB").save(tmp_path / "photo.png")
    name = str(tmp_path / "photo.png")
    doc = jocr.parse(name, model=str(model_dir), max_tokens=6, ocr="none", spec=0, retries=2)
    assert doc.pages[0].finish_reason == "length"  # the greedy reading, kept: no sampled one finished
    assert made == [(0.0, None), (0.2, retry_seed(name, 1, 1)), (0.5, retry_seed(name, 1, 2))]
    made.clear()
    jocr.parse(name, model=str(model_dir), max_tokens=6, ocr="none", spec=0)
    assert made == [(0.0, None)]
