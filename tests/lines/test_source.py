"""The one place a page's line source is chosen, and the text of a page read from its lines alone."""

from __future__ import annotations

import io

from layer_fixtures import invisible_pdf, plain_pdf
from PIL import Image, ImageDraw

from jocr.documents.pages import LoadOptions, open_source
from jocr.lines.anchor import Anchor, line_source_answers
from jocr.lines.source import page_lines
from jocr.synth.fonts import get_font


def test_a_usable_text_layer_wins_and_ocr_is_not_run():
    with open_source(plain_pdf(), LoadOptions()) as source:
        lines = page_lines(source, 0, image=None, ocr="tesseract")
        assert lines.source == "textlayer" and lines.usable
        assert page_lines(source, 0, source.render(0), ocr="tesseract").source == "textlayer"


def text_image(size=(700, 200)) -> Image.Image:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).text(
        (40, 60), "Harbour lights at dusk", fill="black", font=get_font("sans", "bold", 40)
    )
    return image


def test_a_pdf_page_without_a_usable_layer_is_ocred_and_says_why():
    buf = io.BytesIO()
    text_image((1224, 1584)).save(buf, format="PDF", resolution=144.0)  # a scan: 612 x 792 pt
    with open_source(buf.getvalue(), LoadOptions()) as source:
        image = source.render(0)
        lines = page_lines(source, 0, image, ocr="tesseract")
        assert lines.source == "tesseract" and lines.usable and lines.text == "Harbour lights at dusk"
        assert lines.note.startswith("text layer none")
        assert (lines.width, lines.height) == (612, 792)  # points, like the layer
        assert 15 <= lines.lines[0].box[0] <= 25  # drawn at 40 px of 1224 = 20 pt
        # Without OCR the layer's verdict stands.
        assert page_lines(source, 0, image, ocr="none").verdict == "none"
        assert page_lines(source, 0, None, ocr="tesseract").verdict == "none"


def test_when_ocr_finds_nothing_the_layers_verdict_stands():
    with open_source(invisible_pdf(), LoadOptions()) as source:  # invisible text renders as a blank page
        lines = page_lines(source, 0, source.render(0), ocr="tesseract")
        assert lines.source == "textlayer" and lines.verdict == "invisible"
        assert lines.note.endswith("; tesseract: the image is blank")


def test_an_image_is_ocred_only_with_an_engine():
    image = Image.new("RGB", (700, 200), "white")
    ImageDraw.Draw(image).text(
        (40, 60), "Harbour lights at dusk", fill="black", font=get_font("sans", "bold", 40)
    )
    source = open_source(image, LoadOptions())
    lines = page_lines(source, 0, source.render(0), ocr="auto")
    assert lines.usable and lines.text == "Harbour lights at dusk"
    assert page_lines(source, 0, source.render(0), ocr="none") is None
    blank = open_source(Image.new("RGB", (300, 300), "white"), LoadOptions())
    lines = page_lines(blank, 0, blank.render(0), ocr="auto")
    assert not lines.usable and lines.note.startswith("the input has no text layer (an image); ")


def test_line_source_answers_reference_every_run_in_order():
    text = "\n".join(
        [
            "page 612x792",
            "@1 100,50 Title",  # a paragraph of its own: 70 down to the next, the line step is 20
            "@2 100,120 first line",
            "@3 100,140 second line",
            "@4 100,160 third line",
            "@5 550,120 next column",  # back up: a new paragraph
            "@6 550,140 goes on",
        ]
    )
    window = Anchor(text=text, lines=6, lines_total=6, tokens=0)
    assert line_source_answers([window]) == ["@1\n\n@2\n@3\n@4\n\n@5\n@6"]
    one = Anchor(text="page 10x10\n@1 0,0 alone", lines=1, lines_total=1, tokens=0)
    assert line_source_answers([window, one]) == ["@1\n\n@2\n@3\n@4\n\n@5\n@6", "@1"]
