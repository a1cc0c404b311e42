"""Formula templates and their rendering with matplotlib's mathtext.

The ground truth of a formula is exactly the LaTeX string that mathtext rendered. Templates use only
constructs that both mathtext draws correctly and KaTeX parses (the olmOCR-Bench `math` test compares
KaTeX renderings): `\\frac`, `\\sqrt`, sub/superscripts, `\\sum`/`\\int`/`\\prod` with limits, Greek
letters, `\\cdot \\times \\pm \\leq \\geq \\neq \\approx \\infty \\partial \\nabla`, `\\mathrm`, `\\hat`,
`\\bar`, `\\left( \\right)`. Templates are parameterised by letters and numbers so formulas vary.
"""

from __future__ import annotations

import functools
import random

import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.mathtext import MathTextParser

MATH_FONTSETS = ("cm", "stix", "dejavusans", "dejavuserif")

_LETTERS = "abcdfghkmnpqrstuvwxyz"
_GREEK = (
    "\\alpha",
    "\\beta",
    "\\gamma",
    "\\delta",
    "\\lambda",
    "\\mu",
    "\\sigma",
    "\\theta",
    "\\phi",
    "\\omega",
)


def _v(rng: random.Random) -> str:
    return rng.choice(_LETTERS)


def _g(rng: random.Random) -> str:
    return rng.choice(_GREEK)


def _n(rng: random.Random, lo: int = 2, hi: int = 9) -> str:
    return str(rng.randint(lo, hi))


def _distinct(rng: random.Random, k: int) -> list[str]:
    return rng.sample(_LETTERS, k)


def display_formula(rng: random.Random) -> str:
    """A display formula (rendered on its own line, `$$...$$` in the ground truth)."""
    a, b, c = _distinct(rng, 3)
    g = _g(rng)
    n1, n2 = _n(rng), _n(rng)
    templates = (
        f"{a}^{{2}}+{b}^{{2}}={c}^{{2}}",
        f"\\frac{{{a}}}{{{b}}}+\\frac{{{c}}}{{{n1}}}=\\frac{{{n1}{a}+{b}{c}}}{{{n1}{b}}}",
        f"\\sum_{{i=1}}^{{n}} {a}_{{i}}={n1}{n2}",
        f"\\int_{{0}}^{{1}} {a}^{{{n1}}} \\, d{a}=\\frac{{1}}{{{int(n1) + 1}}}",
        f"{c}=\\sqrt{{{a}^{{2}}+{b}^{{2}}}}",
        f"f({a})={n1}{a}^{{2}}+{n2}{a}+{_n(rng, 1, 9)}",
        f"{a}_{{1,2}}=\\frac{{-{b} \\pm \\sqrt{{{b}^{{2}}-4{a}{c}}}}}{{2{a}}}",
        f"\\bar{{{a}}}=\\frac{{1}}{{n}} \\sum_{{i=1}}^{{n}} {a}_{{i}}",
        f"\\sigma^{{2}}=\\frac{{1}}{{N}} \\sum_{{i=1}}^{{N}} \\left({a}_{{i}}-\\mu\\right)^{{2}}",
        "e^{i \\pi}+1=0",
        f"\\prod_{{k=1}}^{{{n1}}} k={_factorial(int(n1))}",
        f"\\frac{{\\partial {a}}}{{\\partial {b}}}={n1} {g} {b}",
        f"{g}={n1}.{_n(rng, 0, 9)} \\times 10^{{-{n2}}}",
        f"\\hat{{{a}}}=\\frac{{{b}}}{{1+e^{{-{c}}}}}",
        f"P({a} \\mid {b})=\\frac{{P({b} \\mid {a}) P({a})}}{{P({b})}}",
        f"\\sin^{{2}} {g}+\\cos^{{2}} {g}=1",
        f"\\log_{{{n1}}} {a}={b}",
        f"{n1} \\leq {a} \\leq {int(n1) + int(n2)}",
        "\\nabla \\cdot \\mathrm{E}=\\frac{\\rho}{\\epsilon_{0}}",
        f"\\mathrm{{E}}[{a}]=\\sum_{{{b}}} {b} \\, p({b})",
        f"{a}({b})={a}_{{0}} e^{{-{g} {b}}}",
        "\\lim_{n \\to \\infty} \\left(1+\\frac{1}{n}\\right)^{n}=e",
    )
    return rng.choice(templates)


def inline_formula(rng: random.Random) -> str:
    """A short formula set inside a sentence (`$...$` in the ground truth)."""
    a, b = _distinct(rng, 2)
    g = _g(rng)
    templates = (
        f"{a}^{{2}}",
        f"{a}_{{{_n(rng, 0, 9)}}}",
        f"{g}={_n(rng, 0, 9)}.{_n(rng, 0, 9)}{_n(rng, 1, 9)}",
        f"n={rng.randint(10, 999)}",
        f"p<0.0{_n(rng, 1, 5)}",
        "O(n \\log n)",
        f"{a} \\times {b}",
        f"\\frac{{{a}}}{{{b}}}",
        f"{a} \\geq {_n(rng)}",
        f"\\sqrt{{{a}}}",
        f"{g}_{{{a}}}",
        f"{a}+{b}={_n(rng, 10, 99)}",
    )
    return rng.choice(templates)


def _factorial(n: int) -> int:
    out = 1
    for k in range(2, n + 1):
        out *= k
    return out


@functools.cache
def _parser() -> MathTextParser:
    return MathTextParser("agg")


@functools.lru_cache(maxsize=4096)
def render_math(latex: str, size_px: int, fontset: str = "cm") -> tuple[np.ndarray, int]:
    """Render LaTeX with mathtext at a font size in pixels.

    Returns (coverage (H, W) uint8 with ink = 255, depth: pixels of the image below the baseline).
    At dpi 72 one point is one pixel, so `size_px` matches a PIL font of the same pixel size.
    """
    prop = FontProperties(size=size_px, math_fontfamily=fontset)
    parsed = _parser().parse(f"${latex}$", dpi=72, prop=prop)
    image = np.asarray(parsed.image, dtype=np.uint8)  # (H, W)
    image.setflags(write=False)
    return image, int(round(parsed.depth))
