"""Repetition guard: DeepSeek-OCR's sliding-window no-repeat n-gram ban and a loop detector.

Both look only at the generated tokens (not the prompt) and are pure functions of the committed history, so
greedy decoding with and without speculation makes the same choices: the verifier asks `banned(extra)` for
each of its k + 1 positions with the drafts before it as `extra`, exactly the history plain decoding would
have at that point.

No-repeat n-gram ban (DeepSeek-OCR's `NoRepeatNGramLogitsProcessor`, used with ngram_size 30, window 90 and
`<td>`/`</td>` whitelisted): with history x of length L >= n, every token x[i + n - 1] such that
x[i : i + n - 1] equals the current (n - 1)-suffix, for start i in [max(0, L - window), L - n], is banned;
whitelisted ids are never banned.

Loop detector, two tests, both incremental (O(max_period) numpy work per token):
- exact loops: for every period p <= max_period it keeps the run length r_p of positions i with
  x[i] == x[i - p] ending at the newest token; the tail is then periodic with period p over r_p + p tokens,
  and the generation ends (finish reason `repetition`) once such a tail spans at least `min_span` tokens and
  `min_repeats` periods;
- near loops: the n-gram ban forbids exact short loops, so a degenerate model drifts into loops broken by a
  token every 30 or so; those are caught by diversity: the last `diversity_window` tokens holding at most
  `diversity_max` distinct `diversity_n`-grams (text and even dense tables hold several times more).
Degenerate repetition is the failure OCR users report most (DeepSeek-OCR's GitHub issues); olmOCR-Bench's
baseline test likewise fails pages ending in a short n-gram repeated more than 30 times.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class GuardConfig:
    ngram_size: int = 30  # 0 disables the ban
    window: int = 90
    whitelist_ids: tuple[int, ...] = ()  # e.g. the tokenizer's `<td>`, `</td>` ids (128821, 128822 published)
    loop_detection: bool = True
    loop_max_period: int = 256
    loop_min_span: int = 200
    loop_min_repeats: int = 8
    diversity_window: int = 256  # 0 disables the near-loop test
    diversity_n: int = 3
    diversity_max: int = 32

    def validate(self) -> GuardConfig:
        if self.ngram_size < 0 or (self.ngram_size and self.ngram_size < 2):
            raise ValueError("guard ngram_size must be 0 (off) or >= 2")
        if self.window < 1:
            raise ValueError("guard window must be >= 1")
        if self.loop_max_period < 1 or self.loop_min_span < 2 or self.loop_min_repeats < 2:
            raise ValueError("loop detector needs max_period >= 1, min_span >= 2, min_repeats >= 2")
        return self


@dataclass
class GuardState:
    """Per-request guard state over the generated tokens."""

    config: GuardConfig
    tokens: list[int] = field(default_factory=list)
    # (n-1)-gram -> starts i of committed n-grams x[i : i + n] (the (n-1)-gram followed by a known token).
    _index: dict[tuple[int, ...], list[int]] = field(default_factory=dict)
    _runs: np.ndarray | None = None  # (max_period,) run lengths r_p for p = 1..max_period
    _ring: np.ndarray | None = None  # the last max_period tokens, newest last
    _grams: dict[tuple[int, ...], int] = field(default_factory=dict)  # n-gram counts in the diversity window

    def __post_init__(self) -> None:
        self._whitelist = frozenset(self.config.whitelist_ids)
        p = self.config.loop_max_period
        self._runs = np.zeros(p, dtype=np.int64)
        self._ring = np.full(p, -1, dtype=np.int64)
        self._periods = np.arange(1, p + 1)

    # No-repeat n-gram ban ----------------------------------------------------------------------------------
    def banned(self, extra: list[int] | tuple[int, ...] = ()) -> set[int]:
        """Tokens banned after the committed history followed by `extra` (drafts assumed accepted)."""
        n = self.config.ngram_size
        if not n:
            return set()
        committed = len(self.tokens)
        total = committed + len(extra)
        if total < n:
            return set()
        # Every index read below is >= committed - n + 1, so a short tail of the history suffices.
        offset = max(0, committed - n) if extra else 0
        seq = self.tokens[offset:] + list(extra) if extra else self.tokens
        key = tuple(seq[total - offset - n + 1 :])
        lo = max(0, total - self.config.window)
        out: set[int] = set()
        # n-grams made only of committed tokens: start i <= committed - n, found through the index.
        for i in self._index.get(key, ()):
            if i >= lo and i <= total - n:
                out.add(self.tokens[i + n - 1])
        # n-grams reaching into `extra`: starts committed - n + 1 .. total - n (at most len(extra) of them).
        for i in range(max(lo, committed - n + 1), total - n + 1):
            j = i - offset
            if tuple(seq[j : j + n - 1]) == key:
                out.add(seq[j + n - 1])
        return out - self._whitelist if self._whitelist else out

    # Committing --------------------------------------------------------------------------------------------
    def push(self, token: int) -> bool:
        """Append a generated token; returns True when the loop detector fires on it."""
        self.tokens.append(token)
        n = self.config.ngram_size
        length = len(self.tokens)
        if n and length >= n:
            i = length - n  # the n-gram x[i : i + n] just completed
            key = tuple(self.tokens[i : i + n - 1])
            starts = self._index.setdefault(key, [])
            starts.append(i)
            if len(starts) > 64:  # old starts fall out of the window; keep the lists short
                lo = length - self.config.window - n
                starts[:] = [s for s in starts if s >= lo]
        if not self.config.loop_detection:
            return False
        ring = self._ring
        # ring[-p] is x[L - 1 - p] for the new length L (the token p steps before the new one).
        same = ring[::-1] == token  # (P,): x[L-1-p] == x[L-1] for p = 1..P
        self._runs = np.where(same, self._runs + 1, 0)
        ring[:-1] = ring[1:]
        ring[-1] = token
        span = self._runs + self._periods  # periodic tail length per period
        hit = (span >= self.config.loop_min_span) & (span >= self.config.loop_min_repeats * self._periods)
        return bool(hit.any()) or self._low_diversity()

    def _low_diversity(self) -> bool:
        cfg = self.config
        w, n = cfg.diversity_window, cfg.diversity_n
        length = len(self.tokens)
        if not w or length < n:
            return False
        grams = self._grams
        new = tuple(self.tokens[length - n :])
        grams[new] = grams.get(new, 0) + 1
        if length > w:  # the n-gram starting at length - w - 1 left the window
            old = tuple(self.tokens[length - w - 1 : length - w - 1 + n])
            left = grams[old] - 1
            if left:
                grams[old] = left
            else:
                del grams[old]
        return length >= w and len(grams) <= cfg.diversity_max


def banned_reference(history: list[int], ngram_size: int, window: int, whitelist: set[int]) -> set[int]:
    """Direct transcription of the published processor's rule, kept as the oracle for tests."""
    if len(history) < ngram_size:
        return set()
    prefix = tuple(history[len(history) - ngram_size + 1 :])
    out = set()
    for i in range(max(0, len(history) - window), len(history) - ngram_size + 1):
        gram = tuple(history[i : i + ngram_size])
        if gram[:-1] == prefix:
            out.add(gram[-1])
    return out - whitelist
