"""The items a formula is read from, and the passes over them that need no recursion
(`jocr.layout.formula_latex` reads the structure): stacked delimiter pieces, negation slashes, accents, dots.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jocr.bbox import BoxEdges
from jocr.checks.latex_symbols import ACCENTS, BIG_OPERATORS


@dataclass
class Item(BoxEdges):
    """A glyph or a finished construct, as one box in a row."""

    latex: str
    box: tuple[float, float, float, float]
    baseline: float
    size: float
    kind: str = "glyph"  # "glyph", "atom" (a construct), "op" (a big operator), "word" (an operator name)
    text: str = ""
    upright: bool = False
    bold: bool = False


_LDOTS = re.compile(r"(?<![.0-9])\.\.\.(?![.0-9])")
_CDOTS = re.compile(r"\\cdot\\cdot\\cdot(?![A-Za-z])")


def dot_commands(latex: str) -> str:
    """Three periods (TeX sets \\ldots as three period glyphs) and three centred dots, as their commands."""
    latex = _CDOTS.sub(r"\\cdots ", _LDOTS.sub(r"\\ldots ", latex))
    return latex.replace(" }", "}").replace(" _", "_").replace(" ^", "^").strip()


BOLD_FONT = re.compile(r"bold|^(?:cm|lm)bx|^cmb[0-9]|black|heavy", re.I)
# Pieces of big delimiters, stacked: one delimiter.
_PIECES = {c: d for d, cs in (("(", "⎛⎜⎝"), (")", "⎞⎟⎠"), ("[", "⎡⎢⎣"), ("]", "⎤⎥⎦"), ("\\{", "⎧⎨⎩"),
                             ("\\}", "⎫⎬⎭"), ("|", "⎪⏐")) for c in cs}  # fmt: skip
# A negation slash over a relation: the negated relation's command.
_NEGATED = {"=": "\\neq", "\\in": "\\notin", "<": "\\nless", ">": "\\ngtr", "\\leq": "\\nleq",
            "\\geq": "\\ngeq", "\\subset": "\\not\\subset", "\\equiv": "\\not\\equiv"}  # fmt: skip


def union_box(items: list[Item]) -> tuple[float, float, float, float]:
    return (
        min(i.box[0] for i in items),
        min(i.box[1] for i in items),
        max(i.box[2] for i in items),
        max(i.box[3] for i in items),
    )


def main_size(items: list[Item]) -> float:
    # Words count: an upright constant (`\mathrm{e}` of e^{-z/2}) is read as a word, and with glyphs alone
    # its smaller exponent would set the row's size and no script would be found.
    sizes = [i.size for i in items if i.kind in ("glyph", "word") and i.text not in BIG_OPERATORS] or [
        i.size for i in items
    ]
    return max(sizes) if sizes else 10.0


_BOTTOM_PIECES = frozenset("⎝⎠⎣⎦⎩⎭")


def merged_pieces(items: list[Item]) -> list[Item]:
    """Stacked pieces of one big delimiter (a `\\left(` over several lines) become that delimiter."""
    pieces = sorted((it for it in items if it.text in _PIECES), key=lambda it: it.box[1])
    if not pieces:
        return items
    out = [it for it in items if it.text not in _PIECES]
    groups: list[list[Item]] = []
    for it in pieces:
        for group in groups:
            last = group[-1]
            same = _PIECES[last.text] == _PIECES[it.text]
            if (
                same
                and last.text not in _BOTTOM_PIECES  # a delimiter ends at its bottom piece
                and it.box[0] < last.box[2]
                and last.box[0] < it.box[2]
                and it.box[1] - last.box[3] < 0.5 * it.size
            ):
                group.append(it)
                break
        else:
            groups.append([it])
    for group in groups:
        first = group[0]
        box = union_box(group)
        out.append(
            Item(_PIECES[first.text], box, (box[1] + box[3]) / 2, first.size, "glyph", _PIECES[first.text])
        )
    return out


def negations(items: list[Item]) -> list[Item]:
    """A negation slash (U+0338) over the glyph it crosses: `\\neq`, `\\notin`, `\\not X`."""
    slashes = [it for it in items if it.text == "\u0338"]
    out = [it for it in items if it.text != "\u0338"]
    for slash in slashes:
        crossed = [
            it
            for it in out
            if it.kind == "glyph" and it.box[0] - 0.3 * it.size <= slash.cx <= it.box[2] + 0.3 * it.size
        ]
        if not crossed:
            continue
        target = min(crossed, key=lambda it: abs(it.cx - slash.cx))
        target.latex = _NEGATED.get(target.latex, f"\\not {target.latex}")
        target.text = target.latex
    return out


def accents(items: list[Item]) -> list[Item]:
    """An accent glyph over one other glyph becomes that glyph's accent."""
    out = list(items)
    for acc in [it for it in items if it.kind == "glyph" and it.text in ACCENTS]:
        bases = [
            it for it in out
            if it is not acc and it.box[0] - 0.2 * it.size <= acc.cx <= it.box[2] + 0.2 * it.size
            and it.box[1] >= acc.cy - 0.1 * it.size and it.kind != "op"
        ]  # fmt: skip
        if len(bases) < 1:
            continue
        base = min(bases, key=lambda it: it.box[1] - acc.box[3])
        if base.box[1] - acc.box[3] > 0.6 * base.size:
            continue
        out = [it for it in out if it is not acc and it is not base]
        out.append(
            Item(
                f"{ACCENTS[acc.text]}{{{base.latex}}}",
                union_box([acc, base]),
                base.baseline,
                base.size,
                "atom",
            )
        )
    return out
