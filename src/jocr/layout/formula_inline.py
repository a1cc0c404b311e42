"""Inline formulas in a line of prose: runs of math glyphs (math fonts, math symbols, Greek, scripts) with
the digits and operators between them, read as LaTeX and written `$...$` in the line's text (docs/layout.md,
"Formulas").

A line's text is the text layer's (`Line.text`: its characters in PDFium's order, spaces between words); its
glyphs (`formula_glyphs.page_glyphs`) are matched to those characters one by one, and a line where they do
not match is left as it is.
"""

from __future__ import annotations

import unicodedata

from jocr.checks.latex_symbols import OPERATOR_NAMES, is_upright_font
from jocr.cjk import WIDE_MARK
from jocr.layout.formula_glyphs import Glyph, Rule
from jocr.layout.formula_latex import glyphs_latex
from jocr.lines.textlayer import is_mono_font

_NEUTRAL = frozenset("0123456789+-=<>()[]/.,:;|'−×·")
_TRAILING = frozenset(".,;:")
# Signs of a footnote mark set after a word ("Floats∗" of a title's \thanks): TeX takes them from its math
# symbols font, but after a word of prose they are its note mark, not math.
_NOTE_SIGNS = frozenset("*∗†‡⋆")
# Math-font glyphs that make no formula of a word by themselves: punctuation and angle brackets, which
# TeX sets from its math fonts around text too. A word with them is math only by its other glyphs.
_NOT_ALONE = _TRAILING | frozenset("⟨⟩")
# Relation signs TeX takes from its math fonts that a word of prose wears as brackets ("<name@host>").
_WORD_BRACKETS = frozenset("<>")
# A word of prose with at least this many letters of a text font takes a small raised number at its end or
# start as its footnote mark ("used.¹", "¹This") and "<" ">" at its ends as brackets, not as an exponent or
# a relation; a shorter word keeps them as math (a unit's "cm²", a variable's "x¹", "a<b").
NOTE_WORD_LETTERS = 3


def _tokens(text: str, glyphs: list[Glyph]) -> list[tuple[str, list[Glyph]]] | None:
    """The line's words with their glyphs, or None where the glyphs do not spell the text."""
    out: list[tuple[str, list[Glyph]]] = []
    k = 0
    for word in text.split():
        own = []
        for ch in word:
            if k >= len(glyphs) or glyphs[k].raw != ch:
                return None
            own.append(glyphs[k])
            k += 1
        out.append((word, own))
    return out if k == len(glyphs) else None


def _italic_variables(own: list[Glyph]) -> bool:
    """One italic letter, or up to three with neutral characters between them ("c(g,"); a word of italic
    letters alone ("is") is prose."""
    letters = [g for g in own if g.text.isalpha()]
    return (
        0 < len(letters) <= 3
        and (len(letters) == 1 or any(g.text in _NEUTRAL for g in own))
        and all(not is_upright_font(g.font) for g in letters)
        and all(g.text.isalpha() or g.text in _NEUTRAL for g in own)
    )


def _math_word(own: list[Glyph], math, size: float) -> bool:
    """Whether a word holds math: a glyph `math` says is, other than trailing punctuation, the marks closing
    or opening a word of prose (`_NOTE_SIGNS` beside two letters or more of a text font: "Floats∗",
    "ragged2e-package∗", a footnote's "∗The"; beside `NOTE_WORD_LETTERS` or more, raised note numbers and
    their commas and `_WORD_BRACKETS`: "Migchielsen¹,∗", "¹This", "<name@host>"), a math font's glyph of
    `_NOT_ALONE`, a small letter set inside a word of full-size text-font letters (the raised "A" of the
    LaTeX logo, "LATEX" in the text layer) and a glyph of a monospace face (code in a line of prose: the
    "|" of `\\verb|...|`)."""
    body = list(own)
    while body and (body[-1].text in _TRAILING or _wide_punctuation(body[-1].text)):
        body.pop()
    letters = sum(1 for g in body if g.text.isalpha() and not math(g))
    cjk = any(g.text.isalpha() and ord(g.text[0]) >= 0x2E80 for g in body)

    def mark(g: Glyph) -> bool:  # a note sign, or with a longer word a raised note number or its comma
        if letters >= 2 and g.text in _NOTE_SIGNS:
            return True
        wordy = letters >= NOTE_WORD_LETTERS or cjk  # a CJK word is never a unit or a variable
        return wordy and (g.text in _WORD_BRACKETS or _note_number(g, math, size) or _raised_comma(g, size))

    # marks closing a word ("Floats∗", "Migchielsen¹,∗", "used.¹", "<name@host>") or opening it (a
    # footnote's "∗The", "¹This")
    while len(body) > 1 and mark(body[-1]):
        body.pop()
    while len(body) > 1 and mark(body[0]):
        body.pop(0)

    def full_letter(k: int) -> bool:
        return (
            0 <= k < len(body)
            and body[k].text.isalpha()
            and body[k].size >= 0.85 * size
            and not math(body[k])
        )

    return any(
        math(g)
        and not is_mono_font(g.font)
        # a math font's full stop ("v3.4" of TeX's `$3.4$`) or angle brackets around a placeholder
        # ("key=⟨label format name⟩") make no formula of a word of their own
        and g.text not in _NOT_ALONE
        and not (g.text.isalpha() and full_letter(k - 1) and full_letter(k + 1))
        for k, g in enumerate(body)
    )


def _wide_punctuation(ch: str) -> bool:
    """A CJK or full-width punctuation mark ("：" after a note mark in Chinese prose)."""
    return len(ch) == 1 and bool(WIDE_MARK.match(ch)) and unicodedata.category(ch).startswith("P")


def _raised_comma(g: Glyph, size: float) -> bool:
    """A small comma between two note marks ("¹,∗")."""
    return g.text == "," and g.size < 0.85 * size


def _note_number(g: Glyph, math, size: float) -> bool:
    """Whether a glyph is a digit (or a parenthesis around one) set small and raised: a footnote's number
    where it stands beside a word of prose (`math` says it is a script by its size and place)."""
    if g.size >= 0.85 * size:
        return False
    return math(g) if g.text.isdigit() else g.text in "()"


def inline_text(text: str, glyphs: list[Glyph], rules: list[Rule], is_math, size: float) -> str | None:
    """`text` with its inline formulas as `$...$`; None when it has none (or its glyphs do not match).
    `is_math(glyph)` says whether a glyph is math; `size` is the line's body size (smaller, shifted glyphs
    are scripts)."""
    tokens = _tokens(text, glyphs)
    if not tokens:
        return None

    # a script is small and off the row's baseline (small capitals are small on it: "GPT-4O" in \textsc)
    full = sorted(g.baseline for g in glyphs if g.size >= 0.85 * size)
    base = full[len(full) // 2] if full else None

    def math(g: Glyph) -> bool:
        if is_math(g):
            return True
        small = g.size < 0.85 * size and g.text.isalnum()
        return small and (base is None or abs(g.baseline - base) > 0.1 * size)

    kinds = []
    for word, own in tokens:
        if _math_word(own, math, size):
            kinds.append("math")
        elif all(ch in _NEUTRAL for ch in word) or word in OPERATOR_NAMES:
            kinds.append("neutral")
        elif _italic_variables(own):
            kinds.append("variable")
        else:
            kinds.append("text")
    # math set in a text face's italic (Palatino, Times): "u" of "u ∈ (R/Ann(x))" or "c(g," of
    # "c(g, R/Ann(x))" is math where it touches a math word, prose (an italic "a") elsewhere
    # (next to a word that is math by its own glyphs, not one made math here: "α is" keeps its "is")
    kinds = [
        kind if kind != "variable" else "math" if "math" in kinds[max(0, k - 1) : k + 2] else "text"
        for k, kind in enumerate(kinds)
    ]
    # a note number standing alone beside a word of prose ("¹ If the caption label ...", "站 ⁽¹⁾ 上"): its
    # mark, not a formula
    for k, (_, own) in enumerate(tokens):
        beside = kinds[k - 1 : k] + kinds[k + 1 : k + 2]
        if kinds[k] == "math" and "text" in beside and all(_note_number(g, math, size) for g in own):
            kinds[k] = "text"
    out: list[str] = []
    changed = False
    i = 0
    while i < len(tokens):
        if kinds[i] != "math":
            out.append(tokens[i][0])
            i += 1
            continue
        # numbers and operators just before the first math word belong to it ("1 − 2a")
        while out and kinds[i - 1] == "neutral" and not all(ch in _TRAILING for ch in tokens[i - 1][0]):
            out.pop()
            i -= 1
            kinds[i] = "math"
        j = i
        while j + 1 < len(tokens) and kinds[j + 1] in ("math", "neutral"):
            j += 1
        while j > i and kinds[j] == "neutral" and all(ch in _TRAILING for ch in tokens[j][0]):
            j -= 1
        span = [g for _, own in tokens[i : j + 1] for g in own]
        tail: list[Glyph] = []
        while span and span[-1].text in _TRAILING and not is_math(span[-1]):
            tail.insert(0, span.pop())
        if span and not any(g.text.isalnum() for g in span):
            # a lone sign between words ("size < .Machine") says nothing a reader needs as math
            out.extend(word for word, _ in tokens[i : j + 1])
        elif span:
            box = (
                min(g.x0 for g in span),
                min(g.y0 for g in span),
                max(g.x1 for g in span),
                max(g.y1 for g in span),
            )
            inner = [
                r
                for r in rules
                if box[0] <= (r.box[0] + r.box[2]) / 2 <= box[2] and box[1] - 2 <= r.box[1] <= box[3] + 2
            ]
            latex = glyphs_latex(span, inner)
            if latex:
                out.append(f"${latex}$" + "".join(g.raw for g in tail))
                changed = True
            else:
                out.extend(word for word, _ in tokens[i : j + 1])
        i = j + 1
    return " ".join(out) if changed else None
