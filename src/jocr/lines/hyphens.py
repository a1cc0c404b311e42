"""Hyphens at a line's end: the one place that decides whether a line broken after a hyphen joins back with
the hyphen or without it.

PDFium marks every hyphen that ends a line before a word goes on (`FPDFText_GetUnicode` returns 0x02), and
the text layer writes it as U+00AD, `SOFT_HYPHEN`, whether the typesetter broke a word there ("irretrie-" /
"vably") or the text holds the hyphen ("human-" / "readable", "debian-" / "edu-profile-udeb"), so the mark
alone cannot tell them apart. `keeps_hyphen` judges each break from the two fragments and the page's own
words (`PageWords`):

1. the page prints the joined word elsewhere: with a hyphen -> kept, without -> dropped;
2. the fragments look like an identifier or a compound, which no typesetter hyphenates: a hyphen, digit,
   `_`, `/`, `.`, `@` or `:` inside either ("debian-" / "edu-profile-udeb", "x86-" / "64"), mixed case
   ("JavaScript-"), an acronym before a lower-case word ("GNU-" / "based"), a capitalised word after it
   ("S-" / "Plus", "non-" / "English"), a one-letter fragment ("e-" / "mail": hyphenation leaves two letters
   at least), or a fragment of CJK characters (which are never hyphenated) -> kept;
3. otherwise the typesetter's hyphenation -> dropped.

A hyphenation dictionary (pyphen's TeX-derived patterns) was measured as a fourth step and not kept: it
calls "human|readable" and "post|conflict" valid hyphenation points as readily as "irretrie|vably" an
invalid one (docs/results/2026-12-06-hyphens.md)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

SOFT_HYPHEN = "\u00ad"
# the break after a soft hyphen, with the word going on after it
_SOFT_BREAK = re.compile(SOFT_HYPHEN + r"[ \t]*(?:\n[ \t]*)*(?=\w)")
_OPEN_BROKEN_WORD = re.compile(r"\S*" + SOFT_HYPHEN + r"\s*\Z")  # a text ending inside such a word
# A word as the page prints it: letters, digits and the joiners of identifiers and compounds.
_WORD_END = re.compile(r"[\w\-./@:'’]*\Z")
_WORD_START = re.compile(r"[\w\-./@:'’]*")
_EDGE = "-./@:'’"  # joiners that do not belong to a word at its edges (a full stop, a closing quote)
_INSIDE = re.compile(r"[-0-9_./@:]")
_MIXED_CASE = re.compile(r"[a-z][A-Z]")


class PageWords:
    """The words a page prints whole (tokens between spaces, not those broken at a line's end),
    lower-cased, punctuation at their edges off: the evidence for how a broken word is spelled."""

    def __init__(self, texts: Iterable[str] = ()):
        self.words: set[str] = set()
        for text in texts:
            for token in text.split():
                if SOFT_HYPHEN not in token:
                    word = _bare(token).lower()
                    if word:
                        self.words.add(word)

    def __contains__(self, word: str) -> bool:
        return word.lower() in self.words


def _bare(token: str) -> str:
    """`token` without the punctuation at its edges ("(ap" -> "ap", "readable." -> "readable")."""
    start = 0
    while start < len(token) and not token[start].isalnum():
        start += 1
    end = len(token)
    while end > start and not token[end - 1].isalnum():
        end -= 1
    return token[start:end]


def _cjk(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def keeps_hyphen(left: str, right: str, words: PageWords | None = None) -> bool:
    """Whether a hyphen at a line's end belongs to the text: `left` is the text before it (its last word
    the first fragment), `right` the text after the break (its first word the second fragment), `words`
    the page's (module docstring)."""
    head = _WORD_END.search(left[-200:]).group(0).lstrip(_EDGE)
    tail = _WORD_START.match(right[:200].lstrip()).group(0).rstrip(_EDGE)
    if not head or not tail:
        return True  # no word on one side: the hyphen is the text's own ("1990-" / "(2000)")
    if _cjk(head[-1]) or _cjk(tail[0]):
        return True
    if words is not None:
        if f"{head}-{tail}" in words:
            return True
        if head + tail in words:
            return False
    letters = sum(ch.isalpha() for ch in head)
    return bool(
        _INSIDE.search(head)
        or _INSIDE.search(tail)
        or _MIXED_CASE.search(head)
        or _MIXED_CASE.search(tail)
        or (tail[0].isupper() and not tail.isupper())
        or (head.isupper() and letters > 1 and not tail.isupper())
        or letters < 2
    )


def join_soft_hyphens(text: str, words: PageWords | None = None) -> str:
    """`text` with each word the text layer broke across lines (a run ending in a soft hyphen) joined back
    to its next part, which the model wrote after it, in the same paragraph or the next: with its hyphen
    where `keeps_hyphen` says the text holds it, else without; `words` the page's (the text's own when not
    given). A soft hyphen with no word after it prints as "-"."""
    if SOFT_HYPHEN not in text:
        return text
    words = words if words is not None else PageWords([text])

    def glue(match: re.Match) -> str:
        before, after = match.string[: match.start()], match.string[match.end() :]
        return "-" if keeps_hyphen(before, after, words) else ""

    return _SOFT_BREAK.sub(glue, text).replace(SOFT_HYPHEN, "-")


def without_open_broken_word(text: str) -> str:
    """`text` without a word broken across lines at its very end, whose second part may still follow
    (streaming)."""
    return _OPEN_BROKEN_WORD.sub("", text)
