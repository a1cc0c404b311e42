"""Characters of a formula -> LaTeX, one spelling per symbol: what the formula reader (`jocr.layout.formulas`)
writes and what `jocr.checks.formula` normalises Unicode to."""

from __future__ import annotations

import re
import unicodedata

GREEK = {
    "α": "\\alpha", "β": "\\beta", "γ": "\\gamma", "δ": "\\delta", "ϵ": "\\epsilon", "ε": "\\varepsilon",
    "ζ": "\\zeta", "η": "\\eta", "θ": "\\theta", "ϑ": "\\vartheta", "ι": "\\iota", "κ": "\\kappa",
    "λ": "\\lambda", "μ": "\\mu", "µ": "\\mu", "ν": "\\nu", "ξ": "\\xi", "π": "\\pi", "ϖ": "\\varpi",
    "ρ": "\\rho", "ϱ": "\\varrho", "σ": "\\sigma", "ς": "\\varsigma", "τ": "\\tau", "υ": "\\upsilon",
    "ϕ": "\\phi", "φ": "\\varphi", "χ": "\\chi", "ψ": "\\psi", "ω": "\\omega",
    "Γ": "\\Gamma", "Δ": "\\Delta", "Θ": "\\Theta", "Λ": "\\Lambda", "Ξ": "\\Xi", "Π": "\\Pi",
    "∆": "\\Delta", "\u2126": "\\Omega",
    "Σ": "\\Sigma", "Υ": "\\Upsilon", "Φ": "\\Phi", "Ψ": "\\Psi", "Ω": "\\Omega",
}  # fmt: skip
SYMBOLS = {
    "±": "\\pm", "∓": "\\mp", "×": "\\times", "÷": "\\div", "·": "\\cdot", "⋅": "\\cdot", "∙": "\\cdot",
    "−": "-", "–": "-", "∗": "*", "⋆": "\\star", "∘": "\\circ", "○": "\\circ", "◦": "\\circ", "•": "\\bullet",
    "≤": "\\leq", "≥": "\\geq", "≦": "\\leq", "≧": "\\geq", "⩽": "\\leq", "⩾": "\\geq", "≠": "\\neq",
    "≈": "\\approx", "≡": "\\equiv", "∼": "\\sim", "≃": "\\simeq", "≅": "\\cong", "∝": "\\propto",
    "≪": "\\ll", "≫": "\\gg", "≺": "\\prec", "≻": "\\succ", "⪯": "\\preceq", "⪰": "\\succeq",
    "∞": "\\infty", "∂": "\\partial", "∇": "\\nabla", "ℓ": "\\ell", "ℏ": "\\hbar", "ℵ": "\\aleph",
    "∅": "\\emptyset", "∀": "\\forall", "∃": "\\exists", "¬": "\\neg", "∧": "\\wedge", "∨": "\\vee",
    "∈": "\\in", "∉": "\\notin", "∋": "\\ni", "⊂": "\\subset", "⊃": "\\supset", "⊆": "\\subseteq",
    "⊇": "\\supseteq", "∪": "\\cup", "∩": "\\cap", "∖": "\\setminus", "⊕": "\\oplus", "⊖": "\\ominus",
    "⊗": "\\otimes", "⊙": "\\odot", "⊥": "\\perp", "⊤": "\\top", "⊢": "\\vdash", "∣": "\\mid",
    "∶": ":",  # U+2236 RATIO: unicode-math's colon in math ("f ∶ A ↦ B")
    "‖": "\\|", "∥": "\\|", "→": "\\to", "←": "\\leftarrow", "↔": "\\leftrightarrow", "⇒": "\\Rightarrow",
    "⇐": "\\Leftarrow", "⇔": "\\Leftrightarrow", "↦": "\\mapsto", "↑": "\\uparrow", "↓": "\\downarrow",
    "⟨": "\\langle", "⟩": "\\rangle", "⌈": "\\lceil", "⌉": "\\rceil", "⌊": "\\lfloor", "⌋": "\\rfloor",
    "{": "\\{", "}": "\\}", "…": "\\ldots", "⋯": "\\cdots", "⋮": "\\vdots", "⋱": "\\ddots", "′": "'",
    "″": "''", "∠": "\\angle", "△": "\\triangle", "ℜ": "\\Re", "ℑ": "\\Im", "℘": "\\wp", "ı": "\\imath",
    "ȷ": "\\jmath", "†": "\\dagger", "‡": "\\ddagger", "§": "\\S", "¶": "\\P", "%": "\\%", "#": "\\#",
    "&": "\\&", "_": "\\_", "$": "\\$", "\\": "\\backslash", "ℝ": "\\mathbb{R}", "ℕ": "\\mathbb{N}",
    "ℤ": "\\mathbb{Z}", "ℚ": "\\mathbb{Q}", "ℂ": "\\mathbb{C}", "∑": "\\sum", "∏": "\\prod", "∐": "\\coprod",
    "∫": "\\int", "∬": "\\iint", "∭": "\\iiint", "∮": "\\oint", "⋃": "\\bigcup", "⋂": "\\bigcap",
    "⨁": "\\bigoplus", "⨂": "\\bigotimes", "⨀": "\\bigodot", "⋀": "\\bigwedge", "⋁": "\\bigvee",
    "⨄": "\\biguplus", "⨆": "\\bigsqcup", "√": "\\surd", "⎛": "(", "⎜": "(", "⎝": "(", "⎞": ")", "⎟": ")",
    "⎠": ")", "⎡": "[", "⎢": "[", "⎣": "[", "⎤": "]", "⎥": "]", "⎦": "]", "⎧": "\\{", "⎨": "\\{",
    "⎩": "\\{", "⎫": "\\}", "⎬": "\\}", "⎭": "\\}", "⎪": "|", "⏐": "|", "−̸": "\\neq", "̸": "\\not",
    "⃗": "\\vec", "ˆ": "\\hat", "˜": "\\tilde",
}  # fmt: skip
BIG_OPERATORS = frozenset("∑∏∐∫∬∭∮⋃⋂⨁⨂⨀⋀⋁⨄⨆")
LIMIT_WORDS = frozenset(("lim", "max", "min", "sup", "inf", "limsup", "liminf", "det", "gcd", "Pr"))
OPERATOR_NAMES = frozenset(
    (
        "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
        "coth", "log", "ln", "lg", "exp", "lim", "limsup", "liminf", "max", "min", "sup", "inf", "det",
        "dim", "ker", "deg", "gcd", "hom", "arg", "Pr",
    )
)  # fmt: skip
DELIMITERS = frozenset("()[]{}|‖⟨⟩⌈⌉⌊⌋⎛⎜⎝⎞⎟⎠⎡⎢⎣⎤⎥⎦⎧⎨⎩⎫⎬⎭⎪⏐")
# Accent glyphs set over a base -> their command.
ACCENTS = {
    "ˆ": "\\hat", "^": "\\hat", "˜": "\\tilde", "~": "\\tilde", "¯": "\\bar", "ˉ": "\\bar", "˙": "\\dot",
    "¨": "\\ddot", "ˇ": "\\check", "˘": "\\breve", "´": "\\acute", "`": "\\grave", "⃗": "\\vec",
    "→": "\\vec", "\u0302": "\\hat", "\u0303": "\\tilde", "\u0304": "\\bar", "\u0305": "\\bar",
    "\u0307": "\\dot", "\u0308": "\\ddot", "\u030c": "\\check", "\u0306": "\\breve",
}  # fmt: skip
_ITALIC_FONT = re.compile(
    r"italic|ital\b|oblique|-it\b|-it$|^(?:cm|lm)(?:mi|ti|bxti|mib)|^stix.*math|math-?it", re.I
)
_MATH_ALNUM = range(0x1D400, 0x1D800)


def is_upright_font(font: str) -> bool:
    """Whether letters in `font` are upright (roman), not math italic."""
    return _ITALIC_FONT.search(font) is None


def char_latex(ch: str) -> str:
    """The LaTeX of one glyph's text (Mathematical Alphanumeric Symbols read as their letter)."""
    if ch in SYMBOLS:
        return SYMBOLS[ch]
    if ch in GREEK:
        return GREEK[ch]
    if ch == "ℎ":  # the planck constant stands for the italic h in the math alphanumerics
        return "h"
    if len(ch) == 1 and ord(ch) in _MATH_ALNUM:
        plain = unicodedata.normalize("NFKC", ch)
        return GREEK.get(plain, plain)
    return ch
