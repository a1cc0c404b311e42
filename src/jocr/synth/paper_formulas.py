"""Display formulas as papers and textbooks print them, for formula crops typeset by KaTeX
(`jocr.synth.katex_crops`; docs/training.md, "The formula reader").

The mathtext grammar of `jocr.synth.formula_crops` keeps to what matplotlib draws: no `\\text`, no
matrices or cases, no blackboard or calligraphic letters, no `\\langle`, `\\otimes` or `\\mapsto`. Real
display formulas are full of them, and of index-heavy physics and PDE notation (`\\Pi_{k}^{B}`,
`\\varepsilon^{ijk}\\partial_{j}`, `u_{x_{i}x_{j}}`, `\\dot{\\mathbf{B}}^{T}`), upright differentials and
words (`\\mathrm{d}x`, `\\quad \\text{for } x \\in U`), and trailing punctuation. This grammar draws such
formulas, written in the one spelling per construct that `jocr.checks.formula.normalise_latex` compares
(`\\mathbf` not `\\bf`, `\\mathrm` not `\\operatorname`, `\\leq` not `\\le`, scripts braced, `'` for a
prime), with `\\left`/`\\right` only around what is taller than a line (a fraction, a big operator, a
matrix), as a typesetter would.
"""

from __future__ import annotations

import random
import re

_LATIN = "abcdefghklmnpqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_GREEK = (
    "\\alpha", "\\beta", "\\gamma", "\\delta", "\\epsilon", "\\varepsilon", "\\zeta", "\\eta", "\\theta",
    "\\vartheta", "\\kappa", "\\lambda", "\\mu", "\\nu", "\\xi", "\\pi", "\\rho", "\\sigma", "\\tau",
    "\\phi", "\\varphi", "\\chi", "\\psi", "\\omega", "\\Gamma", "\\Delta", "\\Theta", "\\Lambda", "\\Xi",
    "\\Pi", "\\Sigma", "\\Phi", "\\Psi", "\\Omega", "\\ell", "\\hbar",
)  # fmt: skip
_INDICES = "ijklmnpqrstxyz"
_FUNCTIONS = ("\\sin", "\\cos", "\\tan", "\\exp", "\\log", "\\ln", "\\det", "\\sinh", "\\cosh", "\\arctan")
_UPRIGHT = ("tr", "div", "curl", "diag", "rank", "sgn", "Re", "Im", "var", "const")
_BINARY = ("+", "-", "+", "-", "\\cdot", "\\times", "\\pm", "\\mp", "\\otimes", "\\oplus", "\\circ",
           "\\wedge")  # fmt: skip
_RELATIONS = (
    "=", "=", "=", "=", "\\equiv", "\\approx", "\\simeq", "\\sim", "\\propto", "\\leq", "\\geq", "<", ">",
    "\\ll", "\\gg", "\\neq", "\\to", "\\mapsto", "\\Rightarrow", "\\subset", "\\subseteq", "\\in", ":=",
)  # fmt: skip
_ACCENTS = ("\\hat", "\\tilde", "\\bar", "\\dot", "\\ddot", "\\vec", "\\overline")
_SUPERSCRIPT_MARKS = ("*", "T", "-1", "\\dagger", "(n)", "(k)", "2")
_BRACKETS = (("(", ")"), ("(", ")"), ("[", "]"), ("\\{", "\\}"), ("|", "|"), ("\\|", "\\|"),
             ("\\langle", "\\rangle"))  # fmt: skip
_TEXT_WORDS = ("for ", "if ", "and ", "on ", "in ", "with ", "where ", "otherwise", "as ", "a.e. ")
_MATRICES = ("pmatrix", "bmatrix", "vmatrix")
_UPPER_LIMITS = ("1", "T", "t", "\\infty", "L")
_DOMAINS = ("\\Omega", "U", "V", "\\partial U", "\\mathbb{R}^{n}", "S")
_LIMIT_POINTS = ("0", "\\infty")
_COMMAND_END = re.compile(r"\\[A-Za-z]+$")
_ROW_BREAK = " \\\\ "
MAX_DEPTH = 3
_NESTING = (0.35, 0.18, 0.05)  # chance that a term at depth 0, 1, 2 is a structure rather than an atom


def _join(parts: list[str]) -> str:
    """Parts side by side; a space only where a command name would run into the next letter."""
    out = ""
    for part in parts:
        if part:
            out += " " + part if _COMMAND_END.search(out) and part[0].isalpha() else part
    return out


def _letter(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(_GREEK)
    if roll < 0.38:
        return f"\\mathbf{{{rng.choice(_LATIN)}}}"
    if roll < 0.42:
        return f"\\mathcal{{{rng.choice('ABCDEFGHLMNOPS')}}}"
    if roll < 0.45:
        return f"\\mathbb{{{rng.choice('RCNZEP')}}}"
    return rng.choice(_LATIN)


def _number(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.65:
        return str(rng.randint(0, 9))
    if roll < 0.85:
        return str(rng.randint(10, 99))
    return f"{rng.randint(0, 9)}.{rng.randint(0, 999)}"


def _index(rng: random.Random, depth: int) -> str:
    """A sub- or superscript's content: indices (k, ij, \\mu\\nu), a mark (*, T, -1), i+1, a nested
    subscript (x_{i}), a short expression."""
    roll = rng.random()
    if roll < 0.3:
        return "".join(rng.sample(_INDICES, rng.choice((1, 1, 1, 2, 2, 3))))
    if roll < 0.4:
        return rng.choice(("\\mu", "\\nu", "\\mu\\nu", "\\alpha", "\\beta", "0", "1", "2"))
    if roll < 0.5:
        return _number(rng)
    if roll < 0.6:
        return f"{rng.choice(_INDICES)}{rng.choice('+-')}{rng.randint(1, 2)}"
    if roll < 0.68:
        return "".join(f"{rng.choice('xyt')}_{{{rng.choice(_INDICES)}}}" for _ in range(rng.choice((1, 2))))
    if roll < 0.74:
        return rng.choice(("B", "V", "L", "T", "A", "U", "\\mathrm{eff}", "\\mathrm{max}", "0"))
    if roll < 0.8:
        return f"{rng.choice(_INDICES)},{rng.choice(_INDICES)}"
    return _join([_letter(rng), rng.choice("+-"), _letter(rng) if rng.random() < 0.5 else _number(rng)])


def _scripted(rng: random.Random, base: str, depth: int) -> str:
    if rng.random() < 0.45:
        base += f"_{{{_index(rng, depth)}}}"
    roll = rng.random()
    if roll < 0.25:
        base += f"^{{{_index(rng, depth)}}}"
    elif roll < 0.33:
        base += f"^{{{rng.choice(_SUPERSCRIPT_MARKS)}}}"
    elif roll < 0.37:
        base += rng.choice(("'", "'", "''"))
    return base


def _atom(rng: random.Random, depth: int) -> str:
    """A letter or number with scripts, an accent, a function, a derivative or a differential."""
    roll = rng.random()
    if roll < 0.14:
        return _number(rng)
    if roll < 0.22:
        accent = rng.choice(_ACCENTS)
        inner = rng.choice(_LATIN) if rng.random() < 0.6 else _letter(rng)
        return _scripted(rng, f"{accent}{{{inner}}}", depth)
    if roll < 0.3:
        return _join([rng.choice(_FUNCTIONS), _scripted(rng, _letter(rng), depth)])
    if roll < 0.36:
        name = rng.choice(("\\partial", "\\nabla", "\\partial", "\\Delta"))
        if name == "\\partial":
            return _join([f"\\partial_{{{_index(rng, MAX_DEPTH)}}}", _scripted(rng, _letter(rng), depth)])
        if name == "\\nabla" and rng.random() < 0.5:
            return _join(["\\nabla", rng.choice(("\\times", "\\cdot")), _letter(rng)])
        return _join([name, _letter(rng)])
    if roll < 0.4:
        return f"\\mathrm{{{rng.choice(_UPRIGHT)}}}({_letter(rng)})"
    if roll < 0.47:
        return f"{rng.choice('fguFGHvw')}({', '.join(_letter(rng) for _ in range(rng.choice((1, 1, 2))))})"
    return _scripted(rng, _letter(rng), depth)


def _matrix(rng: random.Random, depth: int) -> str:
    kind = rng.choice(_MATRICES)
    rows, cols = rng.choice(((2, 2), (2, 2), (2, 3), (3, 3), (3, 1), (2, 1)))
    cells = [" & ".join(_atom(rng, MAX_DEPTH) for _ in range(cols)) for _ in range(rows)]
    return f"\\begin{{{kind}}}{_ROW_BREAK.join(cells)}\\end{{{kind}}}"


def _big_operator(rng: random.Random, depth: int) -> str:
    op = rng.choice(("\\sum", "\\sum", "\\int", "\\int", "\\prod", "\\oint", "\\iint", "\\max", "\\min",
                     "\\sup", "\\lim"))  # fmt: skip
    body = _term(rng, depth + 1)
    if op in ("\\int", "\\oint", "\\iint"):
        var = rng.choice("xtsryz")
        roll = rng.random()
        if roll < 0.5:
            limits = f"_{{{_number(rng)}}}^{{{rng.choice(_UPPER_LIMITS)}}}"
        else:
            limits = f"_{{{rng.choice(_DOMAINS)}}}" if roll < 0.8 else ""
        return _join(
            [f"{op}{limits}", body, f"\\,\\mathrm{{d}}{var}" if rng.random() < 0.6 else f"\\,d{var}"]
        )
    if op == "\\lim":
        point = rng.choice(_LIMIT_POINTS)
        return _join([f"\\lim_{{{rng.choice('nkxt')}\\to {point}}}", body])
    if op in ("\\max", "\\min", "\\sup"):
        return _join([f"{op}_{{{rng.choice(_INDICES)}\\in {rng.choice('UVSK')}}}", body])
    index = rng.choice(_INDICES)
    lower = rng.choice((f"{index}=1", f"{index}=0", f"{index},{rng.choice(_INDICES)}", index))
    upper = rng.choice(("N", "n", "\\infty", "K", "")) if "=" in lower else ""
    return _join([f"{op}_{{{lower}}}" + (f"^{{{upper}}}" if upper else ""), body])


def _term(rng: random.Random, depth: int) -> str:
    """An atom, or (while depth allows) a fraction, root, bracketed expression, matrix or big operator."""
    if depth >= MAX_DEPTH or rng.random() >= _NESTING[depth]:
        return _atom(rng, depth)
    roll = rng.random()
    if roll < 0.3:
        return f"\\frac{{{_expression(rng, depth + 1)}}}{{{_expression(rng, depth + 1)}}}"
    if roll < 0.4:
        index = f"[{rng.choice('3n')}]" if rng.random() < 0.15 else ""
        return f"\\sqrt{index}{{{_expression(rng, depth + 1)}}}"
    if roll < 0.7:
        left, right = rng.choice(_BRACKETS)
        if rng.random() < 0.25:  # a pair or triple: (\Sigma, \Sigma_{i}), [U(x), \Pi^{U}(y)]
            inner = ", ".join(_expression(rng, depth + 2, terms=2) for _ in range(rng.choice((2, 2, 3))))
        else:
            inner = _expression(rng, depth + 1)
        tall = "\\frac" in inner or "\\sum" in inner or "\\int" in inner or "\\begin" in inner
        if tall:
            left, right = f"\\left{left}", f"\\right{right}"
        elif rng.random() < 0.15 and left in ("(", "["):
            left, right = f"\\big{left}", f"\\big{right}"
        power = f"^{{{_index(rng, depth)}}}" if rng.random() < 0.3 else ""
        return _join([left, inner, right]) + power
    if roll < 0.78 and depth == 0:
        return _matrix(rng, depth)
    return _big_operator(rng, depth)


def _expression(rng: random.Random, depth: int, terms: int = 3) -> str:
    count = rng.randint(1, max(1, terms - depth))
    parts = [rng.choice(("-", "")) if rng.random() < 0.15 else "", _term(rng, depth)]
    for _ in range(count - 1):
        parts.append(rng.choice(_BINARY) if rng.random() < 0.7 else "")
        parts.append(_term(rng, depth))
    return _join(parts)


def _condition(rng: random.Random) -> str:
    """A trailing condition: `\\quad \\text{for } x \\in U`, `,\\quad t>0`."""
    word = rng.choice(_TEXT_WORDS)
    tail = _join([rng.choice(_LATIN[:20]), rng.choice(("\\in", ">", "<", "\\geq", "\\neq")), _letter(rng)])
    if word == "otherwise":
        return "\\quad \\text{otherwise}"
    return _join([rng.choice(("\\quad ", ",\\quad ", "\\qquad ")) + f"\\text{{{word}}}", tail])


def _cases(rng: random.Random) -> str:
    rows = [
        f"{_expression(rng, 1, terms=2)} & \\text{{{rng.choice(('if ', 'for '))}}}"
        + _join([rng.choice(_LATIN[:20]), rng.choice(("\\in", ">", "<", "\\geq")), _letter(rng)])
        for _ in range(rng.choice((2, 2, 3)))
    ]
    return f"\\begin{{cases}}{_ROW_BREAK.join(rows)}\\end{{cases}}"


def paper_formula(rng: random.Random) -> str:
    """One display formula: a relation chain of expressions (sometimes a definition by cases), perhaps a
    condition after it and a comma or full stop."""
    if rng.random() < 0.06:
        latex = _join([_scripted(rng, _letter(rng), 1), "=", _cases(rng)])
    else:
        parts = [_expression(rng, 0)]
        for _ in range(rng.choice((0, 1, 1, 1, 2))):
            parts += [rng.choice(_RELATIONS), _expression(rng, 0)]
        latex = _join(parts)
        if rng.random() < 0.12:
            latex = _join([latex, _condition(rng)])
    return _punctuated(rng, latex, 0.25, 0.4)


def _punctuated(rng: random.Random, latex: str, comma: float, stop: float) -> str:
    """The formula with a comma after it (one roll below `comma`), a full stop (below `stop`) or nothing:
    a display formula ends or continues its sentence."""
    roll = rng.random()
    return latex + ("," if roll < comma else "." if roll < stop else "")


def _long_chain(rng: random.Random) -> str:
    """A relation chain of long expressions (4 to 6 terms each): a Lagrangian, an energy identity."""
    parts = [_expression(rng, 0, terms=rng.randint(4, 6))]
    for _ in range(rng.choice((1, 1, 2, 3))):
        parts += [rng.choice(_RELATIONS), _expression(rng, 0, terms=rng.randint(3, 5))]
    return _join(parts)


def _aligned(rng: random.Random) -> str:
    """Two to four rows aligned at their relation (`\\begin{aligned} a &= b \\\\ &= c \\end{aligned}`): a
    derivation, or a system of equations."""
    rows = []
    first = _expression(rng, 0, terms=2)
    for k in range(rng.choice((2, 2, 3, 4))):
        head = first if k == 0 or rng.random() < 0.35 else ""
        relation = rng.choice(("=", "=", "=", "\\leq", "\\geq", "\\equiv"))
        rows.append(_join([head, f"&{relation}", _expression(rng, 0, terms=rng.randint(2, 4))]))
        if head and k:
            first = _expression(rng, 0, terms=2)
    return f"\\begin{{aligned}}{_ROW_BREAK.join(rows)}\\end{{aligned}}"


def long_paper_formula(rng: random.Random) -> str:
    """A display formula longer than `paper_formula` draws: a long relation chain on one line, or (a quarter
    of them) rows aligned at their relations; a comma or full stop after a third of them."""
    latex = _aligned(rng) if rng.random() < 0.25 else _long_chain(rng)
    return _punctuated(rng, latex, 0.2, 0.33)
