"""The table step of a finished page (jocr.layout.page_read.tables_markdown): a page read from its pixels
gets the tables found in its image, its OCR lines lending their word boxes."""

from ocr_table_fixtures import bridged_lines, bridged_tree
from PIL import Image

from jocr.layout import elements
from jocr.layout.page_read import tables_markdown
from jocr.layout.render import page_markdown
from jocr.layout.tree import PageTree
from jocr.lines.types import Line


def _page() -> tuple[PageTree, list[Line]]:
    """Five rows of a two-column list, each read by the OCR as one line over both columns."""
    source = bridged_lines()
    return bridged_tree(source), source


def test_an_image_pages_ocr_lines_reach_the_table_pass(monkeypatch):
    monkeypatch.setattr(elements, "_ocr_lines", lambda *a, **k: None)  # no crop OCR: the page's lines
    image = Image.new("RGB", (500, 700), "white")
    tree, source = _page()
    markdown = page_markdown(tree)
    assert tables_markdown(tree, markdown, None, image) == markdown  # without the lines: no table
    tree, source = _page()
    out = tables_markdown(tree, markdown, None, image, source)
    assert "<td>R-intro</td><td>An Introduction</td>" in out
