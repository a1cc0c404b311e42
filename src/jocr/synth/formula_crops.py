"""Formula crops for the learned formula reader (docs/training.md, "Formula reader").

A crop is one formula typeset by matplotlib's mathtext, cut with a margin as a region of a page would be,
and its target the formula's LaTeX in the form `jocr parse --task formula` writes (`$$\\n...\\n$$`, as the
text-layer reader's `FormulaResult.markdown`). Formulas come from two sources: the templates of
`jocr.synth.formulas` (the page profiles' formulas) and a small random grammar, so a reader sees
constructs combined in ways no template lists (fractions inside roots inside scripts, relations chained,
big operators over any term) rather than learning a fixed list by heart.

The grammar keeps to what mathtext draws and KaTeX parses (the same set the templates use, plus upper-case
Greek, `\\mathbf`, `\\tilde`, `\\vec`, set and arrow relations, `\\left[ \\right]` and `\\left| \\right|`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from PIL import Image

from jocr.synth.formulas import MATH_FONTSETS, display_formula, render_math

_LETTERS = "abcdefghkmnpqrstuvwxyzABCDFGHKLMNPRSTUVWXYZ"
_GREEK = (
    "\\alpha", "\\beta", "\\gamma", "\\delta", "\\epsilon", "\\eta", "\\theta", "\\kappa", "\\lambda",
    "\\mu", "\\nu", "\\xi", "\\pi", "\\rho", "\\sigma", "\\tau", "\\phi", "\\chi", "\\psi", "\\omega",
    "\\Gamma", "\\Delta", "\\Theta", "\\Lambda", "\\Sigma", "\\Phi", "\\Psi", "\\Omega",
)  # fmt: skip
_FUNCTIONS = ("\\sin", "\\cos", "\\tan", "\\log", "\\ln", "\\exp")
_BINARY = ("+", "-", "+", "-", " \\cdot ", " \\times ", " \\pm ")
_RELATIONS = (
    "=", "=", "=", " \\leq ", " \\geq ", "<", ">", " \\neq ", " \\approx ", " \\equiv ", " \\sim ",
    " \\in ", " \\subset ", " \\to ", " \\rightarrow ",
)  # fmt: skip
_ACCENTS = ("\\hat", "\\bar", "\\tilde", "\\vec", "\\dot")
_BRACKETS = (("\\left(", "\\right)"), ("\\left[", "\\right]"), ("\\left|", "\\right|"))
_BIG = ("\\sum", "\\prod", "\\int")
_INFINITY = "\\infty"
_UPPER_LIMITS = ("1", "n", "N", "K", _INFINITY)
MAX_DEPTH = 3  # nesting of fractions, roots, brackets and big operators
_NESTING = (0.45, 0.25, 0.1)  # chance that a term at depth 0, 1, 2 is one of them rather than an atom


@dataclass
class FormulaCropConfig:
    """How crops are drawn: the share of template formulas, the glyph size and margin ranges in pixels,
    the widest formula and its longest LaTeX (a
    longer one is drawn again: the reader's answers stay short)."""

    template_share: float = 0.25
    size_px: tuple[int, int] = (18, 44)
    margin_px: tuple[int, int] = (2, 24)
    max_width_px: int = 1400
    max_chars: int = 110
    degrade_share: float = 0.5  # crops degraded like scans even where the caller does not ask for it


def _letter(rng: random.Random) -> str:
    return rng.choice(_GREEK) if rng.random() < 0.25 else rng.choice(_LETTERS)


def _number(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.6:
        return str(rng.randint(0, 9))
    if roll < 0.85:
        return str(rng.randint(10, 999))
    return f"{rng.randint(0, 99)}.{rng.randint(0, 99)}"


def _script(rng: random.Random, depth: int) -> str:
    """A sub- or superscript's content: short (a letter, a number, i+1, -1, 2n, a small expression)."""
    roll = rng.random()
    if roll < 0.35:
        return rng.choice("ijknmt") if rng.random() < 0.6 else _number(rng)
    if roll < 0.55:
        return f"{rng.choice('ijknt')}{rng.choice('+-')}{rng.randint(1, 3)}"
    if roll < 0.7:
        return f"-{rng.choice('12n')}"
    if roll < 0.9 or depth + 1 >= MAX_DEPTH:
        return f"{rng.choice('ijk')}{rng.choice('jkl')}"
    return _expression(rng, depth + 1, terms=2)


def _atom(rng: random.Random, depth: int) -> str:
    """A letter or number, perhaps with scripts, an accent, bold, a prime or a function applied to it."""
    roll = rng.random()
    if roll < 0.2:
        return _number(rng)
    base = _letter(rng)
    if roll < 0.28 and not base.startswith("\\"):
        base = f"\\{rng.choice(_ACCENTS)[1:]}{{{base}}}"
    elif roll < 0.33 and not base.startswith("\\"):
        base = f"\\mathbf{{{base}}}"
    elif roll < 0.43:
        return f"{rng.choice(_FUNCTIONS)} {base}"
    elif roll < 0.5:
        return f"{rng.choice('fgh')}({base})"
    if rng.random() < 0.35:
        base += f"_{{{_script(rng, depth)}}}"
    if rng.random() < 0.3:
        base += f"^{{{_script(rng, depth)}}}"
    elif rng.random() < 0.05:
        base += "'"
    return base


def _term(rng: random.Random, depth: int) -> str:
    """An atom, or at depth left a fraction, root, bracketed expression or big operator over a term."""
    if depth >= MAX_DEPTH or rng.random() >= _NESTING[depth]:
        return _atom(rng, depth)
    roll = rng.random()
    if roll < 0.35:
        return f"\\frac{{{_expression(rng, depth + 1)}}}{{{_expression(rng, depth + 1)}}}"
    if roll < 0.5:
        index = f"[{rng.choice('3n4')}]" if rng.random() < 0.2 else ""
        return f"\\sqrt{index}{{{_expression(rng, depth + 1)}}}"
    if roll < 0.75:
        left, right = rng.choice(_BRACKETS)
        power = f"^{{{_script(rng, depth)}}}" if rng.random() < 0.4 else ""
        return f"{left}{_expression(rng, depth + 1)}{right}{power}"
    op = rng.choice(_BIG)
    if op == "\\int":
        var = rng.choice("xtsuy")
        lower = _number(rng) if rng.random() < 0.7 else "a"
        limits = f"_{{{lower}}}^{{{rng.choice(_UPPER_LIMITS)}}}"
        return f"\\int{limits} {_expression(rng, depth + 1, terms=2)} \\, d{var}"
    var = rng.choice("ijkn")
    return f"{op}_{{{var}=1}}^{{{rng.choice(_UPPER_LIMITS[1:])}}} {_term(rng, depth + 1)}"


def _expression(rng: random.Random, depth: int, terms: int = 3) -> str:
    """One to `terms` terms (fewer the deeper it sits) joined by binary operators or side by side."""
    count = rng.randint(1, max(1, terms - depth))
    out = _term(rng, depth)
    for _ in range(count - 1):
        joiner = rng.choice(_BINARY) if rng.random() < 0.75 else " "
        out += joiner + _term(rng, depth)
    return out


def random_formula(rng: random.Random) -> str:
    """A display formula from the grammar: an expression, or a relation of two or three of them; sometimes
    under a limit."""
    sides = [_expression(rng, 0)]
    for _ in range(rng.choice((0, 1, 1, 1, 2))):
        sides.append(rng.choice(_RELATIONS) + _expression(rng, 0))
    latex = "".join(sides)
    if rng.random() < 0.06:
        latex = f"\\lim_{{{rng.choice('nxt')} \\to {rng.choice(('0', _INFINITY))}}} {latex}"
    return latex


def formula_crop(
    seed: int, degrade: bool = False, cfg: FormulaCropConfig | None = None
) -> tuple[Image.Image, str]:
    """(RGB crop, target) of one formula, deterministically from `seed`; `degrade` (or a draw under
    `cfg.degrade_share`) applies the scan degradations of `jocr.synth.degrade` at a random strength."""
    cfg = cfg or FormulaCropConfig()
    rng = random.Random(f"jocr-formula-crop/{seed}")
    while True:
        latex = display_formula(rng) if rng.random() < cfg.template_share else random_formula(rng)
        if len(latex) > cfg.max_chars:
            continue
        fontset = rng.choice(MATH_FONTSETS)
        try:
            coverage, _ = render_math(latex, rng.randint(*cfg.size_px), fontset)
        except ValueError:  # mathtext refused the formula: draw another
            continue
        if 0 < coverage.shape[1] <= cfg.max_width_px:
            break
    return paper_crop(coverage, rng, cfg.margin_px, cfg.degrade_share, degrade), f"$$\n{latex}\n$$"


def paper_crop(
    coverage: np.ndarray, rng: random.Random, margin_px: tuple[int, int], degrade_share: float, degrade: bool
) -> Image.Image:
    """A formula's coverage as a crop: ink on paper with a margin (`ink_on_paper`), degraded like a scan
    (`jocr.synth.degrade`, at a random strength) when `degrade` or by a draw under `degrade_share`."""
    image = ink_on_paper(coverage, rng, margin_px)
    if degrade or rng.random() < degrade_share:
        from jocr.synth.degrade import degrade as apply_degrade

        image, _ = apply_degrade(image, rng.uniform(0.2, 0.8), rng)
    return image


def ink_on_paper(coverage: np.ndarray, rng: random.Random, margin_px: tuple[int, int]) -> Image.Image:
    """The coverage (H, W; ink 255) as dark ink on light paper with a margin on each side."""
    h, w = coverage.shape
    top, bottom, left, right = (rng.randint(*margin_px) for _ in range(4))
    paper = rng.randint(225, 255)
    ink = rng.randint(0, 60)
    canvas = np.full((h + top + bottom, w + left + right), paper, dtype=np.float32)  # (H', W')
    alpha = coverage.astype(np.float32) / 255.0
    canvas[top : top + h, left : left + w] = paper * (1 - alpha) + ink * alpha
    grey = Image.fromarray(np.rint(canvas).astype(np.uint8), mode="L")
    return grey.convert("RGB")
