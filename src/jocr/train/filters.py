"""Training-data filters: drop degenerate repetition loops and duplicate targets.

The jina-ocr-v1 report filters its training data for "degeneration loops and duplicates" before SFT and
GRPO (post-training section). A loop in a target teaches the reader the very failure users
complain about most (DeepSeek-OCR's GitHub issues), and duplicates waste the small sample budget a CPU run
has, so both are removed here before a sample reaches the trainer.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass


@dataclass
class FilterConfig:
    """Thresholds for `is_degenerate` and `DuplicateFilter`.

    max_unit_chars / min_tail_repeats: a tail made of one unit of 1..max_unit_chars characters repeated at
    least min_tail_repeats times is a loop (olmOCR-Bench's baseline test uses 1-5 character units and 30
    repeats; a wider unit catches repeated words and table rows).
    max_line_repeats: a non-trivial line that occurs more often than this anywhere in the text is a loop.
    max_token_run: a single token id repeated consecutively more than this many times is a loop.
    """

    max_unit_chars: int = 40
    min_tail_repeats: int = 8
    min_tail_chars: int = 24
    max_line_repeats: int = 6
    max_token_run: int = 24


def _tail_loop(text: str, cfg: FilterConfig) -> bool:
    """True when text ends with one unit repeated min_tail_repeats times or more (whitespace-insensitive)."""
    s = re.sub(r"\s+", " ", text).rstrip()
    for unit in range(1, cfg.max_unit_chars + 1):
        need = max(cfg.min_tail_repeats, -(-cfg.min_tail_chars // unit))
        if len(s) < unit * need:
            continue
        tail = s[-unit:]
        if s.endswith(tail * need):
            return True
    return False


def is_degenerate(text: str, token_ids: list[int] | None = None, cfg: FilterConfig | None = None) -> bool:
    """Whether a target or a sampled output is a degeneration loop (repeated tail, line or token run)."""
    cfg = cfg or FilterConfig()
    if _tail_loop(text, cfg):
        return True
    lines = [ln.strip() for ln in text.splitlines()]
    counts = Counter(ln for ln in lines if len(ln) >= 4 and not set(ln) <= set("|-: "))
    if counts and max(counts.values()) > cfg.max_line_repeats:
        return True
    if token_ids:
        run = 1
        for prev, cur in zip(token_ids, token_ids[1:]):
            run = run + 1 if cur == prev else 1
            if run > cfg.max_token_run:
                return True
    return False


def normalise_for_dedup(text: str) -> str:
    """NFC, lower case, collapsed whitespace: two targets that differ only in spacing are duplicates."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip().lower()


class DuplicateFilter:
    """Remembers a digest of every accepted target; `accept` is False for a target already seen.

    Memory is bounded by `capacity` digests (oldest forgotten first), enough for a whole CPU run.
    """

    def __init__(self, capacity: int = 1_000_000) -> None:
        self.capacity = capacity
        self._seen: dict[bytes, None] = {}

    def accept(self, text: str) -> bool:
        key = hashlib.blake2b(normalise_for_dedup(text).encode("utf-8"), digest_size=12).digest()
        if key in self._seen:
            return False
        self._seen[key] = None
        if len(self._seen) > self.capacity:
            self._seen.pop(next(iter(self._seen)))
        return True

    def __len__(self) -> int:
        return len(self._seen)


@dataclass
class FilterStats:
    kept: int = 0
    empty: int = 0
    degenerate: int = 0
    duplicate: int = 0
    too_long: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)
