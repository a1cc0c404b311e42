"""Run references in an anchored model's output (docs/parsing.md, "Run references"): `@i` stands for run i
of the anchor the page (or window) was read with. Kept apart from `jocr.lines.anchor`, which reads text
layers, so that turning output into text needs nothing but the anchor's text."""

from __future__ import annotations

import re
from typing import NamedTuple

_RUN_LINE = re.compile(r"@(\d+) (\d+),(\d+) (.*)")
# References: `@` and digits, alone or several in a row (`@3@4`: two runs of a line of Chinese, which has no
# spaces), not right after an ASCII letter, digit, `_` or `@` (e-mail addresses such as `me@163.com`).
# Word boundaries are ASCII only: CJK text has none between its runs.
REFERENCES = re.compile(r"(?<![A-Za-z0-9_@])(?:@[0-9]+)+(?![0-9])")
_OPEN_REFERENCE = re.compile(r"@[0-9]*\Z")


class AnchorRun(NamedTuple):
    """One run as an anchor line gives it: its top-left on the 0-999 grid of the page, and its text."""

    x: int
    y: int
    text: str


def referenced_numbers(text: str) -> list[int]:
    """The run numbers `text` references, in order and as written (`@3 @4` and `@3@4` give [3, 4]); the one
    reading of a reference that every resolver, checker and answer reader uses."""
    return [int(n) for match in REFERENCES.findall(text) for n in match.split("@")[1:]]


def anchor_entries(anchor_text: str) -> dict[int, AnchorRun]:
    """Run number -> its position and text, read back from an anchor's text (the lines `anchor_lines`
    wrote)."""
    runs = {}
    for line in anchor_text.split("\n"):
        match = _RUN_LINE.fullmatch(line)
        if match:
            runs[int(match.group(1))] = AnchorRun(int(match.group(2)), int(match.group(3)), match.group(4))
    return runs


def anchor_runs(anchor_text: str) -> dict[int, str]:
    """Run number -> run text, read back from an anchor's text."""
    return {number: run.text for number, run in anchor_entries(anchor_text).items()}


def with_references(markdown: str, taken: list[tuple[int, int, int]]) -> str:
    """`markdown` with each stretch `(start, end, run)` of `taken` (not overlapping) written as `@run`: the
    reference form's last step, however the stretches were found."""
    out, last = [], 0
    for start, end, number in sorted(taken):
        out.append(markdown[last:start])
        out.append(f"@{number}")
        last = end
    out.append(markdown[last:])
    return "".join(out)


def resolve_references(text: str, anchor_text: str, drop: frozenset[int] = frozenset()) -> str:
    """A model's output with every `@i` of a run in the anchor replaced by the run's text. A number that
    names no run is dropped: it is the model pointing past its anchor (a window's model that runs on
    counts up past its last run), and `@12` left in a user's Markdown helps no one. So is a run named a
    second time: each run is its own stretch of the page's text, printed once, so a repeat is the model
    looping back (it wrote a 600-character run three times on a real two-column page), and the first
    mention keeps its place, so a streamed prefix never changes. Runs in `drop` (page furniture,
    `jocr.layout.furniture`) resolve to nothing."""
    runs = anchor_runs(anchor_text)
    if not runs:
        return text
    written: set[int] = set(drop)

    def once(number: int) -> str:
        if number in written:
            return ""
        written.add(number)
        return runs.get(number, "")

    def resolve(match: re.Match) -> str:
        return "".join(once(n) for n in referenced_numbers(match.group(0)))

    return REFERENCES.sub(resolve, text)


def unread_runs(text: str, anchor_text: str, drop: frozenset[int] = frozenset()) -> str:
    """The runs of `anchor_text` numbered past the last run `text` names, one a line, `drop` left out: what
    a window's answer that ran out of room (finish reason "length") never reached. They are the page's own
    text in the text layer's order, so `jocr.layout.request.page_text` keeps them rather than lose
    them."""
    runs = anchor_runs(anchor_text)
    named = [n for n in referenced_numbers(text) if n in runs]
    last = max(named, default=0)
    return "\n".join(runs[i] for i in sorted(runs) if i > last and i not in drop)


def without_open_reference(text: str) -> str:
    """`text` without a reference at its very end, which more digits could still extend (streaming)."""
    match = _OPEN_REFERENCE.search(text)
    return text[: match.start()] if match else text
