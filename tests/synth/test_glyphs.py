import numpy as np
from PIL import Image, ImageDraw

from jocr.synth import generate_page
from jocr.synth.fonts import get_font
from jocr.synth.glyphs import GlyphPen, note_unread


def _ink(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L")) < 128  # (H, W) True where printed


def test_pen_records_every_printed_character_where_its_ink_is():
    image = Image.new("RGB", (300, 60), "white")
    pen = GlyphPen(ImageDraw.Draw(image), image.size)
    font = get_font("serif", "regular", 24)
    pen.text((10, 40), "Tally 42 ok", fill="black", font=font, anchor="ls")
    glyphs = pen.map.glyphs
    assert "".join(g.char for g in glyphs) == "Tally42ok"  # spaces print nothing
    assert all(a.box[2] <= b.box[0] + 1e-6 for a, b in zip(glyphs, glyphs[1:]))  # left to right, no overlap
    ink = _ink(image)
    for g in glyphs:
        x0, y0, x1, y1 = (int(round(v)) for v in g.box)
        assert ink[y0:y1, x0:x1].any(), g  # each box holds ink of its glyph
        assert g.baseline == 40
    covered = np.zeros_like(ink)
    for g in glyphs:
        x0, y0, x1, y1 = (int(round(v)) for v in g.box)
        covered[max(0, y0 - 1) : y1 + 1, max(0, x0 - 1) : x1 + 1] = True
    assert not (ink & ~covered).any()  # and no ink lies outside all boxes


def test_unmeasured_calls_and_formulas_are_marked_unread():
    image = Image.new("RGB", (200, 80), "white")
    pen = GlyphPen(ImageDraw.Draw(image), image.size)
    pen.text((5, 5), "top-left anchor")  # not a left-baseline call: drawn, not labelled
    note_unread(pen, (1, 2, 3, 4))
    assert pen.map.glyphs == [] and len(pen.map.unread) == 2
    plain = ImageDraw.Draw(image)
    note_unread(plain, (1, 2, 3, 4))  # a plain pen ignores it


def test_generated_pages_carry_glyphs_that_spell_their_text():
    from jocr.train.vision_aux import visible_text

    page = generate_page(12, "cpu-small", validate=False)
    spelled = "".join(g.char for g in page.glyphs.glyphs)
    visible = visible_text(page.markdown).replace(" ", "")
    assert spelled and set(spelled) <= set(visible + "•–-.0123456789")
    assert page.glyphs.size == page.image.size
    math_page = next(
        p for p in (generate_page(s, "cpu-small", validate=False) for s in range(60)) if "$" in p.markdown
    )
    assert math_page.glyphs.unread  # its formulas are printed as images, without characters
