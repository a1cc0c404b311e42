"""OCR line source: both engines read a small rendered text crop with line and word boxes in the original
image's frame (also turned a quarter and skewed), and bad images end in a verdict and a note, never an
exception."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from jocr.lines import ocr
from jocr.lines.ocr import OCRLinesConfig, normalise_ocr_mode, read_image, resolve_engine
from jocr.lines.types import NONE, OK, TOO_LARGE, PageLines
from jocr.synth.fonts import get_font

NOISE = Image.fromarray((np.random.default_rng(0).random((300, 400)) * 255).astype(np.uint8))
LINES = ["The quick brown fox jumps", "over the lazy dog near", "Seventy bright yellow kites"]


def text_crop() -> tuple[Image.Image, dict[str, tuple[int, int, int, int]]]:
    """A white crop with three lines of 30 px DejaVu Sans, and the drawn box of each word."""
    image = Image.new("L", (620, 220), 255)
    draw = ImageDraw.Draw(image)
    font = get_font("sans", "regular", 30)
    boxes = {}
    for row, line in enumerate(LINES):
        x, y = 30, 30 + row * 60
        for word in line.split():
            box = draw.textbbox((x, y), word, font=font)
            draw.text((x, y), word, fill=0, font=font)
            boxes[word] = box
            x = box[2] + font.getlength(" ")
    return image, boxes


def words_of(lines: PageLines) -> dict[str, tuple]:
    return {w.text.strip(".,"): w.box for ln in lines.lines for w in ln.words or []}


def close(a, b, tolerance: float, along: int = 0) -> bool:
    """Same centre within `tolerance`, and the same edges along the line (`along`: 0 for x, 1 for y)
    within it; across the line RapidOCR's boxes take the line's full height, padding included (measured
    26-69 for glyphs drawn at 35-58)."""
    centre = all(abs((a[i] + a[i + 2]) / 2 - (b[i] + b[i + 2]) / 2) <= tolerance for i in (0, 1))
    return centre and abs(a[along] - b[along]) <= tolerance and abs(a[along + 2] - b[along + 2]) <= tolerance


@pytest.mark.parametrize("engine", ocr.ENGINES)
def test_engines_are_installed(engine):
    assert ocr.engine_available(engine), f"{engine} is a dependency of the test extra / CI apt packages"


@pytest.mark.parametrize("engine", ocr.ENGINES)
def test_reads_words_with_boxes(engine):
    image, truth = text_crop()
    lines = read_image(image, OCRLinesConfig(engine=engine))
    assert lines.verdict == OK and lines.source == engine
    assert (lines.width, lines.height) == image.size
    assert [ln.text for ln in lines.lines] == LINES
    found = words_of(lines)
    assert set(truth) <= set(found)
    for word, box in truth.items():  # word boxes within a few pixels of where they were drawn
        assert close(found[word], box, 8), (word, found[word], box)
    for line in lines.lines:
        assert line.source == engine and 0.0 <= line.confidence <= 1.0
        for w in line.words:
            assert line.box[0] - 1 <= w.box[0] and w.box[2] <= line.box[2] + 1


@pytest.mark.parametrize("engine", ocr.ENGINES)
def test_turned_page_is_read_upright_boxes_in_its_upright_frame(engine):
    image, truth = text_crop()
    turned = image.transpose(Image.Transpose.ROTATE_90)  # lying on its left side (counter-clockwise)
    lines = read_image(turned, OCRLinesConfig(engine=engine))
    assert lines.verdict == OK
    assert lines.stats.get("turn") == 90
    assert [ln.text for ln in lines.lines] == LINES
    # the lines are in the page's upright frame: the turned image turned back (`upright_image`)
    assert (lines.width, lines.height) == image.size
    assert ocr.upright_image(turned, 90).tobytes() == image.tobytes()
    found = words_of(lines)
    for word, box in truth.items():
        assert close(found[word], box, 8), (word, found[word], box)


@pytest.mark.parametrize("engine", ocr.ENGINES)
def test_skewed_page_is_deskewed(engine):
    image, _ = text_crop()
    skewed = image.rotate(3, resample=Image.Resampling.BILINEAR, expand=True, fillcolor=255)
    lines = read_image(skewed, OCRLinesConfig(engine=engine))
    assert lines.verdict == OK
    assert abs(abs(lines.stats.get("skew", 0.0)) - 3.0) <= 0.3
    assert [ln.text for ln in lines.lines] == LINES
    for line in lines.lines:  # boxes inside the skewed image
        assert 0 <= line.box[0] < line.box[2] <= skewed.size[0]
        assert 0 <= line.box[1] < line.box[3] <= skewed.size[1]


def test_page_units():
    """Boxes in the page's units when the image is a rendered page (points for a PDF page)."""
    image, truth = text_crop()
    lines = read_image(image, OCRLinesConfig(engine="tesseract"), page_size=(310.0, 110.0))
    assert (lines.width, lines.height) == (310.0, 110.0)
    x0, y0, x1, y1 = truth["quick"]
    assert close(words_of(lines)["quick"], (x0 / 2, y0 / 2, x1 / 2, y1 / 2), 4)


@pytest.mark.parametrize("engine", ocr.ENGINES)
@pytest.mark.parametrize(
    "image, verdict, note",
    [
        (Image.new("L", (600, 400), 255), NONE, "blank"),
        (Image.new("RGB", (600, 400), (40, 40, 40)), NONE, "blank"),
        (
            Image.fromarray((np.random.default_rng(0).random((300, 400)) * 255).astype(np.uint8)),
            NONE,
            "no text",
        ),
        (Image.new("L", (1, 500), 255), TOO_LARGE, "too small"),
        (Image.new("L", (1000, 30_000), 255), TOO_LARGE, "aspect"),
        (Image.new("1", (20_000, 10_000), 1), TOO_LARGE, "200 MP"),
    ],
    ids=["blank", "dark", "noise", "1px-wide", "30000-tall", "200MP"],
)
def test_bad_images_get_a_note_and_no_lines(engine, image, verdict, note):
    lines = read_image(image, OCRLinesConfig(engine=engine))
    assert (lines.verdict, lines.lines) == (verdict, [])
    assert note in lines.note and "\n" not in lines.note


@pytest.mark.parametrize("engine", ocr.ENGINES)
def test_engine_time_limit_is_a_note(engine):
    """One limit (`timeout_s`) for both engines, one verdict and note; the engine then reads the next page
    as if nothing had happened."""
    image, _ = text_crop()
    lines = read_image(image, OCRLinesConfig(engine=engine, timeout_s=0.001, orient=False))
    assert (lines.verdict, lines.lines) == (TOO_LARGE, [])
    assert lines.note == f"{engine} ran past 0.001 s"
    after = read_image(image, OCRLinesConfig(engine=engine, orient=False))
    assert after.verdict == OK and [ln.text for ln in after.lines] == LINES


def test_modes():
    assert normalise_ocr_mode(None) == "auto"
    assert normalise_ocr_mode(" Tesseract ") == "tesseract"
    with pytest.raises(ValueError, match="ocr must be one of"):
        normalise_ocr_mode("abbyy")
    assert resolve_engine("none") is None
    assert resolve_engine("auto") == ocr.AUTO_ORDER[0]


def test_unknown_engine_in_config_is_a_note():
    lines = read_image(text_crop()[0], OCRLinesConfig(engine="abbyy"))
    assert lines.verdict == "error" and "ocr must be one of" in lines.note


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_quarter_turn_geometry(turn):
    """The forward matrix agrees with PIL's transpose, pixel for pixel, so boxes map back exactly."""
    image = Image.new("L", (40, 30), 255)
    image.putpixel((5, 7), 0)
    turned = image.transpose(ocr._TRANSPOSE[turn])
    forward = ocr._quarter_turn(turn, 40, 30)
    x, y, _ = forward @ np.array([5.5, 7.5, 1.0])  # the pixel's centre
    assert turned.getpixel((int(x), int(y))) == 0


def test_an_unsure_half_turn_is_not_taken(monkeypatch):
    """The profiles cannot tell upright from upside down, so OSD's 180 needs its own confidence."""
    from jocr.lines.ocr_tesseract import Orientation

    image, _ = text_crop()
    taken = {}

    def fake_osd(confidence):
        monkeypatch.setattr(ocr, "orientation", lambda grey, timeout: Orientation(180, confidence, "Latin"))
        lines = read_image(image, OCRLinesConfig(engine="tesseract", deskew=False))
        return lines.stats.get("turn", 0)

    taken["unsure"], taken["sure"] = fake_osd(0.9), fake_osd(5.0)
    assert taken == {"unsure": 0, "sure": 180}


def test_profiles_alone_do_not_turn_a_page_that_an_unsure_osd_reads_upright(monkeypatch):
    """A photographed sheet on a dark table: the table down its sides makes the profiles say sideways; OSD,
    unsure, says upright; the page is not turned. OSD sure of a quarter turn, or agreeing, still turns it."""
    from jocr.lines.ocr_tesseract import Orientation

    image, _ = text_crop()
    monkeypatch.setattr(ocr, "profile_turn", lambda grey: 90)

    def turn_with(osd_turn, confidence):
        monkeypatch.setattr(
            ocr, "orientation", lambda grey, timeout: Orientation(osd_turn, confidence, "Latin")
        )
        return read_image(image, OCRLinesConfig(engine="tesseract", deskew=False)).stats.get("turn", 0)

    assert turn_with(0, 0.9) == 0  # disagree, unsure: upright
    assert turn_with(270, 0.9) == 270  # agree on sideways: OSD's direction
    assert turn_with(0, 5.0) == 0 and turn_with(90, 5.0) == 90  # sure: OSD


def test_paper_rows_find_a_photographed_sheet_and_no_sheet_in_a_scan():
    photo = Image.new("L", (1000, 1400), 70)  # a dark table
    ImageDraw.Draw(photo).rectangle((80, 150, 920, 1299), fill=225)  # the sheet on it
    ImageDraw.Draw(photo).rectangle((150, 300, 850, 320), fill=20)  # a line of text
    top, bottom = ocr.paper_rows(photo)
    assert abs(top - 150) < 12 and abs(bottom - 1300) < 12
    scan = Image.new("L", (1000, 1400), 235)
    for y in range(100, 1300, 40):
        ImageDraw.Draw(scan).rectangle((100, y, 900, y + 12), fill=30)
    assert ocr.paper_rows(scan) is None


def _photo_on_a_table() -> Image.Image:
    """A sheet (light, darker to the right as under uneven light) on a dark table, with lines of text."""
    photo = Image.new("L", (1000, 1400), 70)
    sheet = np.tile(np.linspace(235, 175, 840).astype(np.uint8), (1150, 1))
    photo.paste(Image.fromarray(sheet), (80, 150))
    draw = ImageDraw.Draw(photo)
    for y in range(300, 1200, 50):
        draw.rectangle((150, y, 850, y + 4), fill=25)  # a line of text, 5 px strokes
    return photo


def test_even_light_whitens_the_table_and_the_shade_and_keeps_the_text():
    evened = np.asarray(ocr.even_light(_photo_on_a_table()), dtype=np.float32)
    assert evened.shape == (1400, 1000)
    assert evened[:100].mean() > 200 and evened[1320:].mean() > 200  # the table above and below the sheet
    assert evened[600:640, 700:900].mean() > 200  # the shaded side of the sheet, between two text lines
    assert evened[302, 200:800].mean() < 100  # the text stays dark


def test_osd_reads_the_page_with_its_light_evened(monkeypatch):
    """Tesseract's OSD binarises the whole image at one threshold; the dark table around a photographed
    sheet misled it into turning upright Chinese pages over (a 180 at confidence 12). It reads the evened
    copy: a light background edge to edge."""
    from jocr.lines.ocr_tesseract import Orientation

    seen = []

    def fake_osd(grey, timeout):
        seen.append(np.asarray(grey, dtype=np.float32))
        return Orientation(0, 9.0, "Han")

    monkeypatch.setattr(ocr, "orientation", fake_osd)
    monkeypatch.setattr(ocr, "binary", lambda: "tesseract")
    monkeypatch.setattr(ocr, "tesseract_read", lambda grey, languages, timeout, min_conf: [])
    read_image(_photo_on_a_table(), OCRLinesConfig(engine="tesseract", deskew=False))
    (osd_input,) = seen
    assert osd_input[:100].mean() > 200 and osd_input[:, :60].mean() > 200


def test_a_tesseract_reading_records_its_languages(monkeypatch):
    """The languages Tesseract read with are in the page's stats (`stats["languages"]`), as the OSD's
    script chose them or as configured."""
    monkeypatch.setattr(ocr, "binary", lambda: "tesseract")
    monkeypatch.setattr(ocr, "tesseract_read", lambda grey, languages, timeout, min_conf: [])
    image, _ = text_crop()
    config = OCRLinesConfig(engine="tesseract", orient=False, deskew=False, languages="eng")
    assert read_image(image, config).stats["languages"] == "eng"


def _colour_page() -> Image.Image:
    """A white page with a black line and, under it, a red line on a green band of the same luminance
    (ITU-R 601, as PIL's grey conversion weighs them): in grey the red line is as light as its band."""
    image = Image.new("RGB", (620, 160), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    font = get_font("sans", "regular", 30)
    draw.text((30, 20), LINES[0], fill=(0, 0, 0), font=font)
    draw.rectangle((20, 80, 600, 140), fill=(0, 130, 0))
    draw.text((30, 90), LINES[2], fill=(255, 0, 0), font=font)
    return image


def test_rapidocr_reads_a_colour_page_in_colour():
    """RapidOCR's models read colour images; a grey copy loses what only the colours tell apart (on the
    development photographs it also lost lone section numbers and spaces that the colour copy kept:
    docs/results/2026-12-06-photos-en.md). The grey copy still decides blank, turn and skew."""
    image = _colour_page()
    grey = np.asarray(image.convert("L"), dtype=np.float32)
    assert abs(grey[95:135, 30:400].min() - grey[82:88, 30:400].mean()) < 8  # the red text is gone in grey
    lines = read_image(image, OCRLinesConfig(engine="rapidocr"))
    read = " ".join(ln.text for ln in lines.lines)
    assert LINES[0] in read and "Seventy bright" in read and "yellow kites" in read


def test_a_grey_page_is_handed_to_rapidocr_as_it_is(monkeypatch):
    """A scan in grey is read from the same pixels as before (mode L), turned and deskewed as ever."""
    seen = []
    monkeypatch.setattr(ocr, "rapid_read", lambda image, *args, **kw: seen.append(image.mode) or [])
    image, _ = text_crop()
    read_image(image, OCRLinesConfig(engine="rapidocr"))
    read_image(image.convert("RGB"), OCRLinesConfig(engine="rapidocr"))
    assert seen == ["L", "RGB"]


def test_rapidocr_gets_the_configured_least_side_for_its_detector(monkeypatch):
    """`OCRLinesConfig.rapid_det_min_side` reaches the engine call (a table crop's: 2026-12-08)."""
    seen = []
    monkeypatch.setattr(ocr, "rapid_read", lambda image, *args: seen.append(args[-1]) or [])
    image, _ = text_crop()
    read_image(image, OCRLinesConfig(engine="rapidocr"))
    read_image(image, OCRLinesConfig(engine="rapidocr", rapid_det_min_side=480))
    assert seen == [None, 480]  # a page: RapidOCR's own least side


def test_rapidocr_lines_get_the_spaces_their_word_boxes_show(monkeypatch):
    """A numbered heading read as "3.11.1Numbering hierarchy" with its words an em apart comes out spaced
    (`jocr.lines.spacing`)."""
    from jocr.lines.types import RAPIDOCR, Line, Word

    words = [("3.11.1", 337, 396), ("Numbering", 425, 537), ("hierarchy", 546, 641)]
    heading = Line(
        "3.11.1Numbering hierarchy",
        (337.0, 35.0, 641.0, 60.0),
        25.0,
        0,
        0.99,
        RAPIDOCR,
        [Word(t, (float(a), 35.0, float(b), 60.0), 1.0) for t, a, b in words],
    )
    monkeypatch.setattr(ocr, "rapid_read", lambda image, *args, **kw: [heading])
    image, _ = text_crop()
    lines = read_image(image, OCRLinesConfig(engine="rapidocr", orient=False, deskew=False))
    assert [ln.text for ln in lines.lines] == ["3.11.1 Numbering hierarchy"]


def test_rapidocr_calls_the_orientation_check_only_when_its_upright_reading_is_unsure(monkeypatch):
    """With RapidOCR, a page is read as it stands first: a sure reading (three
    lines at a median confidence of 0.9) leaves Tesseract's OSD out (a subprocess on every page); a page
    upside down reads as low-confidence noise, so OSD is asked, and its sure half turn turns the page and
    reads it again."""
    if not ocr.engine_available("rapidocr") or ocr.binary() is None:
        pytest.fail("RapidOCR and Tesseract are installed by scripts/setup.sh")
    from jocr.lines.ocr_tesseract import Orientation

    image, _ = text_crop()
    asked = []

    def osd(grey, timeout):
        asked.append(grey.size)
        return Orientation(180, 5.0, "Latin")

    monkeypatch.setattr(ocr, "orientation", osd)
    upright = read_image(image, OCRLinesConfig(engine="rapidocr", deskew=False))
    assert (
        not asked
        and "turn" not in upright.stats
        and "quick brown" in " ".join(ln.text for ln in upright.lines)
    )
    turned = read_image(image.rotate(180), OCRLinesConfig(engine="rapidocr", deskew=False))
    assert asked and turned.stats.get("turn") == 180
    assert "quick brown" in " ".join(ln.text for ln in turned.lines)
