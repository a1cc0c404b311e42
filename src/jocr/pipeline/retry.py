"""The one retry policy of a page's reading, for `jocr parse` (`DocumentRun`, also the server's Reader) and
`jocr batch` (`jocr.bulk.stages.PageReader`), so both write the same Markdown for the same page.

1. The first attempt is greedy. A page's reading finishes when no request of it raised and none ended
   "length" (max tokens), "repetition" (the engine's repetition guard stopped a loop) or "timeout" (batch's
   page timeout): `RETRY_ON`.
2. By default (`RetryConfig.retries` 0) that is all: a reading that does not finish is kept as read. An
   anchored page ends with the runs it did not reach appended (`jocr.layout.request.page_text`); a page
   read from its image alone keeps what it wrote, and its `finish_reason` says why it stopped. On a CPU a
   sampled retry costs the page's whole generation again, for a reading that is not more faithful.
3. With `retries` N > 0 (an opt-in, the same in both), a page read from its image alone that did not
   finish is read again, sampled at the next of `temperatures` with a seed fixed by (document, page,
   attempt), up to N times (olmOCR's pipeline does this on GPUs). An anchored page never is: its unread
   runs are its fallback. The first attempt that finishes is kept; when none does, the greedy one
   (`choose`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from jocr.layout.request import page_finish_reason

RETRY_ON = ("length", "repetition", "timeout")
RETRY_TEMPERATURES = (0.2, 0.5, 0.8)


@dataclass
class Attempt:
    """One reading of a page: its requests' outputs (one per anchor window: token ids in `jocr batch`, the
    engine's results in `jocr parse`) and finish reasons, or the error that ended it."""

    outputs: list | None
    reasons: list[str | None] | None
    error: str | None
    seconds: float
    temperature: float

    @property
    def finish_reason(self) -> str | None:
        """The page's finish reason over its requests (`page_finish_reason`)."""
        return page_finish_reason(self.reasons) if self.reasons else None

    @property
    def finished(self) -> bool:
        return self.error is None and self.finish_reason not in RETRY_ON


@dataclass
class RetryConfig:
    """How often a page that did not finish is read again (module docstring)."""

    retries: int = 0  # sampled re-readings of a page read from its image alone; 0: greedy, once
    temperatures: tuple[float, ...] = RETRY_TEMPERATURES

    def __post_init__(self) -> None:
        if not 0 <= self.retries <= len(self.temperatures):
            raise ValueError(f"retries must be 0 to {len(self.temperatures)}, not {self.retries}")

    def temperature(self, attempt: int) -> float:
        """The temperature of attempt `attempt` (0: the greedy one)."""
        return 0.0 if attempt == 0 else self.temperatures[attempt - 1]

    def again(self, attempts: Sequence[Attempt], anchored: bool) -> bool:
        """Whether a page whose `attempts` so far are these is read once more."""
        return not anchored and not attempts[-1].finished and len(attempts) <= self.retries


def retry_seed(doc_id: str, page: int, attempt: int) -> int:
    """The sampling seed of a retry: the same document name, page and attempt give the same reading."""
    digest = hashlib.sha256(f"{doc_id}\0{page}\0{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def choose(attempts: Sequence[Attempt]) -> tuple[Attempt | None, str]:
    """The attempt a page keeps and its status: the first that finished ("ok" when it is the greedy one,
    else "retried"); else the greedy one when it has a reading ("fallback" after retries, else "ok");
    else None, "failed"."""
    greedy = attempts[0]
    finished = next((a for a in attempts if a.finished), None)
    if finished is not None:
        return finished, "ok" if finished is greedy else "retried"
    if greedy.error is None:
        return greedy, "fallback" if len(attempts) > 1 else "ok"
    return None, "failed"
