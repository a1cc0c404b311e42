"""The table step of a finished page (jocr.layout.page_read.tables_markdown): a page read from its pixels
gets the tables found in its image, its OCR lines lending their word boxes."""

from PIL import Image

from jocr.layout import elements
from jocr.layout.page_read import tables_markdown
from jocr.layout.render import page_markdown
from jocr.layout.tree import PARAGRAPH, Block, PageTree, TreeLine
from jocr.lines.types import RAPIDOCR, Line, Word


def _page() -> tuple[PageTree, list[Line]]:
    """Five rows of a two-column list, each read by the OCR as one line over both columns."""
    rows = [("R-FAQ", "R FAQ"), ("R-intro", "An Introduction"), ("R-data", "Data Import"),
            ("R-admin", "Installation"), ("R-lang", "The Language")]  # fmt: skip
    source = []
    for r, (name, title) in enumerate(rows):
        y = 100 + 30 * r
        words = [Word(name, (20, y, 20 + 9 * len(name), y + 20))]
        x = 110
        for w in title.split():
            words.append(Word(w, (x, y, x + 9 * len(w), y + 20)))
            x += 9 * len(w) + 6
        box = (20, y, words[-1].box[2], y + 20)
        source.append(Line(f"{name} {title}", box, 20.0, 0, 0.9, RAPIDOCR, words))
    lines = [TreeLine(ln.text, ln.box, "ocr") for ln in source]
    blocks = [Block(PARAGRAPH, text=ln.text, markdown=ln.text, bbox=ln.bbox, lines=[ln]) for ln in lines]
    return PageTree(width=500, height=700, unit="px", blocks=blocks).numbered(), source


def test_an_image_pages_ocr_lines_reach_the_table_pass(monkeypatch):
    monkeypatch.setattr(elements, "_ocr_lines", lambda *a, **k: None)  # no crop OCR: the page's lines
    image = Image.new("RGB", (500, 700), "white")
    tree, source = _page()
    markdown = page_markdown(tree)
    assert tables_markdown(tree, markdown, None, image) == markdown  # without the lines: no table
    tree, source = _page()
    out = tables_markdown(tree, markdown, None, image, source)
    assert "<td>R-intro</td><td>An Introduction</td>" in out
