"""benchmarks/answer_cache.py: a request seen before is answered from the cache, with the very tokens and
finish reason the model gave; a request for another page (other pixels) or prompt is decoded."""

import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from answer_cache import cached_runner  # noqa: E402
from jocr.engine.requests import GenerationResult  # noqa: E402


class Runner:
    def __init__(self):
        self.calls = 0

    def submit(self, request, on_token=None, on_done=None):
        self.calls += 1
        on_done(GenerationResult([7, 8, self.calls], "length", None), None)
        return SimpleNamespace(done=True)


def _request(prompt, shade):
    views = SimpleNamespace(global_view=torch.full((3, 4, 4), shade), tiles=None, grid=(1, 1))
    return SimpleNamespace(prompt_ids=prompt, images=[views], max_tokens=16)


def _answer(runner, request):
    got, done = [], threading.Event()
    runner.submit(request, on_done=lambda result, error: (got.append(result), done.set()))
    assert done.wait(5)
    return got[0].token_ids, got[0].finish_reason


def test_a_request_seen_before_is_answered_from_the_cache(tmp_path):
    model = Runner()
    runner = cached_runner(model, tmp_path)
    assert _answer(runner, _request([1, 2, 3], 0.5)) == ([7, 8, 1], "length")
    assert _answer(runner, _request([1, 2, 3], 0.5)) == ([7, 8, 1], "length")
    assert model.calls == 1 and runner.hits == 1
    assert _answer(runner, _request([1, 2, 3], 0.25)) == ([7, 8, 2], "length")  # another page
    assert _answer(runner, _request([1, 2, 4], 0.5)) == ([7, 8, 3], "length")  # another prompt
    assert model.calls == 3
