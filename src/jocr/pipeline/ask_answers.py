"""An asked page's answer as the user reads it, and where it stands on the page (docs/asking.md, "Answers").

The anchored member answers an extractive question the way it reads a page: it names the run (or the runs,
in order) that hold the answer, `@i`, a choice among the page's runs, which its copy mechanism has learnt;
it does not type the answer's characters. The answer is then cut from the resolved runs' text by ONE rule,
`answer_value`, which builds the training targets (`jocr.train.docqa_data.reference_answer`) and reads the
model's answers (`answer_text`, and each field of `read_fields_answer`):

- a leading label that ends in a colon is dropped (`Store: Orion Tools Inc` -> `Orion Tools Inc`,
  `合计：¥7,196.07` -> `¥7,196.07`): a label of at most 40 characters without digits (`10:30` is a time),
  an ASCII colon followed by a space (`http://` is not a label), a full-width colon followed by anything;
- else, leading words that the question names (at most 3 words of 3+ letters, not stop words) are dropped
  (`Total $136.50` asked "What is the total amount?" -> `$136.50`); for an extracted field the question is
  the field's name (`receipt_number` -> "receipt number").
- Something always remains: a run that is all label keeps its text.

An answer without references (a computed answer the model typed: a count, a sum) is the model's text as it
stands. The answer's box is the referenced runs' lines (`runs_box`), else the line the answer is a span of
(`answer_box`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from jocr.checks.qa import normalise_answer
from jocr.lines.references import REFERENCES, resolve_references

FUZZY_SPAN = 90.0  # rapidfuzz partial_ratio (0-100) from which an answer counts as a span of a line
# `label: value` / `标签：值`: see the module docstring for why digits and `:` without a space are not labels.
_COLON_LABEL = re.compile(r"(?P<label>[^:：0-9]{1,40}?)\s*(?::\s+|：\s*)(?P<value>\S.*)", re.DOTALL)
_STOP_WORDS = frozenset(
    "a an and the is are was were of to in on for by from what which who whom whose how many much does do "
    "did this that these those it its there be been given listed with".split()
)
_MAX_LABEL_WORDS = 3


def question_words(question: str) -> frozenset[str]:
    """The question's words a label may name: lower-case ASCII words of 3+ letters (a possessive 's and
    `_` of a field name dropped), stop words out."""
    text = question.lower().replace("'s", " ").replace("_", " ")
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text) if len(w) >= 3 and w not in _STOP_WORDS)


def answer_value(text: str, question: str = "") -> str:
    """The value in a resolved run text (one run's, or several runs' joined as references resolve), by the
    one rule of the module docstring: a leading `label:` dropped, else the leading words the question
    names; surrounding whitespace stripped. The same function builds training targets and reads answers."""
    text = text.strip()
    match = _COLON_LABEL.fullmatch(text)
    if match and match.group("label").strip():
        return match.group("value").strip()
    named = question_words(question)
    if not named:
        return text
    words = text.split()
    dropped = 0
    while dropped < min(_MAX_LABEL_WORDS, len(words) - 1):
        word = re.sub(r"[^a-z0-9]", "", words[dropped].lower())
        if word not in named:
            break
        dropped += 1
    return " ".join(words[dropped:]) if dropped else text


def answer_runs(raw: str) -> list[int]:
    """The run numbers a model's answer references, in order (`@3 @4`, `@3@4`)."""
    return [int(n) for match in REFERENCES.findall(raw) for n in match.split("@")[1:]]


def answer_text(raw: str, anchor: str | None, question: str = "") -> str:
    """A model's answer as the user reads it: an answer that references runs is resolved against the
    window's anchor and its value cut by `answer_value` (the rule its training target was built with); an
    answer without references is its text, surrounding whitespace dropped."""
    if anchor and REFERENCES.search(raw):
        return answer_value(resolve_references(raw, anchor), question)
    return raw.strip()


def answer_span(answer: str, lines: Sequence[Any]) -> int | None:
    """The index of the text-layer line (`TextLine`) the answer is a span of: the first line holding it
    exactly (after `normalise_answer`), else the line that holds it best by rapidfuzz's partial ratio if
    that reaches FUZZY_SPAN; None when no line does (or the answer is empty)."""
    wanted = normalise_answer(answer)
    if not wanted or not lines:
        return None
    texts = [normalise_answer(line.text) for line in lines]
    for i, text in enumerate(texts):
        if wanted in text:
            return i
    from rapidfuzz import fuzz

    scores = [fuzz.partial_ratio(wanted, text) if text else 0.0 for text in texts]
    best = max(range(len(scores)), key=scores.__getitem__)
    return best if scores[best] >= FUZZY_SPAN else None


def _usable(lines) -> bool:
    return lines is not None and bool(getattr(lines, "lines", None)) and lines.width > 0 and lines.height > 0


def _pixel_box(boxes: Sequence[Sequence[float]], layer, size: tuple[int, int]) -> list[int]:
    """The union of line boxes (points of `layer`) in pixels of the page image as rendered."""
    sx, sy = size[0] / layer.width, size[1] / layer.height
    x0, y0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
    x1, y1 = max(b[2] for b in boxes), max(b[3] for b in boxes)
    return [round(x0 * sx), round(y0 * sy), round(x1 * sx), round(y1 * sy)]


def answer_box(answer: str, lines, size: tuple[int, int]) -> list[int] | None:
    """The box (pixels of the page as rendered, `size`) of the line of `lines` (a page's usable
    `PageLines`, or None) the answer is a span of (`answer_span`); None when it is none."""
    if not _usable(lines):
        return None
    index = answer_span(answer, lines.lines)
    return None if index is None else _pixel_box([lines.lines[index].box], lines, size)


def runs_box(raw: str, first: int, lines, size: tuple[int, int]) -> list[int] | None:
    """The box (pixels of the page as rendered) around the lines of the runs a window's answer references:
    run `n` of a window whose first run is page-wide run `first` is the page's run `first + n - 1`, the
    line of `lines` it was written from (`jocr.lines.anchor.anchor_lines` numbers the non-blank lines from
    1). None when the answer names no run of the page or `lines` is not usable."""
    if not _usable(lines):
        return None
    written = [line for line in lines.lines if " ".join(line.text.split())]
    picked = [written[first + n - 2] for n in answer_runs(raw) if 0 <= first + n - 2 < len(written)]
    return _pixel_box([line.box for line in picked], lines, size) if picked else None
