"""Text normalisation and fuzzy text similarity shared by the checks.

`normalize_text` follows olmOCR-Bench (allenai/olmocr `olmocr/bench/tests.py`, `normalize_text`), applied to
both the test's strings and the candidate Markdown before any comparison, so that emphasis markers, `<br>`
tags, whitespace runs, Unicode composition and typographic quotes or dashes never decide a verdict.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

_BR = re.compile(r"<br/?>")
_BOLD_STARS = re.compile(r"\*\*(.*?)\*\*")
_BOLD_UNDERSCORES = re.compile(r"__(.*?)__")
_HTML_B = re.compile(r"</?b>")
_HTML_I = re.compile(r"</?i>")
_PAIRED_BOLD = re.compile(r"(\*\*|__)(.*?)\1")
_PAIRED_ITALIC = re.compile(r"(\*|_)(.*?)\1")
_WHITESPACE = re.compile(r"\s+")

# Typographic characters folded to ASCII (olmOCR-Bench's table), plus the micro sign to Greek mu.
_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\uff3f": "_",
        "\u2013": "-",
        "\u2014": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2212": "-",
        "\u00b5": "\u03bc",
    }
)


@lru_cache(maxsize=1024)
def normalize_text(text: str | None) -> str | None:
    """olmOCR-Bench normalisation: `<br>` -> space, emphasis markers removed, whitespace collapsed, NFC,
    folds.

    Memoised: a reward call normalises the same reference and candidate for several checks. The order of the
    steps matters and matches the official scorer: bold markers go first (non-greedy, within a line because
    `.` does not cross newlines), then `<b>`/`<i>` tags, then paired italics, then whitespace.
    """
    if text is None:
        return None
    text = _BR.sub(" ", text)
    text = _BOLD_STARS.sub(r"\1", text)
    text = _BOLD_UNDERSCORES.sub(r"\1", text)
    text = _HTML_B.sub("", text)
    text = _HTML_I.sub("", text)
    text = _PAIRED_BOLD.sub(r"\2", text)
    text = _PAIRED_ITALIC.sub(r"\2", text)
    text = _WHITESPACE.sub(" ", text)
    text = unicodedata.normalize("NFC", text)
    return text.translate(_FOLD)


def partial_ratio(needle: str, haystack: str) -> float:
    """Best similarity in [0, 1] of `needle` to any window of `haystack` (rapidfuzz partial_ratio / 100)."""
    return fuzz.partial_ratio(needle, haystack) / 100.0


def ratio(a: str, b: str) -> float:
    """Indel-based similarity in [0, 1] (rapidfuzz ratio / 100), as olmOCR-Bench uses for table cells."""
    return fuzz.ratio(a, b) / 100.0


def normalized_edit_distance(a: str, b: str) -> float:
    """Levenshtein distance divided by the longer length (0 when both are empty), as OmniDocBench reports."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 0.0
    return Levenshtein.distance(a, b) / longest
