"""A PDF page's glyphs and horizontal rules, as the formula reader needs them (docs/layout.md, "Formulas").

`jocr.lines.textlayer` keeps lines; a formula needs each glyph: its text, font, size, baseline and ink box,
and the page's thin horizontal paths (fraction bars, radical overbars), which are not text at all. Both come
from PDFium through pypdfium2, in the text layer's frame: points, origin at the top-left of the page as
rendered, y growing downwards.

TeX's Computer Modern math fonts have their own encodings (OML for CMMI, OMS for CMSY, OMX for CMEX). A PDF
whose fonts carry glyph names (pdfTeX's Type 1 fonts) gives Unicode already ("σ", "∑"); one without them gives
a slot below 32 as a control code, and matplotlib's BaKoMa fonts give every slot as its code ("X" for the
CMEX summation sign), slots 0-32 moved up to 0xA1-0xC4. `decode_char` maps those back to Unicode by the
font's name; a font it does not know keeps its code. Everything here is bounded (`GlyphLimits`) and never
raises for a bad page: the caller gets no glyphs.
"""

from __future__ import annotations

import ctypes
import re
import unicodedata
from dataclasses import dataclass

from jocr.bbox import BBox as Box
from jocr.bbox import BoxEdges
from jocr.lines.textlayer import SharedTextPage, char_code, page_mapper, page_objects


@dataclass
class GlyphLimits:
    """What reading one page's glyphs may cost."""

    max_chars: int = 60_000  # as `TextLayerLimits.max_chars`
    max_objects: int = 50_000  # page objects visited for rules
    max_rule_thickness: float = 3.0  # points: thicker paths are boxes or figures, not rules
    min_rule_width: float = 1.5  # points


@dataclass
class Glyph(BoxEdges):
    """One character: `box` its ink box, `baseline` the y of its origin, `size` its font size (points)."""

    text: str
    font: str
    size: float
    box: Box
    baseline: float
    raw: str = (
        ""  # the character PDFium gives (what the text layer's lines hold), before TeX slots are decoded
    )


@dataclass
class Rule:
    """A thin horizontal path (or filled rectangle): a fraction bar, a radical's overbar, an underline."""

    box: Box


# Math fonts by name (after a subset's "ABCDEF+" prefix): TeX's Computer Modern and AMS math fonts, Latin
# Modern / STIX / Cambria / XITS math fonts, KaTeX's web fonts, Symbol. STIX Two Text is the text face
# beside STIX Two Math (unicode-math documents set their prose in it), as XITS-Regular / -Bold are beside
# XITSMath; STIXGeneral (matplotlib's STIX fontset) draws math letters.
MATH_FONT = re.compile(
    r"^(?:cm(?:mi|sy|ex|bsy|mib)\d|lm(?:mi|sy|ex)|ms(?:am|bm)\d|eu(?:fm|sm|ex|rm)\d|rsfs|wasy|stmary|"
    r"txmi|txsy|txex|pxmi|pxsy|pxex|rm-?ms|esint)|math|stix(?!-?two-?text)|cambria-?math|"
    r"katex_(?:math|size|ams)|^symbol",
    re.I,
)
_BAKOMA = re.compile(r"^Cm[a-z]+[0-9]+$")  # matplotlib's BaKoMa TrueType CM fonts (TeX's own: "CMMI10")
_CM_FONT = re.compile(r"^(cm(?:mi|sy|ex|bsy|mib|r|bx|ti|sl|ss)|lm(?:mi|sy|ex|r))[0-9]*", re.I)

# OML (CMMI) slots 0-47 and a few more: Greek, variants, harpoons, hooks.
_OML = "ΓΔΘΛΞΠΣΥΦΨΩαβγδϵζηθικλμνξπρστυϕχψωεϑϖϱςφ↼↽⇀⇁‘’▹◃"  # 0x00-0x2F
_OML_MORE = {0x3A: ".", 0x3B: ",", 0x3C: "<", 0x3D: "/", 0x3E: ">", 0x3F: "⋆", 0x40: "∂", 0x60: "ℓ",
             0x7B: "ı", 0x7C: "ȷ", 0x7D: "℘", 0x7E: "→", 0x7F: "⁀"}  # fmt: skip
# OMS (CMSY): every slot but the capitals (calligraphic letters, read as letters).
_OMS = (
    "−·×∗÷⋄±∓⊕⊖⊗⊘⊙○∘∙≍≡⊆⊇≤≥⪯⪰∼≈⊂⊃≪≫≺≻←→↑↓↔↗↘≃⇐⇒⇑⇓⇔↖↙∝"  # 0x00-0x2F
    "′∞∈∋△▽/̸∀∃¬∅ℜℑ⊤⊥"  # 0x30-0x3F
)
_OMS_MORE = {0x40: "ℵ", 0x5B: "∪", 0x5C: "∩", 0x5D: "⊎", 0x5E: "∧", 0x5F: "∨", 0x60: "⊢", 0x61: "⊣",
             0x62: "⌊", 0x63: "⌋", 0x64: "⌈", 0x65: "⌉", 0x66: "{", 0x67: "}", 0x68: "⟨", 0x69: "⟩",
             0x6A: "|", 0x6B: "‖", 0x6C: "↕", 0x6D: "⇕", 0x6E: "∖", 0x6F: "≀", 0x70: "√", 0x71: "⨿",
             0x72: "∇", 0x73: "∫", 0x74: "⊔", 0x75: "⊓", 0x76: "⊑", 0x77: "⊒", 0x78: "§", 0x79: "†",
             0x7A: "‡", 0x7B: "¶", 0x7C: "♣", 0x7D: "♢", 0x7E: "♡", 0x7F: "♠"}  # fmt: skip
# OMX (CMEX): delimiters in several sizes, big operators, radicals.
_OMX_DELIMS = "()[]⌊⌋⌈⌉{}⟨⟩|‖/\\" + "()" + "()[]⌊⌋⌈⌉{}⟨⟩/\\" + "()[]⌊⌋⌈⌉{}⟨⟩/\\" + "/\\"  # 0x00-0x31
_OMX_MORE = {0x30: "⎛", 0x31: "⎞", 0x32: "⎡", 0x33: "⎤", 0x34: "⎣", 0x35: "⎦", 0x36: "⎢", 0x37: "⎥",
             0x38: "⎧", 0x39: "⎫", 0x3A: "⎩", 0x3B: "⎭", 0x3C: "⎨", 0x3D: "⎬", 0x3E: "⎪", 0x3F: "⏐",
             0x40: "⎝", 0x41: "⎠", 0x42: "⎜", 0x43: "⎟", 0x44: "⟨", 0x45: "⟩",
             0x46: "⨆", 0x47: "⨆", 0x48: "∮", 0x49: "∮", 0x4A: "⨀", 0x4B: "⨀", 0x4C: "⨁", 0x4D: "⨁",
             0x4E: "⨂", 0x4F: "⨂", 0x50: "∑", 0x51: "∏", 0x52: "∫", 0x53: "⋃", 0x54: "⋂", 0x55: "⨄",
             0x56: "⋀", 0x57: "⋁", 0x58: "∑", 0x59: "∏", 0x5A: "∫", 0x5B: "⋃", 0x5C: "⋂", 0x5D: "⨄",
             0x5E: "⋀", 0x5F: "⋁", 0x60: "∐", 0x61: "∐", 0x62: "^", 0x63: "^", 0x64: "^", 0x65: "~",
             0x66: "~", 0x67: "~", 0x68: "[", 0x69: "]", 0x6A: "⌊", 0x6B: "⌋", 0x6C: "⌈", 0x6D: "⌉",
             0x6E: "{", 0x6F: "}", 0x70: "√", 0x71: "√", 0x72: "√", 0x73: "√", 0x74: "√"}  # fmt: skip
# CMR (OT1) slots 0-31: upright capital Greek, ligatures, dotless i/j, accents, ß æ œ ø Æ Œ Ø.
_OT1 = "ΓΔΘΛΞΠΣΥΦΨΩ" + "\ufb00\ufb01\ufb02\ufb03\ufb04ıȷ`´ˇ˘¯˚¸ßæœøÆŒØ"


def _slot(code: int, bakoma: bool) -> int:
    """A TeX slot from a code: BaKoMa's TrueType fonts (matplotlib) put slots 0-9 at 0xA1-0xAA, 10-32 at
    0xAD-0xC3 and 127 at 0xC4 (PDFium reads their 0xB7 as U+2219)."""
    if not bakoma:
        return code
    if code == 0x2219:
        code = 0xB7
    if 0xA1 <= code <= 0xAA:
        return code - 0xA1
    if 0xAD <= code <= 0xC3:
        return code - 0xAD + 10
    if code == 0xC4:
        return 0x7F
    return code


# Adobe's private-use codes for pieces of big delimiters (what PDFium gives for CMEX's pieces).
_PUA_PIECES = dict(zip(range(0xF8EB, 0xF8FF), "⎛⎜⎝⎡⎢⎣⎧⎨⎩⎪⎮⎞⎟⎠⎤⎥⎦⎫⎬⎭"))


# Latin Modern's Type 1 math fonts by their long names ("LMMathSymbols10-Regular"): the same encodings.
_LM_LONG = re.compile(r"^LMMath(Italic|Symbols|Extension)", re.I)
_LM_FAMILY = {"italic": "lmmi", "symbols": "lmsy", "extension": "lmex"}


def decode_char(code: int, font: str, unmapped: bool = False) -> str:
    """The Unicode text of char `code` in `font` (its name without a subset prefix): TeX math slots decoded
    where the code is a slot rather than Unicode. `unmapped`: PDFium could not map the glyph (its name is not
    one it knows, as Latin Modern's `Rfractur` or `prime`) and gave its code, so the code is a slot even
    where the font's other glyphs have Unicode (ℜ came out as "<", a prime as "0")."""
    if code in _PUA_PIECES:
        return _PUA_PIECES[code]
    long_name = _LM_LONG.match(font)
    m = _CM_FONT.match(font)
    bakoma = m is not None and _BAKOMA.match(font) is not None
    if (long_name is None and m is None) or (code >= 0x370 and not (bakoma and code == 0x2219)):
        return chr(code)  # Unicode proper is kept
    family = _LM_FAMILY[long_name.group(1).lower()] if long_name else m.group(1).lower()
    if not bakoma and code >= 0x20 and not unmapped and not family.endswith("ex"):
        return chr(code)  # TeX's text and symbol fonts name their glyphs: PDFium's Unicode is right
    slot = _slot(code, bakoma)
    if slot > 0x7F:
        return chr(code)
    if family in ("cmmi", "lmmi", "cmmib"):
        if slot < len(_OML):
            return _OML[slot]
        return _OML_MORE.get(slot, chr(slot))
    if family in ("cmsy", "lmsy", "cmbsy"):
        if slot < len(_OMS):
            return _OMS[slot]
        if 0x41 <= slot <= 0x5A:
            return chr(slot)
        return _OMS_MORE.get(slot, chr(slot))
    if family in ("cmex", "lmex"):
        if slot < len(_OMX_DELIMS):
            return _OMX_DELIMS[slot]
        return _OMX_MORE.get(slot, chr(slot))
    if slot < len(_OT1) and (code < 0x20 or code != slot):  # a text font's slots below the space
        return _OT1[slot]
    return chr(code)


def is_math_font(font: str) -> bool:
    return MATH_FONT.search(font) is not None


def page_glyphs(page, limits: GlyphLimits | None = None, textpage=None) -> tuple[list[Glyph], list[Rule]]:
    """The glyphs (in PDFium's text order, spaces and breaks left out) and rules of a `pypdfium2.PdfPage`;
    ([], []) for a page PDFium cannot read or one beyond `limits`. `textpage`: the page's text page shared
    with the other readers of one pass (`jocr.lines.textlayer.SharedTextPage`, left open here). The caller
    holds the PDFium lock."""
    limits = limits or GlyphLimits()
    shared = textpage or SharedTextPage(page)
    try:
        width, height = page.get_size()
        built = shared.get()
    except Exception:  # a page PDFium cannot size or read has no glyphs to give
        return [], []
    try:
        glyphs = _glyphs(page, built, width, height, limits)
    except Exception:  # PDFium errors on hostile files: no formula is read, the page goes on
        glyphs = []
    finally:
        if textpage is None:
            shared.close()
    try:
        rules = _rules(page, width, height, limits)
    except Exception:
        rules = []
    return glyphs, rules


def _glyphs(page, textpage, width: float, height: float, limits: GlyphLimits) -> list[Glyph]:
    import pypdfium2.raw as raw

    tp = textpage.raw
    count = raw.FPDFText_CountChars(tp)
    if count <= 0 or count > limits.max_chars:
        return []
    to_page = page_mapper(page, width, height)
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    ox, oy = ctypes.c_double(), ctypes.c_double()
    matrix = raw.FS_MATRIX()
    buffer = ctypes.create_string_buffer(128)
    flags = ctypes.c_int(0)
    fonts: dict[int, tuple[str, float]] = {}
    out: list[Glyph] = []
    for i in range(count):
        code = char_code(raw, tp, i)
        if code is None or code in (0x0A, 0x0D, 0x09, 0xA0, 0, 0xFFFE, 0xFFFF):
            continue
        obj = raw.FPDFText_GetTextObject(tp, i)
        key = ctypes.cast(obj, ctypes.c_void_p).value or 0
        info = fonts.get(key)
        if info is None:
            raw.FPDFText_GetFontInfo(tp, i, buffer, len(buffer), ctypes.byref(flags))
            name = buffer.value.decode("latin-1", "replace").split("+")[-1]
            size = float(raw.FPDFText_GetFontSize(tp, i))
            if raw.FPDFText_GetMatrix(tp, i, matrix):
                size *= abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5
            info = fonts[key] = (name, size)
        name, size = info
        text = decode_char(code, name, raw.FPDFText_HasUnicodeMapError(tp, i) == 1)
        if code in (0x02, 0x20) and text == chr(code):
            continue  # a space, or PDFium's mark for a hyphen at a line's end; not a TeX slot (CMEX's `[`)
        if size <= 0.5 or not raw.FPDFText_GetCharBox(tp, i, left, right, bottom, top):
            continue
        if not raw.FPDFText_GetCharOrigin(tp, i, ox, oy):
            continue
        if not text.strip() or unicodedata.category(text[0]) in ("Cc", "Co", "Cs", "Cn"):
            continue
        xa, ya = to_page(left.value, top.value)
        xb, yb = to_page(right.value, bottom.value)
        _, base = to_page(ox.value, oy.value)
        box = (min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb))
        if box[2] - box[0] <= 0 and box[3] - box[1] <= 0:
            continue
        out.append(Glyph(text, name, size, box, base, chr(code)))
    return out


def _rules(page, width: float, height: float, limits: GlyphLimits) -> list[Rule]:
    """Thin, wide path objects (forms descended into, at most `max_objects` objects visited)."""
    import pypdfium2.raw as raw

    to_page = page_mapper(page, width, height)
    lo_x, lo_y, hi_x, hi_y = (ctypes.c_float() for _ in range(4))
    out: list[Rule] = []
    for obj, kind in page_objects(page, limits.max_objects):
        if kind != raw.FPDF_PAGEOBJ_PATH or not raw.FPDFPageObj_GetBounds(obj, lo_x, lo_y, hi_x, hi_y):
            continue
        xa, ya = to_page(lo_x.value, hi_y.value)
        xb, yb = to_page(hi_x.value, lo_y.value)
        box = (min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb))
        w, h = box[2] - box[0], box[3] - box[1]
        if w >= limits.min_rule_width and h <= limits.max_rule_thickness and h <= 0.25 * w:
            out.append(Rule(box))
    return out
