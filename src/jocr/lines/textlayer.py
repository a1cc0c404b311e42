"""A PDF page's text layer: its characters grouped into lines, with boxes, font size and weight, and a
verdict on whether the layer can be trusted as the model's anchor (docs/parsing.md, "Anchored reading").

Everything goes through PDFium's text page (pypdfium2), the same code for a user's PDF and for the vector
synthetic pages the anchored model is trained on (jocr.synth.vector), so the anchor a model sees in training
is the anchor it sees at inference. Per-character calls use `pypdfium2.raw` because the helpers do not
expose char boxes, font sizes, weights or render modes.

The lines are `jocr.lines.types.Line`s in a `PageLines` (source "textlayer"), the type OCR gives too.

A text layer is hostile input like any other: the number of characters read, the time spent and the text
kept per line are bounded (`TextLayerLimits`), and every problem ends in a verdict with a one-line note,
never an exception, so the page falls back to the image-only path.

Coordinates: points, origin at the top-left of the page as rendered (PDFium applies /Rotate and the crop
box), y growing downwards -- the same frame as the rendered image divided by its scale.
"""

from __future__ import annotations

import ctypes
import re
import statistics
import time
import unicodedata
from dataclasses import dataclass

from jocr.lines.hyphens import SOFT_HYPHEN
from jocr.lines.types import ERROR, NONE, OK, TEXTLAYER, TOO_LARGE, Line, PageLines, empty_lines

# Verdicts. Only "ok" is used as an anchor; every other one sends the page down the image-only path (or to
# OCR). OK, NONE ("no text layer": a scan, an image, a page of vector drawings), TOO_LARGE and ERROR are
# shared by every line source (jocr.lines.types).
INVISIBLE = "invisible"  # render mode 3 text over an image: an OCR layer of unknown quality
UNMAPPED = "unmapped"  # glyphs without Unicode: private-use codes, U+FFFD, `(cid:..)`, map errors
MOJIBAKE = "mojibake"  # text decoded with the wrong encoding (UTF-8 read as cp1252, control characters)
OFFPAGE = "offpage"  # most glyphs outside the page or of zero size (hidden text)
VERDICTS = (OK, NONE, INVISIBLE, UNMAPPED, MOJIBAKE, OFFPAGE, TOO_LARGE, ERROR)

_RENDER_INVISIBLE = 3  # PDF 1.7 spec table 106, text rendering mode 3: neither fill nor stroke
# Mojibake: UTF-8 bytes shown as cp1252/latin-1 ("Ã©" for "é", "â€™" for "’"), and C0/C1 controls.
_MOJIBAKE = re.compile(
    r"[ÃÂ][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc\u2013-\u203a"
    r"\u20ac\u2122]|â€|ï»¿"
)
_CID = re.compile(r"\(cid:\d+\)")


def char_code(raw, textpage, i: int) -> int | None:
    """The Unicode code point of char `i` of a PDFium text page; None for the second half of a surrogate
    pair. PDFium reports a character beyond the Basic Multilingual Plane (the math italic 𝑓, U+1D453, of
    unicode-math fonts; emoji) as two chars, a high and a low surrogate: the first gives the whole code
    point, the second is skipped, so neither counts as an unmapped glyph."""
    code = raw.FPDFText_GetUnicode(textpage, i)
    if 0xD800 <= code <= 0xDBFF:
        low = raw.FPDFText_GetUnicode(textpage, i + 1) if i + 1 < raw.FPDFText_CountChars(textpage) else 0
        if 0xDC00 <= low <= 0xDFFF:
            return 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
    elif 0xDC00 <= code <= 0xDFFF and i > 0 and 0xD800 <= raw.FPDFText_GetUnicode(textpage, i - 1) <= 0xDBFF:
        return None
    return code


@dataclass
class TextLayerLimits:
    """Bounds on what one page's text layer may cost; beyond them the verdict is "too_large"."""

    max_chars: int = 60_000  # a dense two-column page holds ~10k characters
    # A last resort only: the limits above bound the work, and a time limit would make a page's anchor depend
    # on the machine's load (a dense page reads in 20-300 ms).
    max_seconds: float = 30.0
    max_line_chars: int = 2_000  # a longer run is cut (the anchor cuts lines far shorter anyway)
    # Fractions of glyphs that make a layer unusable.
    invisible_share: float = 0.5
    unmapped_share: float = 0.05
    mojibake_share: float = 0.02
    offpage_share: float = 0.5


def empty_layer(verdict: str, note: str, width: float = 0.0, height: float = 0.0) -> PageLines:
    return empty_lines(verdict, note, width, height, source=TEXTLAYER)


def _is_unmapped(code: int) -> bool:
    return (
        code == 0
        or code == 0xFFFD
        or 0xE000 <= code <= 0xF8FF  # private use area
        or 0xF0000 <= code <= 0x10FFFF  # supplementary private use
        or 0xD800 <= code <= 0xDFFF  # lone surrogates: not text, and not encodable as UTF-8
        or code > 0x10FFFF
    )


def _ascii_guess(code: int) -> bool:
    """Whether PDFium's guess for a glyph it could not map is kept: for a font without a Unicode map (TeX's
    Type 3 bitmap fonts, a subset with no glyph names) it gives the character code itself, which in TeX's
    text and typewriter encodings is the ASCII character for every printable code (letters, digits, the
    backslashes and braces of a code listing). Codes below the space are a font's own slots (OT1's Greek,
    accents) and stay unmapped."""
    return 0x21 <= code <= 0x7E


@dataclass
class _Char:
    ch: str
    x0: float
    y0: float  # PDF user space: y up
    x1: float
    y1: float
    size: float
    weight: int
    mono: bool = False


class _Builder:
    """Groups characters (in PDFium's text order) into runs: a new run starts at a line break, when the
    baseline moves, or across a horizontal gap wider than 1 em (table cells, columns side by side)."""

    def __init__(self, max_line_chars: int):
        self.max_line_chars = max_line_chars
        self.runs: list[list[_Char]] = []
        self.current: list[_Char] = []
        self.pending_space = False

    def flush(self) -> None:
        if self.current:
            self.runs.append(self.current)
        self.current = []
        self.pending_space = False

    def space(self) -> None:
        if self.current:
            self.pending_space = True

    def add(self, c: _Char) -> bool:
        """Adds `c`; False when its run is already `max_line_chars` long (the glyph is dropped)."""
        cur = self.current
        if cur:
            last = cur[-1]
            height = max(last.y1 - last.y0, c.y1 - c.y0, 1e-3)
            overlap = min(last.y1, c.y1) - max(last.y0, c.y0)
            em = max(last.size, c.size, height)
            # Distance between the boxes in either direction: right-to-left scripts advance leftwards.
            gap = max(c.x0 - last.x1, last.x0 - c.x1)
            if (overlap < 0.3 * height and not _drop_cap(cur, c)) or gap > 1.0 * em:
                self.flush()
                cur = self.current
        if len(cur) >= self.max_line_chars:
            return False
        if self.pending_space and cur:
            cur.append(_Char(" ", c.x0, c.y0, c.x0, c.y1, 0.0, 0))
        self.pending_space = False
        cur.append(c)
        return True


def _drop_cap(run: list[_Char], c: _Char) -> bool:
    """Whether `run` is a drop cap (one capital letter at least two lines tall) and `c` the next letter of
    its word, on the cap's first line: they read as one word ("O" + "ver the past" is "Over the past")."""
    if len(run) != 1 or not run[0].ch.isupper():
        return False
    cap = run[0]
    return cap.y1 - cap.y0 >= 1.8 * (c.y1 - c.y0) and cap.y0 <= c.y0 and c.y1 <= cap.y1 + 0.5 * (c.y1 - c.y0)


class SharedTextPage:
    """A page's PDFium text page, built on first use and shared by every reader of one pass over the page
    (the text layer, the formula reader's glyphs, the table reader's pieces): building it costs ~3 us a
    glyph, so a page is built once however many readers look at its characters. `close()` frees it."""

    def __init__(self, page):
        self.page = page
        self._textpage = None

    def get(self):
        if self._textpage is None:
            self._textpage = self.page.get_textpage()
        return self._textpage

    def close(self) -> None:
        if self._textpage is not None:
            self._textpage.close()
            self._textpage = None


def read_page(
    page, limits: TextLayerLimits | None = None, textpage: SharedTextPage | None = None
) -> PageLines:
    """The text layer of a `pypdfium2.PdfPage`. Never raises for a bad layer: problems become the verdict.
    `textpage`: the page's text page shared with the other readers of the same pass (left open here).

    The caller holds the PDFium lock (`_PDFIUM_LOCK`, documents/pdf.py) for the whole call."""
    import pypdfium2.raw as raw

    limits = limits or TextLayerLimits()
    try:
        width, height = page.get_size()
    except Exception as exc:  # a page PDFium cannot size has no usable layer either
        return empty_layer(ERROR, f"cannot size the page ({exc})")
    if not (width > 0 and height > 0):
        return empty_layer(ERROR, "the page box is empty", width, height)
    estimate = estimate_glyphs(page, limits)
    if estimate > limits.max_chars * 4:
        # PDFium's text page costs ~3 us per glyph and its memory grows with them (2M glyphs: 6 s, 200 MB),
        # so a page that plainly holds far more text than any real page is refused before it is built.
        return empty_layer(
            TOO_LARGE, f"about {estimate} glyphs exceed the limit of {limits.max_chars}", width, height
        )
    shared = textpage or SharedTextPage(page)
    try:
        built = shared.get()
    except Exception as exc:
        return empty_layer(ERROR, f"PDFium cannot read the text ({exc})", width, height)
    try:
        return _read(raw, page, built, width, height, limits)
    finally:
        if textpage is None:
            shared.close()


def _read(raw, page, textpage, width: float, height: float, limits: TextLayerLimits) -> PageLines:
    start = time.perf_counter()
    tp = textpage.raw
    count = raw.FPDFText_CountChars(tp)
    if count < 0:
        return empty_layer(ERROR, "PDFium cannot count the page's characters", width, height)
    if count > limits.max_chars:
        return empty_layer(
            TOO_LARGE, f"{count} characters exceed the limit of {limits.max_chars}", width, height
        )
    rect = raw.FS_RECTF()
    matrix = raw.FS_MATRIX()
    glyphs = invisible = unmapped = offpage = degenerate = dropped = 0
    # Per text object (one PDF show-text operation): (render mode, font size in page points, weight).
    objects: dict[int, tuple[int, float, int, bool]] = {}
    builder = _Builder(limits.max_line_chars)
    # The page box in user space: chars outside it are hidden text. PDFium reports boxes in user space,
    # unrotated, so compare against the unrotated crop box.
    x_min, y_min, x_max, y_max = _crop_box(page)
    for i in range(count):
        if i % 2048 == 2047 and time.perf_counter() - start > limits.max_seconds:
            return empty_layer(
                TOO_LARGE, f"reading the text took over {limits.max_seconds:g} s", width, height
            )
        code = char_code(raw, tp, i)
        if code is None:  # the second half of a character beyond the BMP, read with its first
            continue
        if code == 0x02:  # PDFium's mark for a hyphen that breaks a word at a line's end (SOFT_HYPHEN)
            code = ord(SOFT_HYPHEN)
        if code in _BREAKS:
            builder.flush()
            continue
        if code in _SPACES:  # spaces PDFium inserts between words, or the file's own
            builder.space()
            continue
        glyphs += 1
        obj = raw.FPDFText_GetTextObject(tp, i)
        key = ctypes.cast(obj, ctypes.c_void_p).value or 0
        info = objects.get(key)
        if info is None:
            info = objects[key] = _object_info(raw, tp, i, obj, matrix) if key else (0, 0.0, 0, False)
        mode, size, weight, mono = info
        if mode == _RENDER_INVISIBLE:
            invisible += 1
        bad = _is_unmapped(code) or (raw.FPDFText_HasUnicodeMapError(tp, i) == 1 and not _ascii_guess(code))
        if not bad and unicodedata.category(chr(code)) == "Cc":
            bad = True
        if bad:
            unmapped += 1
        if not (size > 0.5 and raw.FPDFText_GetLooseCharBox(tp, i, rect)):
            degenerate += 1  # zero-size fonts and empty boxes: invisible to a reader
            continue
        x0, x1, y0, y1 = rect.left, rect.right, rect.bottom, rect.top
        if not (x1 >= x0 and y1 > y0):
            degenerate += 1
            continue
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        if not (x_min <= cx <= x_max and y_min <= cy <= y_max):
            offpage += 1
            continue
        if bad:
            continue
        if not builder.add(_Char(chr(code), x0, y0, x1, y1, size, weight, mono)):
            dropped += 1
    builder.flush()
    lines = _lines(page, builder.runs, width, height)
    stats = {
        "chars": count,
        "glyphs": glyphs,
        "invisible": invisible,
        "unmapped": unmapped,
        "offpage": offpage,
        "degenerate": degenerate,
        "dropped": dropped,
        "lines": len(lines),
    }
    layer = PageLines(width=width, height=height, lines=lines, stats=stats, source=TEXTLAYER)
    layer.verdict, layer.note = _verdict(layer, limits)
    return layer


_BREAKS = frozenset((0x0A, 0x0D))
_SPACES = frozenset((0x20, 0x09, 0xA0))


# Monospace fonts by name (after a subset's "ABCDEF+" prefix): the fixed-pitch flag of a font descriptor is
# often unset (TeX's CMTT fonts, the standard 14 Courier without a descriptor).
_MONO_NAME = re.compile(
    r"courier|mono(?!type)|nimbusmon|cursor|consol|menlo|inconsolata|typewriter|^(?:cm|lm|sf|ec)?i?tt[0-9]"
    r"|^lmmono|^(?:pcr[a-z0-9]|txtt|qcr[a-z0-9])|code",
    re.I,
)
# Bold faces by name: "Bold", "Black", ... and TeX's bold (extended) fonts: CMBX10, SFBX1000, CMSSBX10, CMB10.
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|^(?:[a-z]{2,4})?(?:bx|sx|b)[0-9]", re.I)
_FIXED_PITCH, _FORCE_BOLD = 1, 1 << 18  # PDF 1.7 spec table 123, font descriptor flags: bits 1 and 19


def _object_info(raw, tp, index: int, obj, matrix) -> tuple[int, float, int, bool]:
    """Render mode, font size in points as drawn (Tf size times the text matrix's scale: PDFs often set
    `1 Tf` and scale with Tm), weight (0 when unknown) and whether the font is monospace, of the text object
    holding char `index`."""
    mode = int(raw.FPDFTextObj_GetTextRenderMode(obj))
    size = float(raw.FPDFText_GetFontSize(tp, index))
    if raw.FPDFText_GetMatrix(tp, index, matrix):
        size *= abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5
    weight = max(int(raw.FPDFText_GetFontWeight(tp, index)), 0)
    name, flags = _font_info(raw, tp, index)
    if _BOLD_NAME.search(name) or (weight == 0 and flags & _FORCE_BOLD):
        # A standard font without a descriptor ("Helvetica-Bold"), or a TeX font whose descriptor gives every
        # face the same weight (SFBX1000 and SFRM1000 both 250): its name says it.
        weight = max(weight, 700)
    return mode, size, weight, bool(flags & _FIXED_PITCH) or is_mono_font(name)


def is_mono_font(name: str) -> bool:
    """Whether a font is a typewriter (monospace) face by its name (a subset's prefix removed)."""
    return _MONO_NAME.search(name) is not None


def _font_info(raw, tp, index: int) -> tuple[str, int]:
    """The font's name (without a subset's prefix) and its descriptor flags, ("", 0) when unknown."""
    flags = ctypes.c_int(0)
    buffer = ctypes.create_string_buffer(128)
    try:
        raw.FPDFText_GetFontInfo(tp, index, buffer, len(buffer), ctypes.byref(flags))
    except Exception:  # an old PDFium without it
        return "", 0
    return buffer.value.decode("latin-1", "replace").split("+")[-1], flags.value


def estimate_glyphs(page, limits: TextLayerLimits | None = None) -> int:
    """A cheap upper estimate of a page's glyphs from its parsed text objects, without a text page: each
    object's bounds width over a fifth of its height (glyphs advance ~0.5 em; a box is ~1.2 em tall).
    Page objects beyond `4 * max_chars` count as that many glyphs. Glyphs drawn on top of each other with
    zero advance escape the estimate; rendering such a page costs as much as reading its text."""
    import pypdfium2.raw as raw

    limits = limits or TextLayerLimits()
    budget = limits.max_chars * 4
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    total = 0
    seen = 0
    for obj, kind in page_objects(page, budget + 1):
        seen += 1
        if seen > budget or total > budget:
            return max(total, seen)
        if kind == raw.FPDF_PAGEOBJ_TEXT:
            total += 1
            if raw.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
                w, h = abs(right.value - left.value), abs(top.value - bottom.value)
                if h > 0:
                    total += int(min(w / (0.2 * h), budget))
    return total


def _crop_box(page) -> tuple[float, float, float, float]:
    try:
        box = page.get_cropbox()
    except Exception:
        box = (0.0, 0.0) + tuple(page.get_size())
    x0, y0, x1, y1 = (float(v) for v in box)
    return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def page_mapper(page, width: float, height: float):
    """`to_page(x, y)`: a point of the `pypdfium2.PdfPage`'s user space -> the page as rendered (rotation,
    crop box offset), in points, top-left origin; `width` x `height` the page's size. FPDF_PageToDevice
    returns integer pixels, so it maps onto a canvas 16x the page size, for 1/16 pt precision. The caller
    holds the PDFium lock while it calls `to_page`."""
    import pypdfium2.raw as raw

    scale = 16
    size_x, size_y = max(1, round(width * scale)), max(1, round(height * scale))
    dx, dy = ctypes.c_int(), ctypes.c_int()

    def to_page(x: float, y: float) -> tuple[float, float]:
        raw.FPDF_PageToDevice(page.raw, 0, 0, size_x, size_y, 0, x, y, dx, dy)
        return dx.value / scale, dy.value / scale

    return to_page


def _lines(page, runs: list[list[_Char]], width: float, height: float) -> list[Line]:
    to_page = page_mapper(page, width, height)
    lines = []
    for run in runs:
        text = "".join(c.ch for c in run).strip()
        if not text:
            continue
        xs0, ys0 = to_page(min(c.x0 for c in run), min(c.y0 for c in run))
        xs1, ys1 = to_page(max(c.x1 for c in run), max(c.y1 for c in run))
        glyphs = [c for c in run if c.size > 0]
        size = statistics.median(c.size for c in glyphs) if glyphs else 0.0
        weights = [c.weight for c in glyphs if c.weight > 0]
        weight = statistics.median_low(weights) if weights else 0
        # a line of code, not a line of prose holding a few words of code
        mono = sum(c.mono for c in glyphs) >= 0.8 * len(glyphs) if glyphs else False
        box = (min(xs0, xs1), min(ys0, ys1), max(xs0, xs1), max(ys0, ys1))
        lines.append(
            Line(text=text, box=box, size=float(size), weight=int(weight), mono=mono, source=TEXTLAYER)
        )
    return lines


def _verdict(layer: PageLines, limits: TextLayerLimits) -> tuple[str, str]:
    s = layer.stats
    glyphs = s["glyphs"]
    if glyphs == 0:
        return NONE, "the page has no text layer"
    if s["invisible"] > limits.invisible_share * glyphs:
        return INVISIBLE, f"{s['invisible']} of {glyphs} glyphs are invisible (an OCR layer)"
    if s["unmapped"] > limits.unmapped_share * glyphs:
        return UNMAPPED, f"{s['unmapped']} of {glyphs} glyphs have no Unicode mapping"
    hidden = s["offpage"] + s["degenerate"]
    if hidden > limits.offpage_share * glyphs:
        return OFFPAGE, f"{hidden} of {glyphs} glyphs lie outside the page or have no size"
    text = layer.text
    if not text.strip():
        return NONE, "the page's text layer is empty"
    cids = len(_CID.findall(text))
    if cids and cids * 8 > limits.unmapped_share * len(text):
        return UNMAPPED, f"{cids} (cid:..) placeholders in the text"
    garbled = len(_MOJIBAKE.findall(text))
    if garbled > limits.mojibake_share * len(text):
        return MOJIBAKE, f"{garbled} mis-decoded sequences in {len(text)} characters"
    return OK, ""


def page_objects(page, max_objects: int, max_depth: int = 8):
    """(object, type) of every object of a `pypdfium2.PdfPage` in drawing order, form XObjects descended
    into (the form itself yielded too) down to `max_depth`; at most `max_objects` are visited, so a page of
    a million objects costs no more than that. The one walk over page objects (the text layer's glyph
    estimate, formula rules, figure regions)."""
    import pypdfium2.raw as raw

    stack = [(raw.FPDFPage_CountObjects(page.raw), lambda i: raw.FPDFPage_GetObject(page.raw, i), 0)]
    seen = 0
    while stack:
        count, get, depth = stack.pop()
        for i in range(max(count, 0)):
            seen += 1
            if seen > max_objects:
                return
            obj = get(i)
            kind = raw.FPDFPageObj_GetType(obj)
            if kind == raw.FPDF_PAGEOBJ_FORM and depth < max_depth:
                stack.append(
                    (
                        raw.FPDFFormObj_CountObjects(obj),
                        lambda j, o=obj: raw.FPDFFormObj_GetObject(o, j),
                        depth + 1,
                    )
                )
            yield obj, kind
