"""Block boxes that can be drawn and trusted (`jocr.layout.draw.box_problems`): every block of a real page's
tree built from its line source alone (the text layer, or OCR lines for a scan), or from an anchored answer
over its text layer, has a box inside the page that covers each of its lines (runs), on every page of the
olmOCR-Bench sample and of the frozen vector set (`jocr synth --frozen vector`). `benchmarks/boxes.py`
counts the same over the default parse."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
import pytest

from jocr.documents.pages import LoadOptions, open_source
from jocr.layout.draw import box_problems
from jocr.layout.formulas import page_formulas
from jocr.layout.line_rules import lines_tree
from jocr.layout.request import layer_tree, page_tree
from jocr.layout.tree import FROM_ANCHORED, FROM_MARKDOWN, Block, PageTree, TreeLine
from jocr.lines.anchor import anchor_lines
from jocr.lines.ocr import resolve_engine
from jocr.lines.source import page_lines
from jocr.lines.textlayer import read_page

ROOT = Path(__file__).resolve().parents[2]
PDFS = sorted((ROOT / "tests" / "data" / "olmocr-bench-sample" / "pdfs").rglob("*.pdf")) + sorted(
    (ROOT / "data" / "frozen-test" / "vector" / "pdfs").glob("*.pdf")
)
# The sample's pages without a usable text layer (scans; one whose text is invisible), read by OCR.
SCANS = ("blank_book_pg1.pdf", "buildingnotes.pdf", "lincoln_letter.pdf", "small_page_size.pdf")


def test_the_sets_are_there():
    assert len(PDFS) == 29 and all(
        (ROOT / "tests" / "data" / "olmocr-bench-sample" / "pdfs" / n).exists() for n in SCANS
    )


@pytest.mark.parametrize("path", PDFS, ids=lambda p: p.name)
def test_text_layer_trees_have_their_boxes_inside_the_page_around_their_lines(path):
    with pdfium.PdfDocument(str(path)) as doc:
        layers = [read_page(doc[i]) for i in range(len(doc))]
    usable = [(i, layer) for i, layer in enumerate(layers) if layer.usable]
    assert bool(usable) == (path.name not in SCANS)
    for index, layer in usable:
        tree = layer_tree(layer, index + 1)
        assert tree.blocks, f"page {index + 1}: no blocks"
        assert box_problems(tree) == [], f"page {index + 1}"
        assert all(b.bbox is not None and b.lines for b in tree.blocks)


@pytest.mark.parametrize("path", [p for p in PDFS if p.name not in SCANS], ids=lambda p: p.name)
def test_anchored_trees_have_their_boxes_inside_the_page_around_their_runs(path):
    """An anchored answer that groups each page's runs as the rules over lines do (headings marked), put
    together with the text layer's lines as `jocr parse` does it (types from the fonts, paragraphs joined,
    skipped runs put back): every block's box is inside the page and covers its runs."""
    with pdfium.PdfDocument(str(path)) as doc:
        layers = [read_page(doc[i]) for i in range(len(doc))]
    usable = [(i, layer) for i, layer in enumerate(layers) if layer.usable]
    assert usable
    for index, layer in usable:
        parts = []
        for block in layer_tree(layer, index + 1).blocks:
            refs = " ".join(f"@{line.run}" for line in block.lines if line.run)
            if refs:
                parts.append(("# " if block.type in ("title", "heading") else "") + refs)
        anchor = "\n".join(anchor_lines(layer))
        tree = page_tree(["\n\n".join(parts)], [anchor], ["stop"], lines=layer.lines, page=index + 1)
        assert tree.source == FROM_ANCHORED and tree.blocks, f"page {index + 1}"
        assert all(line.run for b in tree.blocks for line in b.lines)
        assert box_problems(tree) == [], f"page {index + 1}"


MATH = ("math_2503_04086.pdf", "mathfuncs.pdf", "mathfuncs_colswitch.pdf", "openstax_caculus_pg_273.pdf")


@pytest.mark.parametrize("name", MATH)
def test_formula_blocks_cover_the_runs_they_take_in(name):
    """`jocr parse`'s trees carry the page's display formulas (`page_formulas`): each formula block must
    still cover its lines."""
    path = ROOT / "tests" / "data" / "olmocr-bench-sample" / "pdfs" / name
    with pdfium.PdfDocument(str(path)) as doc:
        layer = read_page(doc[0])
        tree = layer_tree(layer, 1, formulas=page_formulas(doc[0], layer))
    assert any(b.type == "formula" for b in tree.blocks)
    assert box_problems(tree) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", SCANS[1:])
def test_ocr_trees_have_their_boxes_inside_the_page_around_their_lines(name):
    assert resolve_engine("auto") is not None, "no OCR engine (tesseract-ocr is in .ci/apt-packages.txt)"
    with open_source(
        str(ROOT / "tests" / "data" / "olmocr-bench-sample" / "pdfs" / name), LoadOptions()
    ) as source:
        lines = page_lines(source, 0, source.render(0), ocr="auto")
    assert lines.usable and lines.source != "textlayer"
    tree = lines_tree(lines.lines, lines.width, lines.height)
    assert tree.blocks and box_problems(tree) == []


def _line(text, box, run=None):
    return TreeLine(text, box, run=run)


def test_each_kind_of_problem_is_found():
    ok = Block(
        "paragraph",
        "a b",
        bbox=(10, 10, 90, 30),
        lines=[_line("a", (10, 10, 90, 18), 1), _line("b", (10, 20, 60, 30), 2)],
    )
    tree = PageTree(100, 200, source=FROM_ANCHORED, blocks=[ok])
    assert box_problems(tree) == []
    tree.blocks.append(Block("heading", "c", bbox=(10, 40, 50, 50), lines=[_line("c", (10, 40, 70, 52), 3)]))
    tree.blocks.append(Block("paragraph", "d", bbox=(10, 150, 120, 190)))
    tree.blocks.append(Block("paragraph", "e", lines=[_line("e", (5, 5, 9, 9), 4)]))
    tree.blocks.append(Block("paragraph", "@@14@@55"))
    found = box_problems(tree)
    assert len(found) == 4
    assert found[0].startswith("block 2 (heading)") and "does not cover run 3" in found[0]
    assert found[1].startswith("block 3 (paragraph)") and "not inside the 100x200 page" in found[1]
    assert "block 4" in found[2] and "no box" in found[2]
    assert "block 5" in found[3] and "no box" in found[3]
    # Within rounding of the JSON's two decimals, a box still covers its lines.
    assert (
        box_problems(
            PageTree(
                100,
                200,
                blocks=[
                    Block("paragraph", "a", bbox=(10, 10, 50, 20), lines=[_line("a", (9.8, 10, 50.2, 20))])
                ],
            )
        )
        == []
    )
    # A tree from Markdown alone has no boxes at all: nothing to draw, nothing wrong.
    assert box_problems(PageTree(100, 200, source=FROM_MARKDOWN, blocks=[Block("paragraph", "x")])) == []
