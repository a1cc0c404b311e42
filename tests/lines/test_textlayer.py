"""The text layer on real olmOCR-Bench pages (born-digital, OCR layer, scan) and on hostile layers, which
must end in a verdict with a note, never an exception, within bounded time."""

from __future__ import annotations

import time
from pathlib import Path

import layer_fixtures as F
import pypdfium2 as pdfium
import pytest

from jocr.lines.textlayer import (
    INVISIBLE,
    MOJIBAKE,
    NONE,
    OFFPAGE,
    OK,
    SOFT_HYPHEN,
    TOO_LARGE,
    UNMAPPED,
    TextLayerLimits,
    estimate_glyphs,
    is_mono_font,
    read_page,
)

DATA = Path(__file__).parents[1] / "documents" / "data" / "olmocr-bench"


def layer_of(data, limits=None):
    doc = pdfium.PdfDocument(data)
    try:
        page = doc[0]
        try:
            return read_page(page, limits)
        finally:
            page.close()
    finally:
        doc.close()


def test_born_digital_two_columns():
    layer = layer_of(str(DATA / "multi_column_miss.pdf"))
    assert layer.verdict == OK and layer.usable and layer.note == ""
    assert (round(layer.width), round(layer.height)) == (612, 792)
    texts = [line.text for line in layer.lines]
    # Whole lines, not fragments: punctuation in its own text object stays on its line.
    assert "stakeholders has occurred in other nations, with groups and" in texts
    assert "Corporate social responsibility and the tobacco industry:" in texts
    title = next(ln for ln in layer.lines if ln.text.startswith("Corporate social responsibility and the"))
    body = next(ln for ln in layer.lines if ln.text.startswith("stakeholders has occurred"))
    # Font sizes as drawn (the file sets 1 Tf and scales with the text matrix): title 18.9 pt, body 8.5 pt.
    assert title.size == pytest.approx(18.93, abs=0.05) and body.size == pytest.approx(8.52, abs=0.05)
    # Top-left origin in points: the left column starts near x=68, the right column near x=312.
    assert body.box[0] == pytest.approx(68.2, abs=0.5) and body.box[1] < 60
    assert any(ln.box[0] > 300 for ln in layer.lines)
    for line in layer.lines:
        x0, y0, x1, y1 = line.box
        assert 0 <= x0 <= x1 <= layer.width and 0 <= y0 <= y1 <= layer.height


def test_words_broken_across_lines_end_in_a_soft_hyphen():
    # PDFium marks the hyphen that breaks a word at a line's end; a hyphen of the text itself stays "-".
    texts = [line.text for line in layer_of(str(DATA / "multi_column_miss.pdf")).lines]
    broken = [t.rsplit(" ", 1)[-1] for t in texts if t.endswith(SOFT_HYPHEN)]
    assert broken == ["responsi\u00ad", "organi\u00ad", "cor\u00ad", "irretrie\u00ad", "influ\u00ad"]
    assert any("non-governmental" in t for t in texts) and not any(t.endswith("-") for t in texts)


def test_a_drop_cap_stays_with_its_word():
    # The article's first paragraph opens with a two-line "O"; its first line reads on from it.
    layer = layer_of(str(DATA / "multi_column_miss.pdf"))
    texts = [line.text for line in layer.lines]
    assert "Over the past three decades increasing" in texts and "O" not in texts
    assert len(texts) == 117


def test_headers_footers_page():
    layer = layer_of(str(DATA / "headers_footers_ff4f7dad_pg1.pdf"))
    assert layer.verdict == OK
    assert layer.stats["glyphs"] == 990 and len(layer.lines) == 16


def test_scan_with_invisible_ocr_layer():
    layer = layer_of(str(DATA / "small_page_size.pdf"))
    assert layer.verdict == INVISIBLE and not layer.usable
    assert "invisible" in layer.note


def test_scan_without_text():
    layer = layer_of(str(DATA / "blank_book_pg1.pdf"))
    assert layer.verdict == NONE and layer.lines == []
    assert layer.note == "the page has no text layer"


def test_plain_layer_lines_and_boxes():
    layer = layer_of(F.plain_pdf())
    assert layer.verdict == OK
    assert [ln.text for ln in layer.lines] == F.PROSE
    first = layer.lines[0]
    assert first.size == pytest.approx(11.0)
    # Baseline at y=720 in PDF space on a 792 pt page: the line's box sits just above y = 72.
    assert first.box[0] == pytest.approx(72.0) and 55 < first.box[1] < 72 < first.box[3] < 80


@pytest.mark.parametrize(
    "make, verdict",
    [
        (F.invisible_pdf, INVISIBLE),
        (F.zero_size_pdf, NONE),
        (F.offpage_pdf, OFFPAGE),
        (F.private_use_pdf, UNMAPPED),
        (F.surrogate_pdf, UNMAPPED),
        (F.cid_pdf, UNMAPPED),
        (F.mojibake_pdf, MOJIBAKE),
    ],
)
def test_unusable_layers_have_a_verdict_and_note(make, verdict):
    layer = layer_of(make())
    assert layer.verdict == verdict and not layer.usable
    assert layer.note and "\n" not in layer.note
    # Whatever lines remain are valid text (no surrogates: they would break UTF-8 output).
    for line in layer.lines:
        line.text.encode("utf-8")


def test_huge_run_is_cut_and_bounded():
    limits = TextLayerLimits()
    start = time.perf_counter()
    layer = layer_of(F.huge_run_pdf(50_000), limits)
    assert time.perf_counter() - start < 60  # ~1 s on an idle machine; 60 s allows a loaded one
    assert all(len(ln.text) <= limits.max_line_chars for ln in layer.lines)
    # Cut at max_line_chars, or (on a loaded machine) stopped by the time limit: bounded either way.
    assert layer.stats.get("dropped", 0) > 0 or layer.verdict != OK


def test_millions_of_glyphs_refused_before_the_text_page():
    data = F.many_glyphs_pdf(2_000_000)
    doc = pdfium.PdfDocument(data)
    page = doc[0]
    assert estimate_glyphs(page) > 4 * TextLayerLimits().max_chars
    page.close()
    doc.close()
    layer = layer_of(data)
    # Building PDFium's text page for these 2M glyphs takes ~6 s and 200 MB; the estimate refuses the page
    # first ("about N glyphs"; a text page that was built would report its exact character count).
    assert layer.verdict == TOO_LARGE and layer.note.startswith("about ") and "exceed" in layer.note


def test_character_limit():
    layer = layer_of(F.plain_pdf(), TextLayerLimits(max_chars=50))
    assert layer.verdict == TOO_LARGE and layer.lines == []


def test_sources_expose_the_layer():
    from pdf_fixtures import image_bytes

    from jocr.documents.pages import LoadOptions, open_source

    with open_source(F.plain_pdf(), LoadOptions()) as source:
        layer = source.text_layer(0)
        assert layer.verdict == OK and [ln.text for ln in layer.lines] == F.PROSE
    with open_source(image_bytes("png"), LoadOptions()) as source:
        assert source.text_layer(0) is None


def test_characters_beyond_the_bmp_are_text():
    """PDFium reports 𝑓 (U+1D453, a unicode-math letter) as a surrogate pair: one character, not two
    unmapped glyphs, so a unicode-math page's layer is usable."""
    path = Path(__file__).resolve().parents[2] / "data" / "frozen-real-math" / "pdfs" / "multivar-p03.pdf"
    doc = pdfium.PdfDocument(str(path))
    try:
        layer = read_page(doc[0])
    finally:
        doc.close()
    assert layer.usable and layer.stats["unmapped"] == 0
    assert any("𝑓(𝑎1" in line.text for line in layer.lines)


def test_unmapped_glyphs_with_an_ascii_code_keep_it():
    """A font without a Unicode map (a Type 3 listing font, an OT1 sans face) leaves PDFium guessing the
    character code; a printable ASCII guess is kept as text, a code below the space stays unmapped. mismath's
    manual page had 381 of 2,181 glyphs counted unmapped (its code listings) and was read as an image."""
    from jocr.lines.textlayer import _ascii_guess

    assert _ascii_guess(ord("\\")) and _ascii_guess(ord("r")) and _ascii_guess(ord("}"))
    assert not _ascii_guess(0x01) and not _ascii_guess(0x20) and not _ascii_guess(0xF8FF)
    path = Path(__file__).resolve().parents[2] / "data" / "frozen-real-math" / "heldout" / "pdfs"
    path = path / "mismath-p8.pdf"
    doc = pdfium.PdfDocument(str(path))
    try:
        layer = read_page(doc[0])
    finally:
        doc.close()
    assert layer.usable and layer.stats["unmapped"] < 20
    assert any("\\DeclarePairedDelimiter" in line.text for line in layer.lines)


@pytest.mark.parametrize(
    ("name", "mono"),
    [("NimbusMonL-Regu", True), ("NimbusMonoPS-Regular", True), ("CMTT10", True), ("pcrr8r", True),
     ("TeXGyreCursor-Regular", True), ("txtt", True), ("NimbusRomNo9L-Regu", False),
     ("Monotype-Sorts", False), ("CMR10", False)],
)  # fmt: skip
def test_typewriter_faces_by_name(name, mono):
    # URW's Courier clone (NimbusMonL: "key=value" options of the caption manual) is typewriter, as Courier is
    assert is_mono_font(name) is mono
