"""OCR'd pages in the pipeline: an image of a text page comes back with its words (read from its lines alone
under --anchor auto, no model request), --anchor on hands the OCR anchor to the model, --ocr none keeps the
image path, and a PDF page without a text layer is OCR'd with its boxes in points."""

from __future__ import annotations

import io

import pytest
from fake_engine import scripted_model
from PIL import Image, ImageDraw

from jocr.lines.anchor import ANCHOR_VERSION
from jocr.pipeline import parse
from jocr.synth.fonts import get_font

LINES = [
    "Quarterly report of the river survey",
    "Seventy bright yellow kites flew",
    "over the northern hills",
]


def text_page(size=(900, 700)) -> Image.Image:
    """A white page: a title line, a gap, then two body lines (30 px DejaVu Sans)."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    font = get_font("sans", "regular", 30)
    for text, y in zip(LINES, (80, 220, 270)):
        draw.text((80, y), text, fill="black", font=font)
    return image


def png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def recording_model(version: int):
    model = scripted_model()
    model.model.config.anchor.version = version
    prompts = []
    check = model.scripted.check

    def record(req):
        check(req)
        prompts.append(list(req.prompt_ids))

    model.scripted.check = record
    return model, prompts


def test_an_image_of_a_text_page_comes_back_with_its_words():
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(png(text_page()), model=model, ocr="tesseract").pages[0]
    assert page.error is None and page.finish_reason == "stop"
    assert prompts == []  # read from its lines alone: the model was not asked
    assert page.anchor.anchored and page.anchor.alone and page.anchor.source == "tesseract"
    # The title stands apart (a paragraph of its own); the two body lines join into one paragraph: the
    # tree is the rules' over the OCR lines' boxes, in the image's pixels.
    assert page.markdown.strip() == f"{LINES[0]}\n\n{LINES[1]} {LINES[2]}"
    assert page.tree.source == "lines" and page.tree.unit == "px" and len(page.tree.blocks) == 2
    info = page.to_dict()["anchor"]
    assert info["source"] == "tesseract" and info["alone"] is True and "anchor_s" in page.timings


@pytest.mark.parametrize("engine", ["rapidocr", "tesseract"])
def test_anchor_on_hands_the_ocr_anchor_to_the_model(engine):
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(png(text_page()), model=model, anchor="on", ocr=engine).pages[0]
    assert page.anchor.anchored and not page.anchor.alone and page.anchor.source == engine
    assert "text-layer anchors" in page.anchor.note
    prompt = model.tokenizer.decode(prompts[0])
    for line in LINES:
        assert line in prompt


def test_a_model_trained_on_ocr_anchors_reads_ocred_pages_under_auto():
    model, prompts = recording_model(ANCHOR_VERSION)
    model.model.config.anchor.ocr = True
    model.scripted.reply = lambda level: "@1\n\n@2 @3"
    page = parse(png(text_page()), model=model, ocr="tesseract").pages[0]
    assert len(prompts) == 1 and page.anchor.anchored and not page.anchor.alone
    assert "text-layer anchors" not in page.anchor.note
    assert page.markdown.strip() == f"{LINES[0]}\n\n{LINES[1]} {LINES[2]}"
    # The tree is the answer's, its boxes the OCR lines' it cites, in the image's pixels.
    assert page.tree.source == "anchored" and page.tree.unit == "px"
    title, body = page.tree.blocks
    assert 75 <= title.bbox[0] <= 85 and 75 <= title.bbox[1] <= 95 and title.bbox[3] < 130
    assert 215 <= body.bbox[1] <= 235 and 280 <= body.bbox[3] <= 310


def test_ocr_none_and_models_without_anchors_keep_the_image_path():
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(png(text_page()), model=model, ocr="none").pages[0]
    assert not page.anchor.anchored and len(prompts) == 1
    model, prompts = recording_model(0)
    page = parse(png(text_page()), model=model).pages[0]
    assert not page.anchor.anchored and page.anchor.source is None and len(prompts) == 1


def test_a_pdf_page_without_a_text_layer_is_ocred_in_points():
    buf = io.BytesIO()
    text_page((1224, 1584)).save(buf, format="PDF", resolution=144.0)  # a US Letter scan: 612 x 792 pt
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(buf.getvalue(), model=model, ocr="tesseract").pages[0]
    assert page.anchor.alone and page.anchor.source == "tesseract" and prompts == []
    assert page.anchor.note.startswith("text layer none")
    header, first = page.anchor.windows[0].text.splitlines()[:2]
    assert header == "page 612x792 tesseract"  # the page in points, not the 1224 x 1584 px rendering
    x, y = (int(v) for v in first.split()[1].split(","))
    # Drawn at (80, 80) px of 1224 x 1584: (65, 50) on the 0-999 grid; the glyphs' ink starts a little
    # right of and below the origin (measured 67, 54).
    assert 65 <= x <= 69 and 50 <= y <= 57
    assert LINES[1] in page.markdown
    assert page.tree.unit == "pt" and page.tree.width == 612


def test_bad_ocr_mode_is_a_one_line_error():
    model, _ = recording_model(ANCHOR_VERSION)
    with pytest.raises(ValueError, match="ocr must be one of"):
        parse(png(text_page()), model=model, ocr="abbyy")


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_turned_page_reads_in_its_upright_order(turn):
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(png(text_page().rotate(turn, expand=True)), model=model, ocr="tesseract").pages[0]
    assert f"turned {turn}" in page.anchor.note or f"turned {360 - turn}" in page.anchor.note
    assert page.markdown.strip() == f"{LINES[0]}\n\n{LINES[1]} {LINES[2]}"
