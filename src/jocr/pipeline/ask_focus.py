"""Which stretch of a page's runs a question is asked over (docs/asking.md, "Focus").

A long page is a long anchor, and the asking member, trained on short forms and one-window documents, leans
on where an answer usually sits (the second run) rather than on what the question names. Asking over the
stretch of runs that shares most words with the question puts the evidence in front of it: the run that
holds most of the question's words (English words of three letters or more outside a small stop list;
Chinese by character pairs), one run before it and FOCUS_RUNS in all, as one window of the page's runs
(`jocr.lines.anchor.run_window`). A question that shares no word with any run is asked over the page's
windows as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jocr.cjk import HAN
from jocr.lines.anchor import Anchor, page_runs, run_window

FOCUS_RUNS = 12  # runs in a focused window
FOCUS_BEFORE = 1  # runs shown before the best-matching one

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*[A-Za-z0-9]|[A-Za-z0-9]")
_CJK = re.compile(f"[{HAN}]+")
_STOP = frozenset(
    "the and for are was were what which who whom whose when where why how does did this that these those "
    "with from into about under over than then there their its his her they them you your can could may "
    "might must should would will shall been being have has had not any all one two per via".split()
)


def question_terms(question: str) -> set[str]:
    """The words of `question` a run may share: lower-cased English words of 3+ letters not in the stop
    list (and any word holding a digit), and every pair of adjacent Chinese characters."""
    terms = {
        w.lower()
        for w in _WORD.findall(question)
        if (len(w) >= 3 and w.lower() not in _STOP) or any(c.isdigit() for c in w)
    }
    for chunk in _CJK.findall(question):
        terms.update(chunk[i : i + 2] for i in range(len(chunk) - 1))
    return terms


def _run_terms(text: str) -> set[str]:
    words = {w.lower() for w in _WORD.findall(text)}
    for chunk in _CJK.findall(text):
        words.update(chunk[i : i + 2] for i in range(len(chunk) - 1))
    return words


def focus_run(runs: Sequence[str], question: str) -> int | None:
    """The index of the run sharing most of `question_terms` (the first among equals), counting a run with
    the run after it (a sentence wraps); None when no run shares any."""
    terms = question_terms(question)
    if not terms:
        return None
    words = [_run_terms(t) for t in runs]
    best, best_score = None, 0
    for i, own in enumerate(words):
        score = len(terms & own) + 0.5 * len(terms & (words[i + 1] - own) if i + 1 < len(words) else set())
        if score > best_score:
            best, best_score = i, score
    return best


def focus_window(
    windows: Sequence[Anchor], layer, question: str, tokenizer, max_tokens: int
) -> Anchor | None:
    """The window of runs `question` is asked over: FOCUS_RUNS runs of `layer` (the lines the page's anchor
    `windows` were built from) from FOCUS_BEFORE runs before `focus_run`'s choice, within `max_tokens`;
    None when no run shares a term with the question. The one choice `jocr ask` (AskConfig.focus) and
    training (`data.docqa_focus`) make."""
    runs = page_runs(list(windows))
    best = focus_run([runs[k] for k in sorted(runs)], question)
    if best is None:
        return None
    return run_window(layer, tokenizer, max(0, best - FOCUS_BEFORE), FOCUS_RUNS, max_tokens)
