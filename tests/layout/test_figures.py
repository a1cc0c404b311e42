"""Figures cut out of pages (`jocr.layout.figures`): regions from PDF drawing objects and page-image ink,
figure blocks in reading order linked to their captions, the cut images, and bad regions."""

from __future__ import annotations

import copy
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from figure_fixtures import circle, figure_pdf, rule
from page_fixtures import Text, paragraph
from PIL import Image, ImageDraw

from jocr.layout.figure_regions import FROM_IMAGE, FROM_INK, Region, pdf_regions
from jocr.layout.figures import (
    FiguresConfig,
    clean_regions,
    figure_file_name,
    name_figures,
    place_figures,
    write_figures,
)
from jocr.layout.line_rules import lines_tree
from jocr.layout.tree import Block, PageTree, TreeLine
from jocr.lines.textlayer import read_page

REAL = Path(__file__).resolve().parents[2] / "data" / "frozen-real" / "pdfs"
SCALE = 2.0  # 144 dpi, as jocr parse renders


def read(pdf: bytes):
    """(tree from the text layer's lines, page image at 144 dpi, drawing regions) of a one-page PDF."""
    with pdfium.PdfDocument(pdf) as doc:
        page = doc[0]
        layer = read_page(page)
        regions, _, _ = pdf_regions(page)
        image = page.render(scale=SCALE).to_pil().convert("RGB")
    return lines_tree(layer.lines, layer.width, layer.height), image, regions


def figure_blocks(tree: PageTree):
    return [b for b in tree.blocks if b.type == "figure"]


def test_an_image_becomes_a_figure_block_before_its_caption_cut_at_the_render_resolution():
    lines = [
        *paragraph(
            72, 90, ["Text above the figure, a paragraph of body text that", "goes on for two lines."]
        ),
        Text(72, 330, "Figure 1: A red picture of four squares."),
        *paragraph(72, 370, ["Text below the caption, another paragraph of text."]),
    ]
    tree, image, regions = read(figure_pdf(lines, images=[(72, 120, 200, 180)]))
    placed = place_figures(tree, image, regions)
    (figure,) = placed.figures
    (block,) = figure_blocks(tree)
    assert block.bbox == pytest.approx((72, 120, 272, 300), abs=0.5)
    assert figure.origin == FROM_IMAGE
    assert figure.image.size == (400, 360)  # 200 x 180 pt at 144 dpi
    caption = tree.blocks[block.caption]
    assert caption.text.startswith("Figure 1") and tree.blocks[block.order + 1] is caption
    markdown = name_figures(tree, "paper", "files")
    assert "![Figure 1: A red picture of four squares.](paper_p1_fig1.png)" in markdown
    assert markdown.index("Text above") < markdown.index("![") < markdown.index("Text below")
    assert tree.to_dict()["blocks"][block.order]["image"] == "paper_p1_fig1.png"


def test_a_vector_drawing_is_a_figure_and_its_labels_go_into_it():
    lines = [
        *paragraph(72, 90, ["A paragraph above the drawing, long enough to be body text."]),
        Text(405, 205, "label", size=9),
        Text(380, 290, "Fig. 2. A circle."),
    ]
    tree, image, regions = read(figure_pdf(lines, paths=[circle(420, 200, 60)]))
    placed = place_figures(tree, image, regions)
    assert [f.origin for f in placed.figures] == ["drawing"]
    (block,) = figure_blocks(tree)
    assert "label" in block.text and not any(b.text == "label" for b in tree.blocks if b is not block)
    assert tree.blocks[block.caption].text.startswith("Fig. 2")


def test_a_centred_caption_read_as_a_heading_is_linked_and_becomes_a_caption():
    body = ["Body text above, a long line of a paragraph of text."] * 3
    lines = [*paragraph(72, 90, body), Text(200, 330, "Figure 4: Pins", size=12)]  # larger: a heading
    tree, image, regions = read(figure_pdf(lines, images=[(200, 120, 200, 180)]))
    assert [b.type for b in tree.blocks] == ["paragraph", "heading"]
    place_figures(tree, image, regions)
    (block,) = figure_blocks(tree)
    caption = tree.blocks[block.caption]
    assert caption.type == "caption" and caption.markdown == "Figure 4: Pins" and caption.level is None


def test_a_ruled_table_and_a_text_page_have_no_figures():
    rows = [Text(72 + 150 * c, 120 + 20 * r, f"cell {r} {c} text") for r in range(8) for c in range(3)]
    rules = [rule(70, 106 + 20 * r, 520) for r in range(9)]
    tree, image, regions = read(figure_pdf(rows, paths=rules))
    assert place_figures(tree, image, regions).figures == []
    tree, image, regions = read(figure_pdf(paragraph(72, 90, ["Only text here."] * 20)))
    assert place_figures(tree, image, regions).figures == []


def test_inline_embeds_a_data_uri_and_none_writes_no_image_but_keeps_the_caption():
    lines = [Text(72, 330, "Figure 1: A picture.")]
    for mode, expected in (("inline", "](data:image/png;base64,"), ("none", None)):
        tree, image, regions = read(figure_pdf(lines, images=[(72, 120, 200, 180)]))
        place_figures(tree, image, regions)
        markdown = name_figures(tree, "doc", mode)
        assert "Figure 1: A picture." in markdown
        if expected:
            assert expected in markdown and figure_blocks(tree)[0].image is None
        else:
            assert "![" not in markdown


def test_text_the_answer_left_out_still_keeps_a_text_box_from_being_a_figure():
    """A slide's button (a filled rectangle with a word in it) is no figure even when the model's answer
    did not cite its word: the page's text-layer lines count too (`text_boxes`)."""
    button = b"1 1 0 rg 300 300 120 60 re f 0 g"
    pdf = figure_pdf([Text(310, 470, "Full-screen", size=14)], paths=[button])
    tree, image, regions = read(pdf)
    with pdfium.PdfDocument(pdf) as doc:
        boxes = [line.box for line in read_page(doc[0]).lines]
    empty = PageTree(tree.width, tree.height, "pt", "anchored", [])
    assert [f.origin for f in place_figures(empty, image, regions).figures] == ["drawing"]
    empty = PageTree(tree.width, tree.height, "pt", "anchored", [])
    assert place_figures(empty, image, regions, text_boxes=boxes).figures == []


def test_text_lines_in_both_the_tree_and_the_layer_count_once():
    """A bar chart (rectilinear) whose labels cover 6% of it: the same lines passed again as the page's
    text layer, in a page size the tree rounded, must not double its text (a false 12% is a ruled table's)."""
    labels = [TreeLine(f"{k}", (110 + 40 * k, 280, 130 + 40 * k, 292), "textlayer") for k in range(5)]
    tree = PageTree(612, 792, "pt", "anchored", [Block("paragraph", "0 1 2 3 4", lines=labels)])
    chart = [Region((100, 200, 300, 300), "drawing", drawn=False)]  # 200 x 100 pt, labels 5 x 240 pt2
    image = Image.new("RGB", (1224, 1584), "white")
    boxes = [line.bbox for line in labels]
    once = place_figures(copy.deepcopy(tree), image, chart).figures
    again = place_figures(tree, image, chart, candidates_size=(612.2, 792.3), text_boxes=boxes).figures
    assert len(once) == len(again) == 1


def test_a_models_grounding_box_is_cut_as_its_figure_block():
    from jocr.layout.grounding_tree import markdown_tree

    raw = (
        "<|ref|>text<|/ref|><|det|>[[100,50,900,90]]<|/det|>\nA line.\n\n"
        "<|ref|>image<|/ref|><|det|>[[100,200,600,500]]<|/det|>"
    )
    tree = markdown_tree(raw, 1000, 1400)
    placed = place_figures(tree, Image.new("RGB", (1000, 1400), "white"), None)
    (figure,) = placed.figures
    assert figure.origin == "model" and len(figure_blocks(tree)) == 1
    assert figure.image.size == (500, 420)  # [100, 200, 600, 500] on the 0-999 grid, in pixels
    assert name_figures(tree, "scan", "files").endswith("![](scan_p1_fig1.png)")


def test_ink_no_text_line_covers_is_a_figure_on_an_image():
    image = Image.new("RGB", (1000, 1400), "white")
    pen = ImageDraw.Draw(image)
    text = []
    for k in range(6):
        box = (100, 100 + 40 * k, 900, 124 + 40 * k)
        pen.rectangle(box, fill=(30, 30, 30))
        text.append(box)
    pen.ellipse((300, 500, 700, 900), fill=(40, 90, 160))  # a photo-like blob

    ocr = [TreeLine("x", b, "ocr") for b in text]
    tree = PageTree(
        1000, 1400, "px", "lines", [Block("paragraph", "x", lines=ocr, bbox=(100, 100, 900, 324))]
    )
    placed = place_figures(tree, image, None)
    (figure,) = placed.figures
    assert figure.origin == FROM_INK
    x0, y0, x1, y1 = figure.bbox
    assert x0 <= 300 <= 700 <= x1 and y0 <= 500 <= 900 <= y1 and y0 > 324


def test_rules_alone_on_an_image_are_no_figure():
    """A scanned ruled table once its OCR'd text is cleared, or an empty form grid: rules only."""
    image = Image.new("RGB", (1000, 1400), "white")
    pen = ImageDraw.Draw(image)
    for r in range(9):
        pen.line((100, 300 + 50 * r, 900, 300 + 50 * r), fill="black", width=3)
    for c in range(4):
        pen.line((100 + 266 * c, 300, 100 + 266 * c, 700), fill="black", width=3)
    line = TreeLine("A paragraph above the grid.", (100, 100, 600, 124), "ocr")
    tree = PageTree(1000, 1400, "px", "lines", [Block("paragraph", line.text, lines=[line], bbox=line.bbox)])
    assert place_figures(tree, image, None).figures == []


def test_real_pdf_page_with_a_picture():
    """eduzh-p07 (Debian Edu manual, zh_CN): the debianedu banner is the page's one figure."""
    with pdfium.PdfDocument(str(REAL / "pdf" / "eduzh-p07.pdf")) as doc:
        page = doc[0]
        layer = read_page(page)
        regions, _, _ = pdf_regions(page)
        image = page.render(scale=SCALE).to_pil().convert("RGB")
    tree = lines_tree(layer.lines, layer.width, layer.height)
    placed = place_figures(tree, image, regions)
    (figure,) = placed.figures
    assert figure.bbox == pytest.approx((56.7, 260.1, 566.9, 307.9), abs=1)
    assert not any(b.type == "figure" for b in tree.blocks if "Debian" in b.text and b.figure is None)


def test_real_scan_of_the_same_page_finds_the_banner_in_its_ink():
    image = Image.open(REAL / "scan" / "eduzh-p07.jpg").convert("RGB")
    with pdfium.PdfDocument(str(REAL / "pdf" / "eduzh-p07.pdf")) as doc:
        layer = read_page(doc[0])
    # the text layer's lines in pixels stand in for OCR lines (the scan is the page at 150 dpi)
    sx = image.width / layer.width
    tree = lines_tree(layer.lines, layer.width, layer.height)
    placed = place_figures(tree, image, None)
    boxes = [tuple(v * sx for v in f.bbox) for f in placed.figures]
    assert any(abs(b[1] - 540) < 60 and abs(b[3] - 640) < 60 for b in boxes), boxes


# -- bad input --------------------------------------------------------------------------------------


def test_regions_covering_the_page_or_off_it_are_dropped_with_a_note():
    regions = [Region((-50, -50, 700, 900), FROM_IMAGE), Region((900, 900, 950, 950), FROM_IMAGE)]
    kept, notes = clean_regions(regions, 612, 792, FiguresConfig())
    assert kept == [] and len(notes) == 2


def test_a_page_of_500_tiny_images_is_capped_and_merged():
    images = [(40 + 11 * (k % 50), 60 + 11 * (k // 50), 8, 8) for k in range(500)]  # a 50 x 10 mosaic
    images += [(40 + 60 * k, 400, 4, 4) for k in range(8)]  # specks far apart: dropped
    tree, image, regions = read(figure_pdf([Text(72, 50, "Mosaic")], images=images))
    placed = place_figures(tree, image, regions)
    (figure,) = placed.figures  # the mosaic's tiles touch within the merge gap: one figure
    assert figure.bbox == pytest.approx((40, 60, 40 + 11 * 49 + 8, 60 + 11 * 9 + 8), abs=1)


def test_more_figures_than_the_limit_keep_the_largest():
    regions = [Region((20 + 40 * k, 20, 50 + 40 * k, 50 + k), FROM_IMAGE) for k in range(14)]
    kept, notes = clean_regions(
        regions, 612, 792, FiguresConfig(max_figures=5, min_side=0.01, min_area=0.0001)
    )
    assert len(kept) == 5 and "5" in notes[-1]
    assert min(r.bbox[3] for r in kept) >= 50 + 9


def test_figure_names_never_leave_the_output_folder(tmp_path):
    for stem in ("../../etc/passwd", "/abs/path", ".hidden", "a/b\\c", ""):
        name = figure_file_name(stem, 3, 1)
        assert "/" not in name and "\\" not in name and not name.startswith(".")
        assert name.endswith("_p3_fig1.png")
    from jocr.layout.figures import Figure

    bad = Figure(1, 1, (0, 0, 1, 1), (0, 0, 1, 1), FROM_IMAGE, png=b"x", name="../x.png")
    with pytest.raises(OSError):
        write_figures([bad], tmp_path)
    assert not (tmp_path.parent / "x.png").exists()


def test_a_figure_of_no_pixels_and_a_page_without_size_never_raise():
    tree = PageTree(0, 0, "pt", "lines", [])
    assert place_figures(tree, Image.new("RGB", (10, 10)), [Region((0, 0, 5, 5), FROM_IMAGE)]).figures == []
    tree = PageTree(612, 792, "pt", "lines", [])
    tiny_image = Image.new("RGB", (1, 1), "black")
    placed = place_figures(tree, tiny_image, [Region((0, 0, 300, 300), FROM_IMAGE)])
    assert all(f.image.size[0] >= 1 for f in placed.figures)


def test_a_models_figure_box_of_1e9_pixels_is_clamped_and_one_of_none_dropped_with_notes():
    from jocr.layout.grounding_tree import markdown_tree

    raw = (
        "<|ref|>image<|/ref|><|det|>[[0, 0, 1e9, 1e9]]<|/det|>\n\n"
        "<|ref|>image<|/ref|><|det|>[[5, 5, 5, 5]]<|/det|>"
    )
    tree = markdown_tree(raw, 1000, 1400)
    placed = place_figures(tree, Image.new("RGB", (1000, 1400), "white"), None)
    (figure,) = placed.figures
    assert figure.origin == "model" and figure.image.size == (1000, 1400)  # the page, no larger
    assert tree.notes == [
        "grounding box 1 (image): outside the page, clamped",
        "grounding box 2 (image): of no area, dropped",
        "grounding box 2 (image): a figure without a box, left out",
    ]
