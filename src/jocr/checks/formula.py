"""One formula against its reference: normalised exact match, render match, edit distance (docs/checks.md,
"Formulas").

- `normalise_latex`: one spelling per construct, so that equal formulas written differently compare equal:
  delimiters (`$`, `$$`, `\\[..\\]`, `\\(..\\)`) and `\\tag{..}` removed; spacing commands,
  `\\left`/`\\right`,
  `\\displaystyle`, sizing (`\\big`...) dropped; synonyms merged (`\\le` `\\leq`, `\\dfrac` `\\frac`, `\\to`
  `\\rightarrow`, `\\lbrace` `\\{`, Unicode symbols and Greek as their commands); every script argument braced
  (`x^2` -> `x^{2}`), `^{\\prime}` written `'`; tokens joined by one space.
- `exact_match`: the normalised forms are equal.
- `render_match`: KaTeX renders both to MathML and the reference's is contained in the candidate's, or
  their glyph layouts match (`jocr.checks.math.formulas_match`, olmOCR-Bench's math test).
- `edit_distance`: normalised Levenshtein distance between the normalised forms (0 equal, 1 nothing alike).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jocr.checks.text import normalized_edit_distance

_DELIMS = (
    re.compile(r"^\s*\$\$(.*)\$\$\s*$", re.S),
    re.compile(r"^\s*\$(.*)\$\s*$", re.S),
    re.compile(r"^\s*\\\[(.*)\\\]\s*$", re.S),
    re.compile(r"^\s*\\\((.*)\\\)\s*$", re.S),
)
_TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|\S", re.S)
_DROP = frozenset(
    (
        "\\left", "\\right", "\\,", "\\;", "\\:", "\\!", "\\ ", "~", "\\quad", "\\qquad", "\\displaystyle",
        "\\textstyle", "\\scriptstyle", "\\big", "\\Big", "\\bigg", "\\Bigg", "\\bigl", "\\bigr", "\\Bigl",
        "\\Bigr", "\\biggl", "\\biggr", "\\Biggl", "\\Biggr", "\\limits", "\\nolimits", "\\middle",
    )
)  # fmt: skip
_SYNONYMS = {
    "\\le": "\\leq", "\\ge": "\\geq", "\\ne": "\\neq", "\\leqslant": "\\leq", "\\geqslant": "\\geq",
    "\\dfrac": "\\frac", "\\tfrac": "\\frac", "\\rightarrow": "\\to", "\\lbrace": "\\{", "\\rbrace": "\\}",
    "\\vert": "|", "\\lvert": "|", "\\rvert": "|", "\\Vert": "\\|", "\\lVert": "\\|", "\\rVert": "\\|",
    "\\mid": "|", "\\dots": "\\ldots", "\\dotsc": "\\ldots", "\\dotsb": "\\cdots", "\\cdotp": "\\cdot",
    "\\land": "\\wedge", "\\lor": "\\vee", "\\lnot": "\\neg", "\\gets": "\\leftarrow", "\\implies":
    "\\Rightarrow", "\\iff": "\\Leftrightarrow", "\\lbrack": "[", "\\rbrack": "]", "\\colon": ":",
    "\\bf": "\\mathbf", "\\rm": "\\mathrm", "\\it": "\\mathit", "\\operatorname": "\\mathrm",
}  # fmt: skip
_NEGATABLE = {"=": "\\neq", "\\in": "\\notin"}
_TAG = re.compile(r"\\tag\*?\{[^{}]*\}")


def _unicode_tokens() -> dict[str, str]:
    from jocr.checks.latex_symbols import GREEK, SYMBOLS

    table = {**SYMBOLS, **GREEK}
    return {k: v for k, v in table.items() if len(k) == 1 and k not in "{}%#&_$\\"}


_UNICODE: dict[str, str] | None = None


def tokens(latex: str) -> list[str]:
    """The normalised tokens of a formula (see the module docstring)."""
    global _UNICODE
    if _UNICODE is None:
        _UNICODE = _unicode_tokens()
    text = latex.strip()
    for pattern in _DELIMS:
        m = pattern.match(text)
        if m:
            text = m.group(1)
            break
    text = _TAG.sub("", text)
    raw = []
    for tok in _TOKEN.findall(text):
        tok = _UNICODE.get(tok, tok)
        tok = _SYNONYMS.get(tok, tok)
        if tok in _DROP:
            continue
        raw.extend(
            _TOKEN.findall(tok) if tok not in _UNICODE.values() and len(tok) > 1 and tok[0] != "\\" else [tok]
        )
    out: list[str] = []
    i = 0
    while i < len(raw):
        tok = raw[i]
        if tok == "\\not" and i + 1 < len(raw) and raw[i + 1] in _NEGATABLE:
            out.append(_NEGATABLE[raw[i + 1]])
            i += 2
            continue
        if tok in ("^", "_") and i + 1 < len(raw) and raw[i + 1] != "{":
            out += [tok, "{", raw[i + 1], "}"]
            i += 2
            continue
        out.append(tok)
        i += 1
    return _script_order(_primes(_braced_arguments(out)))


# Commands and how many arguments they take: a bare one-token argument (`\\frac 1r`, `\\hat y`) is braced.
_ARITY = {
    "\\frac": 2, "\\binom": 2, "\\sqrt": 1, "\\hat": 1, "\\widehat": 1, "\\bar": 1, "\\overline": 1,
    "\\underline": 1, "\\tilde": 1, "\\widetilde": 1, "\\vec": 1, "\\dot": 1, "\\ddot": 1, "\\check": 1,
    "\\breve": 1, "\\acute": 1, "\\grave": 1, "\\mathbf": 1, "\\mathrm": 1, "\\mathcal": 1, "\\mathbb": 1,
    "\\mathit": 1, "\\mathsf": 1, "\\mathfrak": 1, "\\boldsymbol": 1, "\\text": 1,
}  # fmt: skip


def _braced_arguments(toks: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        out.append(tok)
        i += 1
        for _ in range(_ARITY.get(tok, 0)):
            if i >= len(toks):
                break
            if toks[i] == "{":
                end = _group_end(toks, i)
                out.extend(_braced_arguments(toks[i:end]))
                i = end
            else:
                out += ["{", toks[i], "}"]
                i += 1
    return out


def _group_end(toks: list[str], i: int) -> int:
    """The index after the brace group opening at `i` (len(toks) when it never closes)."""
    depth = 0
    for j in range(i, len(toks)):
        depth += toks[j] == "{"
        depth -= toks[j] == "}"
        if depth == 0:
            return j + 1
    return len(toks)


def _script_order(toks: list[str]) -> list[str]:
    """`x^{a}_{b}` written `x_{b}^{a}`."""
    out: list[str] = []
    i = 0
    while i < len(toks):
        if toks[i] == "^" and i + 1 < len(toks) and toks[i + 1] == "{":
            sup_end = _group_end(toks, i + 1)
            if sup_end + 1 < len(toks) and toks[sup_end] == "_" and toks[sup_end + 1] == "{":
                sub_end = _group_end(toks, sup_end + 1)
                out += toks[sup_end:sub_end] + toks[i:sup_end]
                i = sub_end
                continue
        out.append(toks[i])
        i += 1
    return out


def _primes(toks: list[str]) -> list[str]:
    """`^{\\prime}` (and `^{\\prime\\prime}`) written as `'` marks."""
    out: list[str] = []
    i = 0
    while i < len(toks):
        if toks[i] == "^" and i + 2 < len(toks) and toks[i + 1] == "{" and toks[i + 2] in ("\\prime", "'"):
            j = i + 2
            n = 0
            while j < len(toks) and toks[j] in ("\\prime", "'"):
                n += 1
                j += 1
            if j < len(toks) and toks[j] == "}":
                out += ["'"] * n
                i = j + 1
                continue
        out.append(toks[i])
        i += 1
    return out


def normalise_latex(latex: str) -> str:
    """The formula's normalised form: its tokens joined by single spaces."""
    return " ".join(tokens(latex))


def exact_match(reference: str, candidate: str) -> bool:
    return normalise_latex(reference) == normalise_latex(candidate)


def edit_distance(reference: str, candidate: str) -> float:
    """Normalised edit distance of the normalised forms (0 equal, 1 nothing alike)."""
    return normalized_edit_distance(normalise_latex(reference), normalise_latex(candidate))


def render_match(reference: str, candidate: str) -> bool:
    """olmOCR-Bench's comparison (KaTeX MathML containment, then glyph layout): False where either does not
    render."""
    from jocr.checks.math import formulas_match

    if not candidate.strip():
        return False
    return formulas_match(reference.strip(), candidate.strip())


@dataclass
class FormulaScore:
    exact: bool
    rendered: bool
    edit: float

    def to_dict(self) -> dict:
        return {"exact": self.exact, "rendered": self.rendered, "edit": round(self.edit, 4)}


def score_formula(reference: str, candidate: str, render: bool = True) -> FormulaScore:
    """All three measures of one candidate (`render` False skips the KaTeX comparison)."""
    exact = exact_match(reference, candidate)
    rendered = exact or (render and render_match(reference, candidate))
    return FormulaScore(exact, rendered, edit_distance(reference, candidate))
