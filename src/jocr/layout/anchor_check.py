"""An anchored answer checked against its anchor (docs/parsing.md, "Answers checked against the anchor").

The anchored member names the runs of its window it keeps (`@i`), in the order it reads them. On real
pages it also leaves runs out that are no furniture: a stretch of Chinese prose between two runs it named,
the opening lines of a window, a paragraph between two it kept. The text layer holds every run, so a run
the answer skipped is put back where the text layer's order puts it, after the block that holds the run
named before it (`skipped_runs` says which go where); the page's rules then join it to that paragraph or
start a block of its own (`jocr.layout.answer_tree`). Not put back: page furniture, runs the answer names,
and runs whose text the answer typed out instead of naming them (`typed_in`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from jocr.lines.references import REFERENCES, referenced_numbers

# Finish reasons of an answer that ended before the model closed it (the token limit, the repetition
# guard): one that names no run of its window is garbage, and its window's runs stand for it.
ENDED_EARLY = ("length", "repetition")

# Characters that say nothing about which words a text holds: white space, Markdown and HTML syntax.
_NOT_TEXT = re.compile(r"[\s#*_`|>$\\-]+|<[^>]*>")
# A run shorter than this (after `_NOT_TEXT` is taken out) is found in almost any answer ("1", "a"):
# whether the answer typed it says nothing, so it is put back only when the answer did not name it.
MIN_TYPED_CHARS = 6


def skipped_runs(
    named: Sequence[int], numbers: Iterable[int], drop: Iterable[int] = (), tail: bool = False
) -> list[tuple[int | None, list[int]]]:
    """The runs of a window (`numbers`) its answer skipped, grouped by where they go back: `(after, runs)`
    with `after` the highest run the answer named below them (None: before every run it named), `runs` in
    the text layer's order. Only runs below the last run the answer named, unless `tail`: a window that
    ran out of room is followed by the runs it never reached elsewhere (`references.unread_runs`). Runs in
    `drop` (page furniture) and in `named` are never skipped; no run named, nothing is skipped but with
    `tail` (every run then)."""
    kept = sorted(set(named))
    if not kept and not tail:
        return []
    last, left_out = (kept[-1] if kept else 0), set(kept) | set(drop)
    groups: dict[int | None, list[int]] = {}
    for number in sorted(set(numbers) - left_out):
        if number > last and not tail:
            break
        before = [n for n in kept if n < number]
        groups.setdefault(before[-1] if before else None, []).append(number)
    return sorted(groups.items(), key=lambda item: -1 if item[0] is None else item[0])


def compact(text: str) -> str:
    """`text` without white space and Markdown or HTML syntax: what is compared when asking whether an
    answer typed a run."""
    return _NOT_TEXT.sub("", text)


def typed_in(run_text: str, answer: str) -> bool:
    """Whether the answer (`compact` already applied) holds the run's text typed out: a run of at least
    `MIN_TYPED_CHARS` characters found whole in it."""
    run = compact(run_text)
    return len(run) >= MIN_TYPED_CHARS and run in answer


def referenced(answer: str, runs: dict[int, str]) -> set[int]:
    """The numbers of the runs of its window (`runs`, number -> text) the answer names."""
    return set(referenced_numbers(answer)) & set(runs)


def names_a_run(answer: str, runs: dict[int, str]) -> bool:
    """Whether the answer names at least one run of its window."""
    return bool(referenced(answer, runs))


# A block of an answer is made up when more than this share of the text it types itself (outside run
# references and syntax) is found nowhere in its window's runs.
MADE_UP_SHARE = 0.5
_TOKENS = re.compile(r"<[^>]*>|[\s|]+")


def made_up(block: str, anchor_text: str) -> bool:
    """Whether the text an answer's block types itself (outside its run references) is mostly found
    nowhere in its window's runs (`anchor_text`, `compact` already applied): a table of figures the page
    does not hold, characters that are no text. Each word (split at white space, cell bars and tags)
    counts for its length, found when it is part of a run."""
    words = [compact(w) for w in _TOKENS.split(REFERENCES.sub(" ", block))]
    words = [w for w in words if w]
    total = sum(len(w) for w in words)
    missing = sum(len(w) for w in words if w not in anchor_text)
    return total > 0 and missing > MADE_UP_SHARE * total
