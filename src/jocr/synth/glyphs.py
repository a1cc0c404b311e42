"""Where each printed character of a synthetic page lies: the ground truth of the glyph reading loss.

`GlyphPen` wraps the `ImageDraw.Draw` a page is composed with: every `text()` call draws as before and also
records one `Glyph` per non-space character, with the horizontal extent of its advance (so thin glyphs such as
"l" still cover the pixels between their neighbours) and the vertical extent of its ink. Formulas are pasted
as images, not drawn as text, so their boxes are recorded as `unread`: a loss must neither ask for characters
there nor call the region empty. `jocr.train.glyph_loss` turns a `GlyphMap` into per-cell targets.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import ImageDraw

from jocr.bbox import BBox as Box


@dataclass(frozen=True)
class Glyph:
    char: str
    box: Box  # (x0, y0, x1, y1) in page pixels: advance horizontally, ink vertically
    baseline: float  # y of the baseline, shared by the glyphs of one printed line


class GlyphMap:
    """The glyphs and unread regions of one page of `size` (width, height) pixels.

    The pen only notes each printed line (`add_line`); the per-character boxes are measured when `glyphs` is
    first read, because measuring costs three times the rest of composing a page and only the glyph loss
    needs it (every other use of `generate_page` would pay for nothing).
    """

    def __init__(self, size: tuple[int, int], glyphs=(), unread=()) -> None:
        self.size = size
        self.unread: list[Box] = []
        for box in unread:
            self.add_unread(box)
        self._glyphs: list[Glyph] = list(glyphs)
        # Printed lines not measured yet: (x, baseline, text, font).
        self._lines: list[tuple[float, float, str, object]] = []

    def add_line(self, x: float, baseline: float, text: str, font) -> None:
        self._lines.append((x, baseline, text, font))

    def add_unread(self, box: Box) -> None:
        self.unread.append(tuple(float(v) for v in box))

    @property
    def glyphs(self) -> list[Glyph]:
        for x0, baseline, text, font in self._lines:
            self._glyphs.extend(_measure_line(x0, baseline, text, font))
        self._lines = []
        return self._glyphs


def _measure_line(x0: float, baseline: float, text: str, font) -> list[Glyph]:
    """One `Glyph` per inked character of a left-baseline-anchored line drawn at (x0, baseline)."""
    glyphs = []
    for i, ch in enumerate(text):
        if ch.isspace():
            continue
        # Prefix lengths include kerning, so consecutive boxes tile the line without gaps or overlaps.
        start = x0 + font.getlength(text[:i])
        end = x0 + font.getlength(text[: i + 1])
        _, top, _, bottom = font.getbbox(ch, anchor="ls")
        if bottom <= top:  # a character without ink (e.g. a zero-width mark)
            continue
        glyphs.append(Glyph(ch, (start, baseline + top, end, baseline + bottom), baseline))
    return glyphs


class GlyphPen:
    """An `ImageDraw.Draw` that records the glyphs it prints (see the module docstring)."""

    def __init__(self, pen: ImageDraw.ImageDraw, size: tuple[int, int]) -> None:
        self._pen = pen
        self.map = GlyphMap(size=size)

    def __getattr__(self, name: str):
        return getattr(self._pen, name)

    def text(self, xy, text, fill=None, font=None, anchor=None, **kwargs) -> None:
        self._pen.text(xy, text, fill=fill, font=font, anchor=anchor, **kwargs)
        if font is None or anchor != "ls" or "\n" in text:
            # Only the one-line, left-baseline calls of the synth renderer are measured; anything else is
            # drawn but left unlabelled, so that no loss takes its ink for empty paper.
            left, top, right, bottom = self._pen.textbbox(xy, text, font=font, anchor=anchor)
            self.note_unread((left, top, right, bottom))
            return
        self.map.add_line(float(xy[0]), float(xy[1]), text, font)

    def note_unread(self, box: Box) -> None:
        self.map.add_unread(box)


def note_unread(pen, box: Box) -> None:
    """Record `box` as printed but unlabelled when `pen` records glyphs (a no-op for a plain ImageDraw)."""
    if isinstance(pen, GlyphPen):
        pen.note_unread(box)
