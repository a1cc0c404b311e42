"""A scripted stand-in for the engine and its scheduler that checks what the pipeline sends.

It answers each request with text derived from its page views (the brightness at the global view centre),
so tests can tell pages apart and check their order. Like `jocr.engine.Scheduler`, it decodes on a
background thread, up to `batch_size` requests at a time, and tracks how many requests were in flight.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from types import SimpleNamespace

from jocr.config import tiny_config
from jocr.documents.preprocess import views_token_count
from jocr.engine.requests import GenerationResult
from jocr.engine.stats import RequestStats
from jocr.pipeline import LoadedModel
from jocr.tokenizer import Tokenizer


class ScriptedHandle:
    def __init__(self, request):
        self.request = request
        self._event = threading.Event()
        self._result = None
        self._error = None
        self.on_done = None
        self.cancelled = False

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self.cancelled = True

    def result(self, timeout=None):
        self._event.wait(timeout)
        if self._error is not None:
            raise self._error
        return self._result


class ScriptedRunner:
    def __init__(self, owner: ScriptedEngine, batch_size: int):
        self.owner = owner
        self.batch_size = batch_size
        self.waiting: deque[ScriptedHandle] = deque()
        self.lock = threading.Lock()
        self.closed = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def submit(self, request, on_token=None, on_done=None) -> ScriptedHandle:
        self.owner.check(request)
        handle = ScriptedHandle(request)
        handle.on_done = on_done
        self.owner.handles.append(handle)
        with self.lock:
            self.waiting.append(handle)
            self.owner.submitted += 1
            self.owner.max_waiting = max(self.owner.max_waiting, len(self.waiting))
        return handle

    def _loop(self) -> None:
        while not self.closed:
            with self.lock:
                batch = [self.waiting.popleft() for _ in range(min(self.batch_size, len(self.waiting)))]
            if not batch:
                time.sleep(0.001)
                continue
            self.owner.batches.append(len(batch))
            time.sleep(self.owner.step_s)
            for handle in batch:
                try:
                    handle._result = self.owner.answer(handle.request)
                except Exception as exc:
                    handle._error = exc
                self.owner.completed += 1
                handle._event.set()
                if handle.on_done is not None:
                    handle.on_done(handle._result, handle._error)

    def close(self) -> None:
        self.closed = True
        self.thread.join(5)


class ScriptedEngine:
    def __init__(self, tokenizer: Tokenizer, vision, reply=None, step_s: float = 0.0):
        self.tokenizer = tokenizer
        self.vision = vision
        self.reply = reply or (lambda level: f"# Page\n\nlevel {level}")
        self.step_s = step_s
        self.batches: list[int] = []
        self.submitted = self.completed = self.max_waiting = 0
        self.fail_levels: set[float] = set()
        self.handles: list[ScriptedHandle] = []

    def check(self, req) -> None:
        (views,) = req.images
        assert req.prompt_ids.count(self.tokenizer.image_id) == views_token_count(views, self.vision)
        assert req.prompt_ids[0] == self.tokenizer.bos_id

    def answer(self, req) -> GenerationResult:
        (views,) = req.images
        centre = views.global_view.shape[-1] // 2
        level = round(float(views.global_view[:, centre, centre].mean()), 1)
        if level in self.fail_levels:
            raise RuntimeError("scripted failure")
        ids = self.tokenizer.encode(self.reply(level))[: req.max_tokens]
        reason = "length" if len(ids) == req.max_tokens else "stop"
        return GenerationResult(token_ids=ids, finish_reason=reason, stats=RequestStats())


class ScriptedModel(LoadedModel):
    def engine(self, spec="auto", batch_size=8):
        return self.scripted

    def runner(self, spec="auto", batch_size=8):
        return ScriptedRunner(self.scripted, batch_size)


def scripted_model(reply=None, step_s: float = 0.0) -> ScriptedModel:
    config = tiny_config()
    tok = Tokenizer.byte_level()
    model = ScriptedModel(model=SimpleNamespace(config=config), tokenizer=tok, path="scripted")
    model.scripted = ScriptedEngine(tok, config.vision, reply, step_s)
    return model


class FixedAnswerEngine:
    """An engine (`check`, `generate`) that answers every request with the same text and keeps the
    requests it was given (`prompts`: their prompt ids decoded)."""

    def __init__(self, tokenizer: Tokenizer, answer: str):
        self.tokenizer, self.answer, self.requests = tokenizer, answer, []

    @property
    def prompts(self) -> list[str]:
        return [self.tokenizer.decode(r.prompt_ids) for r in self.requests]

    def check(self, request) -> None:
        pass

    def generate(self, requests):
        self.requests += list(requests)
        ids = self.tokenizer.encode(self.answer) + [self.tokenizer.eos_id]
        return [GenerationResult(token_ids=ids, finish_reason="stop", stats=RequestStats()) for _ in requests]


def save_model(directory, seed: int, anchor_version: int, tokenizer: Tokenizer | None = None):
    """A tiny model (`OCRConfig.preset("tiny")`, weights from `seed`, anchors of `anchor_version`; 0: an
    image-only model) with `tokenizer` (default byte-level) saved in `directory`, which it returns."""
    import torch

    from jocr.config import OCRConfig
    from jocr.model import OCRModel

    config = OCRConfig.preset("tiny")
    config.anchor.version = anchor_version
    torch.manual_seed(seed)
    OCRModel(config).init_weights(seed=seed).save_pretrained(directory)
    (tokenizer or Tokenizer.byte_level()).save(directory / "tokenizer.json")
    return directory
