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


# HTML an answer writes on purpose: a table's (and line breaks in its cells). Any other tag it types that
# its runs do not hold (`<b>` in Markdown) is foreign to the page.
_TABLE_TAG = re.compile(r"</?(?:table|thead|tbody|tr|td|th|br)\b[^<>]*>", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][^<>]{0,40}>")


def foreign_text(block: str, runs_text: str) -> list[str]:
    """What a block of an answer types itself (outside its run references) that its window's runs
    (`runs_text`, their text) never give: HTML tags other than a table's, characters outside ASCII (a
    script the page is not written in, primes, U+FFFD), and ASCII letters on a page whose runs hold none
    (Latin typed into a Chinese page). Each piece once, tags first; taking them out of the block's
    resolved text leaves every character the runs give."""
    typed = REFERENCES.sub(" ", block)
    out: list[str] = []
    for tag in _TAG.findall(typed):
        if not _TABLE_TAG.fullmatch(tag) and tag not in runs_text and tag not in out:
            out.append(tag)
        typed = typed.replace(tag, " ")
    latin = any(ch.isascii() and ch.isalpha() for ch in runs_text)
    for ch in typed:
        if ch in runs_text or ch in out or ch.isspace():
            continue
        if not ch.isascii() or (ch.isalpha() and not latin):
            out.append(ch)
    return out


def without_foreign(text: str, foreign: Sequence[str]) -> str:
    """`text` without the pieces `foreign_text` found (white space they leave doubled made single)."""
    for piece in foreign:
        text = text.replace(piece, "")
    return re.sub(r"[ \t]{2,}", " ", text) if foreign else text
