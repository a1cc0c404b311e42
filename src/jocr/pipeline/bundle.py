"""A model bundle's runner: anchored prompts to the bundle's anchored member, every other prompt to its image
model (docs/parsing.md, "The bundled models").

A small model trained to read the text layer beside the image loses part of what it reads from images alone
(docs/training.md, "Anchored model": -14 points on the frozen `cpu-small` set), so the bundle keeps both: the
image model stays exactly as it was for scans and photos, and the anchored member reads born-digital pages.
Which one a request goes to follows from its prompt (`Tokenizer.is_anchored`), so every caller (parse, the
server, the Reader, batch jobs) routes the same way without knowing a bundle is there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from jocr.tokenizer import Tokenizer


class BundleRunner:
    """The `jocr.engine.Scheduler` interface over two schedulers. The anchored member's scheduler (a decode
    thread and its engine) starts with the first anchored request, so a run of images holds one model's
    engine only."""

    def __init__(self, image: Any, anchored: Callable[[], Any], tokenizer: Tokenizer):
        self.image = image
        self._make_anchored = anchored
        self._anchored: Any = None
        self._lock = threading.Lock()
        self._closed = False
        self.tokenizer = tokenizer

    def scheduler_for(self, request) -> Any:
        if not self.tokenizer.is_anchored(request.prompt_ids):
            return self.image
        with self._lock:
            if self._anchored is None and not self._closed:
                self._anchored = self._make_anchored()
            return self._anchored if self._anchored is not None else self.image

    def submit(self, request, on_token=None, on_done=None):
        """`Scheduler.submit` on the member the prompt is for."""
        return self.scheduler_for(request).submit(request, on_token=on_token, on_done=on_done)

    def _members(self) -> list[Any]:
        with self._lock:
            return [self.image] + ([self._anchored] if self._anchored is not None else [])

    @property
    def queue_depth(self) -> int:
        return sum(s.queue_depth for s in self._members())

    @property
    def active(self) -> int:
        return sum(s.active for s in self._members())

    def close(self, timeout: float = 10.0) -> None:
        with self._lock:
            self._closed = True
        for scheduler in self._members():
            scheduler.close(timeout)
