"""A page of a two-column list whose every row an OCR engine read as one line over both columns (as
RapidOCR reads a narrow gutter), with the engine's word boxes: the lines alone show no columns."""

from __future__ import annotations

from jocr.layout.tree import PARAGRAPH, Block, PageTree, TreeLine
from jocr.lines.types import RAPIDOCR, Line, Word

ROWS = [("R-FAQ", "R FAQ"), ("R-intro", "An Introduction"), ("R-data", "Data Import"),
        ("R-admin", "Installation"), ("R-lang", "The Language")]  # fmt: skip


def bridged_lines() -> list[Line]:
    """The five OCR lines, each with a word box per word (9 px a letter, the second column at x = 110)."""
    source = []
    for r, (name, title) in enumerate(ROWS):
        y = 100 + 30 * r
        words = [Word(name, (20, y, 20 + 9 * len(name), y + 20))]
        x = 110
        for w in title.split():
            words.append(Word(w, (x, y, x + 9 * len(w), y + 20)))
            x += 9 * len(w) + 6
        box = (20, y, words[-1].box[2], y + 20)
        source.append(Line(f"{name} {title}", box, 20.0, 0, 0.9, RAPIDOCR, words))
    return source


def bridged_tree(source: list[Line]) -> PageTree:
    """The page's tree as the rules over lines write it: one paragraph per OCR line (500 x 700 px)."""
    lines = [TreeLine(ln.text, ln.box, "ocr") for ln in source]
    blocks = [Block(PARAGRAPH, text=ln.text, markdown=ln.text, bbox=ln.bbox, lines=[ln]) for ln in lines]
    return PageTree(width=500, height=700, unit="px", blocks=blocks).numbered()
