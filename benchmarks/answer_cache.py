"""Model answers kept on disk, so a change to what comes after the model (page assembly, run references,
tables) is scored on exactly the answers it was scored on before, without decoding again.

`cached_runner(runner, folder)` wraps a `jocr.engine.Scheduler` (or a bundle's runner): each request is
keyed by its prompt ids and its page views' pixels; a request seen before is answered from
`folder/<key>.json` (its token ids and finish reason), any other is decoded and its answer written there.
Greedy decoding gives the same tokens for the same request, so a cached answer is the one the model would
give; a model or prompt change misses the cache (other prompt ids or views) and decodes afresh. Used by
`benchmarks/accuracy.py --suite real --answer-cache DIR`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import numpy as np

from jocr.engine.requests import GenerationResult

ANSWERED = ("stop", "length", "repetition")  # ends of a whole answer (not cancelled, not failed)


def request_key(request) -> str:
    """A request's key: a hash of its prompt ids and every array of its views (the page's pixels)."""
    digest = hashlib.sha256(np.asarray(request.prompt_ids, dtype=np.int64).tobytes())
    digest.update(str(request.max_tokens).encode())
    for views in request.images:
        for value in vars(views).values():
            arrays = value if isinstance(value, list | tuple) else [value]
            for array in arrays:
                if hasattr(array, "shape"):
                    data = np.ascontiguousarray(np.asarray(array))
                    digest.update(str(data.shape).encode())
                    digest.update(data.tobytes())
    return digest.hexdigest()[:32]


class _Answered:
    """The handle of a request answered from the cache: done at once, its end delivered on a thread of its
    own as the scheduler's decode thread would."""

    def __init__(self, request, result: GenerationResult, on_done):
        self.request = request
        self._result = result
        self.cancelled = False
        if on_done is not None:
            threading.Thread(target=on_done, args=(result, None), daemon=True).start()

    @property
    def done(self) -> bool:
        return True

    def cancel(self) -> None:
        self.cancelled = True

    def result(self, timeout=None) -> GenerationResult:
        return self._result


class CachedRunner:
    def __init__(self, runner, folder: Path):
        self.runner = runner
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.hits = self.misses = 0

    def submit(self, request, on_token=None, on_done=None):
        path = self.folder / f"{request_key(request)}.json"
        if path.is_file():
            record = json.loads(path.read_text())
            self.hits += 1
            result = GenerationResult(record["token_ids"], record["finish_reason"], None)
            return _Answered(request, result, on_done)
        self.misses += 1

        def keep(result, error):
            if (
                error is None
                and result is not None
                and result.finish_reason in ("stop", "length", "repetition")
            ):
                record = {
                    "token_ids": [int(t) for t in result.token_ids],
                    "finish_reason": result.finish_reason,
                }
                path.write_text(json.dumps(record))
            if on_done is not None:
                on_done(result, error)

        return self.runner.submit(request, on_token=on_token, on_done=keep)

    def __getattr__(self, name):  # queue_depth, active, close: the wrapped runner's
        return getattr(self.runner, name)


def cached_runner(runner, folder: Path) -> CachedRunner:
    return CachedRunner(runner, folder)


def use_answer_cache(model, folder: Path) -> None:
    """Every runner `model` (a `jocr.pipeline.LoadedModel`) makes from now on answers through the cache."""
    make = model.runner

    def runner(*args, **kwargs):
        return cached_runner(make(*args, **kwargs), folder)

    model.runner = runner
