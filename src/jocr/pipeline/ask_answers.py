"""An asked page's answer as the user reads it, and where it stands on the page (docs/asking.md, "Answers").

The anchored member answers an extractive question the way it reads a page: it names the run (or the runs,
in order) that hold the answer, `@i`, a choice among the page's runs, which its copy mechanism has learnt;
it does not type the answer's characters. An answer that names a run its window's anchor lacks (`@57` in a
window of 40 runs) is no answer (`known_runs`). The answer is then cut from the resolved runs' text by ONE
rule, `answer_value`, which builds the training targets (`jocr.train.docqa_data.reference_answer`) and
reads the model's answers (`answer_text`, and each field of `read_fields_answer`), in this order:

- a question for a title (`title`, `subtitle`, `标题`, ...) takes the whole run;
- a leading label that ends in a colon is dropped (`Store: Orion Tools Inc` -> `Orion Tools Inc`,
  `合计：¥7,196.07` -> `¥7,196.07`): a label of at most 40 characters without digits (`10:30` is a time),
  an ASCII colon followed by a space (`http://` is not a label), a full-width colon followed by anything;
  the value ends with its sentence;
- else the value after the first place the question's words name (`question_words`, a plural `s` aside, or
  a Chinese character of the question that is not grammar) that has a value after it: the question's
  words, stop words and opening marks after that place skipped (`This manual is for R, version 4.2.2
  Patched (2022-11-10).` asked "Which version of R is this manual for?" -> `4.2.2 Patched (2022-11-10)`;
  `Total $136.50` asked "What is the total amount?" -> `$136.50`). Where the question's words lead the run
  (a label without a colon) the value runs to the run's end; inside a sentence it ends with its clause
  (punctuation, a verb, relative or preposition: `has the IP address 10.0.2.2 and is installed` ->
  `10.0.2.2`); a value that is not Chinese ends where Chinese text goes on (`地址为 10.0.2.2。` ->
  `10.0.2.2`); Chinese text that runs straight on from the question's characters is a compound word, not a
  value. For an extracted field the question is the field's name (`receipt_number` -> "receipt number");
- else the run without trailing question words that name something (`c 2001–2022 R Core Team` asked about
  the R Core Team's copyright -> `c 2001–2022`), else the whole run: something always remains.

These are language rules, not a reader: the run is always the model's choice.

An answer without references (a computed answer the model typed: a count, a sum) is the model's text as it
stands. The answer's box is the referenced runs' lines (`runs_box`), else the line the answer is a span of
(`answer_box`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from jocr.checks.qa import normalise_answer
from jocr.cjk import CJK_PUNCT, FULLWIDTH, HAN, HAN_COMPAT
from jocr.lines.references import REFERENCES, anchor_runs, referenced_numbers, resolve_references

FUZZY_SPAN = 90.0  # rapidfuzz partial_ratio (0-100) from which an answer counts as a span of a line
# `label: value` / `标签：值`: see the module docstring for why digits and `:` without a space are not labels.
_COLON_LABEL = re.compile(r"(?P<label>[^:：0-9]{1,40}?)\s*(?::\s+|：\s*)(?P<value>\S.*)", re.DOTALL)
_STOP_WORDS = frozenset(
    "a an and the is are was were of to in on for by from what which who whom whose how many much does do "
    "did this that these those it its there be been given listed with".split()
)
# Words that end a value found inside a sentence: verbs, relatives and prepositions that start the clause
# after it ("has the IP address 10.0.2.2 and is installed by ...").
_END_WORDS = frozenset(
    "is are was were be been being which that who whom whose where when while has have had does do did "
    "by for in on at from to with as if because since than but so".split()
)
_CONJUNCTIONS = frozenset(["and", "or", "和", "与", "及", "或"])
# Chinese characters that are grammar, not content: never a word the question names, and skipped between
# the words it names and the value (`地址为 10.0.2.2`, `主服务器上的`).
_STOP_CJK = frozenset("的是了吗呢哪谁什么多少几个些这那在从给被为了之其所以上中里有请问")
_TITLE_WORDS = frozenset(["title", "subtitle", "heading", "headline"])
_TITLE_CJK = ("标题", "题目", "书名", "篇名")
_CJK = re.compile(f"[{HAN}{HAN_COMPAT}]")
# Tokens of a run: one CJK character, a word (letters, digits and what joins them: `10.0.2.2`,
# `2022-11-10`, `hvoss@tug.org`, `Dr.`, `$1,234.50`), or one other character (punctuation, quotes, brackets).
_TOKEN = re.compile(
    f"[{HAN}{HAN_COMPAT}]"
    f"|(?:[^\\s{HAN}{HAN_COMPAT}{CJK_PUNCT}{FULLWIDTH}"
    r",;!?()\[\]\"“”‘’]|(?<=[0-9]),(?=[0-9]))+"
    r"|[^\s]"
)
_CLAUSE_END = frozenset(',;!?，。；！？、"“”‘’「」『』《》')
_OPENING = frozenset('([（【「『《"“”‘’:：,，-–—')


def question_words(question: str) -> frozenset[str]:
    """The question's words a label may name: lower-case ASCII words of 3+ letters (a possessive 's and
    `_` of a field name dropped), stop words out."""
    text = question.lower().replace("'s", " ").replace("’s", " ").replace("_", " ")
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text) if len(w) >= 3 and w not in _STOP_WORDS)


def title_question(question: str) -> bool:
    """Whether the question asks for a title (`What is the title of ...`, `标题是什么`): a title is its
    whole run, colon and all (`Notes on R: A Programming Environment ...`)."""
    words = set(re.findall(r"[a-z]+", question.lower()))
    return bool(words & _TITLE_WORDS) or any(w in question for w in _TITLE_CJK)


class _Words:
    """How a run's tokens relate to a question: `named` (a content word of the question: an ASCII word of
    `question_words`, up to a plural `s`, or a CJK character of the question that is not grammar),
    `echo` (any word or character of the question, `R` included) and `stop` (grammar)."""

    def __init__(self, question: str) -> None:
        lowered = question.lower().replace("_", " ")
        self.named = {_stem(w) for w in question_words(question)}
        self.named |= {c for c in lowered if _CJK.match(c) and c not in _STOP_CJK}
        self.echo = self.named | {_stem(w) for w in re.findall(r"[a-z0-9]+", lowered)}

    def is_named(self, token: str) -> bool:
        return _stem(_word(token)) in self.named

    def skippable(self, token: str) -> bool:
        word = _word(token)
        return (
            not word
            or _stem(word) in self.echo
            or word in _STOP_WORDS
            or word in _STOP_CJK
            or token in _OPENING
        )


def _word(token: str) -> str:
    return re.sub(f"[^a-z0-9{HAN}{HAN_COMPAT}]", "", token.lower())


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def answer_value(text: str, question: str = "") -> str:
    """The value in a resolved run text (one run's, or several runs' joined as references resolve), by the
    one rule of the module docstring. The same function builds training targets and reads answers."""
    text = text.strip()
    if not text or title_question(question):
        return text
    match = _COLON_LABEL.fullmatch(text)
    if match and match.group("label").strip():
        return _first_sentence(match.group("value").strip())
    words = _Words(question)
    if not words.named:
        return text
    tokens = list(_TOKEN.finditer(text))
    for i, token in enumerate(tokens):
        if words.is_named(token.group()):
            value = _value_after(text, tokens, i, words)
            if value:
                return value
    return _without_named_tail(text, tokens, words)


def _value_after(text: str, tokens: list[re.Match], key: int, words: _Words) -> str:
    """The value after the named token `tokens[key]`: the question's words, grammar and opening marks
    after it skipped, then up to where it ends (`_ends_value`). Empty when nothing follows, or when
    Chinese text runs straight on from a Chinese key (a compound word, `主服务器设定`, not a value)."""
    lead_words = [_word(t.group()) for t in tokens[:key]]
    leads = all(_stem(w) in words.echo and w not in _STOP_WORDS for w in lead_words)
    start = key + 1
    while start < len(tokens) and words.skippable(tokens[start].group()):
        start += 1
    if start >= len(tokens):
        return ""
    before = tokens[start - 1].group()
    if _CJK.match(tokens[start].group()) and _CJK.match(before) and before not in _STOP_CJK:
        return ""
    latin = not _CJK.match(tokens[start].group())
    end, depth = start, 0
    while True:
        depth += _depth(tokens[end].group())
        if end + 1 >= len(tokens) or depth < 0 or _ends_value(tokens, end, latin, leads):
            break
        end += 1
    return _trimmed(text[tokens[start].start() : tokens[end].end()])


def _first_sentence(value: str) -> str:
    """A label's value up to its sentence's end (`网络安装和光盘。其余略` -> `网络安装和光盘`)."""
    tokens = list(_TOKEN.finditer(value))
    for i in range(len(tokens) - 1):
        if _sentence_ends_after(tokens, i):
            return value[: tokens[i].end()].rstrip(".")
    return value


def _depth(token: str) -> int:
    return 1 if token in "([（【" else -1 if token in ")]）】" else 0


def _ends_value(tokens: list[re.Match], i: int, latin: bool, leads: bool) -> bool:
    """Whether a value ends after `tokens[i]`: at a sentence's end (`。`, `；`, `!`, `?`, `word. Next`), at
    Chinese text after a value that is not Chinese (`10.0.2.2 网络`; a conjunction between two such values
    aside, `192.168.0.0/24 和 192.168.1.0/24`), and inside a sentence (the key did not lead the run, `has the
    IP address 10.0.2.2 and is installed`) also at a clause's punctuation or an `_END_WORDS` word. A key that
    leads its run is a label (`Total $136.50`): its value otherwise runs to the run's end."""
    nxt = tokens[i + 1].group()
    if _sentence_ends_after(tokens, i):
        return True
    if latin and _CJK.match(nxt) and not _joins_latin(tokens, i + 1):
        return True
    return not leads and (nxt in _CLAUSE_END or _word(nxt) in _END_WORDS)


def _sentence_ends_after(tokens: list[re.Match], i: int) -> bool:
    """Whether a sentence ends after `tokens[i]` (one follows): a sentence mark comes next (`。`, `；`,
    `!`, `?`) or the token is a word ending in `.` that ends its sentence (`_ends_sentence`)."""
    nxt = tokens[i + 1].group()
    return nxt in "。；！？!?;" or _ends_sentence(tokens[i].group(), nxt)


def _ends_sentence(word: str, nxt: str) -> bool:
    """Whether a word ending in `.` ends its sentence before `nxt`: a capital or a Chinese character
    follows, and the word is no short abbreviation (`Dr.`, `No.`) but a number or a longer word."""
    stem = word[:-1]
    return (
        word.endswith(".")
        and (nxt[:1].isupper() or bool(_CJK.match(nxt)))
        and (len(stem) > 3 or any(c.isdigit() for c in stem))
    )


def _joins_latin(tokens: list[re.Match], i: int) -> bool:
    """Whether the CJK token `tokens[i]` is a conjunction between two values that are not Chinese
    (`192.168.0.0/24 和 192.168.1.0/24`)."""
    if tokens[i].group() not in _CONJUNCTIONS or i + 1 >= len(tokens):
        return False
    return not _CJK.match(tokens[i + 1].group())


def _trimmed(value: str) -> str:
    """A value without the sentence's end (`.`, `。`), unbalanced closing brackets or a trailing
    conjunction around it."""
    value = value.strip()
    while True:
        before = value
        value = value.rstrip(" .。,，;；:：").strip()
        if value.endswith((")", "）")) and _unbalanced(value):
            value = value[:-1]
        last = value.split()[-1] if value.split() else ""
        if last.lower() in _CONJUNCTIONS:
            value = value[: -len(last)]
        if value == before:
            return value


def _unbalanced(value: str) -> bool:
    return value.count("(") + value.count("（") < value.count(")") + value.count("）")


def _without_named_tail(text: str, tokens: list[re.Match], words: _Words) -> str:
    """A run with no value after the question's words: the run without its trailing question words when
    they name something (`c 2001–2022 R Core Team` asked about the R Core Team's copyright), else the run
    (something always remains)."""
    end = len(tokens)
    while end > 0 and words.skippable(tokens[end - 1].group()):
        end -= 1
    named = any(words.is_named(t.group()) for t in tokens[end:])
    if 0 < end < len(tokens) and named:
        return _trimmed(text[: tokens[end - 1].end()])
    return text


def known_runs(raw: str, anchor: str | None) -> bool:
    """Whether every run an answer references is a run of its window's anchor (a window of 40 runs has
    no `@57`: such an answer points past its anchor and is no reference at all)."""
    runs = referenced_numbers(raw)
    return not runs or (anchor is not None and set(runs) <= set(anchor_runs(anchor)))


def answer_text(raw: str, anchor: str | None, question: str = "") -> str:
    """A model's answer as the user reads it: an answer that references runs is resolved against the
    window's anchor and its value cut by `answer_value` (the rule its training target was built with); an
    answer without references is its text, surrounding whitespace dropped."""
    if anchor and REFERENCES.search(raw):
        if not known_runs(raw, anchor):
            return ""
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
    picked = [written[first + n - 2] for n in referenced_numbers(raw) if 0 <= first + n - 2 < len(written)]
    return _pixel_box([line.box for line in picked], lines, size) if picked else None
