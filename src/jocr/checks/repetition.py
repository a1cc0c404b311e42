"""Repetition detection: the olmOCR-Bench baseline rule and a graded loop score for rewards.

`tail_ngram_repeats` follows olmOCR's `RepeatDetector` (allenai/olmocr `olmocr/repeatdetect.py`): for each
size n, how many times the last n characters repeat back to back at the end of the text (whitespace runs
collapsed). `repetition_score` extends the idea to the loops a decoder really falls into (a sentence, a table
row or a formula emitted again and again, at the end or in the middle) and grades them: 1.0 for ordinary text,
0.0 for a degenerate loop. It is the one reward term without a floor (see `reward.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WHITESPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def tail_ngram_repeats(text: str, max_ngram_size: int = 5) -> list[int]:
    """counts[n - 1] = number of back-to-back copies of the last n characters at the end of `text`."""
    counts = [0] * max_ngram_size
    if not text:
        return counts
    text = _WHITESPACE.sub(" ", text)
    for size in range(1, max_ngram_size + 1):
        if len(text) < size:
            continue
        counts[size - 1] = _count_tail_copies(text, size)
    return counts


def _count_tail_copies(text: str, period: int, limit: int | None = None) -> int:
    """How many copies of text[-period:] end the text back to back (stops early at `limit`)."""
    target = text[-period:]
    count = 0
    pos = len(text) - period
    while pos >= 0 and text.startswith(target, pos):
        count += 1
        if limit is not None and count >= limit:
            break
        pos -= period
    return count


@dataclass(frozen=True)
class RepetitionConfig:
    """Thresholds of the graded loop detector."""

    short_period: int = 5  # periods up to this many characters use the olmOCR-Bench rule
    short_max_repeats: int = 30  # olmOCR-Bench BaselineTest.max_repeats
    long_period: int = 200  # longest loop period searched at the end of the text
    long_min_repeats: int = 6  # copies of a longer unit that make a degenerate tail loop
    long_min_chars: int = 120  # ... and the characters they must cover
    ngram: int = 8  # word n-gram size for the duplicate-rate measure
    min_ngrams: int = 20  # below this many n-grams the duplicate rate is not measured
    degenerate_unique_fraction: float = 0.2  # at or below this unique-n-gram fraction the page is a loop


def tail_loop(text: str, config: RepetitionConfig = RepetitionConfig()) -> tuple[int, int] | None:
    """(period, copies) of a degenerate loop that ends the text, or None."""
    text = _WHITESPACE.sub(" ", text).rstrip()
    if not text:
        return None
    for period in range(1, min(config.short_period, len(text)) + 1):
        copies = _count_tail_copies(text, period, limit=config.short_max_repeats + 1)
        if copies > config.short_max_repeats:
            return period, copies
    last = text[-1]
    for period in range(config.short_period + 1, min(config.long_period, len(text) // 2) + 1):
        if text[-1 - period] != last:  # cheap precheck: a loop of this period repeats the last character
            continue
        copies = _count_tail_copies(text, period)
        if copies >= config.long_min_repeats and copies * period >= config.long_min_chars:
            return period, copies
    return None


def unique_ngram_fraction(text: str, n: int = 8) -> float | None:
    """Distinct word n-grams / all word n-grams (None when the text has too few words to tell)."""
    words = _WORD.findall(text.lower())
    total = len(words) - n + 1
    if total <= 0:
        return None
    grams = {tuple(words[i : i + n]) for i in range(total)}
    return len(grams) / total


def repetition_score(text: str, config: RepetitionConfig = RepetitionConfig()) -> float:
    """1.0 for text without loops, 0.0 for a degenerate loop, graded in between by the duplicate rate.

    A loop at the end (the usual failure when decoding runs to the token limit) scores 0 outright. Elsewhere
    the fraction u of distinct word 8-grams measures how much of the page is copied text: ordinary pages have
    u near 1; the score falls linearly from 1 at u = 1 to 0 at u = `degenerate_unique_fraction`.
    """
    if tail_loop(text, config) is not None:
        return 0.0
    words = _WORD.findall(text.lower())
    if len(words) - config.ngram + 1 < config.min_ngrams:
        return 1.0
    unique = unique_ngram_fraction(text, config.ngram)
    assert unique is not None
    floor = config.degenerate_unique_fraction
    return max(0.0, min(1.0, (unique - floor) / (1.0 - floor)))
