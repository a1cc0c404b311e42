"""Where the table reader's geometry comes from (`jocr.layout.tables`): text pieces and ruling lines of a
PDF page (PDFium characters and path objects), of lines any line source gave (text layer or OCR, split at
their words' column gaps), and ruling lines found in pixels (a scan, a photo, a rendered page).

Coordinates: the page's as rendered, top-left origin: points for a PDF page, pixels for an image.
"""

from __future__ import annotations

import ctypes
import re
import statistics
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from jocr.layout.tables import Piece, Rule
from jocr.lines.textlayer import page_mapper

BOLD = 520  # the weight the tree's rules call bold (jocr.layout.geometry.BOLD)
PIECE_GAP = 0.5  # a gap this many line heights wide (about half an em) splits a line into pieces
MAX_PAGE_CHARS = 200_000  # a page's characters read for its pieces at most (a hostile layer stops here)
MAX_PATHS = 50_000  # path objects examined at most


# -- pieces from lines ---------------------------------------------------------------------------------


@dataclass
class SplitConfig:
    """Where a line with word boxes (OCR) is split into pieces (lengths in the line's height): at every
    gap of `min_gap` or more (None: at none), and at a gap of `aligned_gap` or more where the piece after
    it lines up with pieces of `rows` other lines within `reach` line heights above or below (a left edge,
    or, for a run at most `short_run` long, a right edge, of a piece that starts after the gap, within
    `tolerance`): the column gap of a table
    whose OCR line bridged two cells. A page's prose has wide gaps too (after a sentence, in a justified
    line), but they do not line up from row to row."""

    min_gap: float | None = PIECE_GAP
    aligned_gap: float = PIECE_GAP
    rows: int = 2
    reach: float = 6.0
    tolerance: float = 0.4
    short_run: float = 8.0


PAGE_SPLIT = SplitConfig(min_gap=None)  # a whole page: only the gaps that line up with other rows


def line_pieces(lines: Sequence, config: SplitConfig | None = None) -> list[Piece]:
    """Pieces of any line type (`jocr.lines.types.Line`, `jocr.layout.geometry.Line`): a line with word
    boxes (OCR) is split at the gaps between its words that `config` says part cells (by default, every
    gap of at least `PIECE_GAP` line heights); a line without them (the text layer's runs already end at
    1-em gaps) is one piece."""
    config = config or SplitConfig()
    lines = [line for line in lines if str(getattr(line, "text", "")).strip()]
    groups = [_word_groups(line, config.aligned_gap) for line in lines]
    edges = _edges(lines, groups)
    out = []
    for k, (line, line_groups) in enumerate(zip(lines, groups, strict=True)):
        text = str(line.text).strip()
        bold = int(getattr(line, "weight", 0) or 0) >= BOLD
        if line_groups is None:
            out.append(Piece(text, tuple(float(v) for v in line.box), bold))
            continue
        height = max(line.box[3] - line.box[1], 1e-3)
        parts: list[list] = [list(line_groups[0])]
        for group in line_groups[1:]:
            gap = group[0].box[0] - parts[-1][-1].box[2]
            wide = config.min_gap is not None and gap > config.min_gap * height
            if wide or _lined_up(k, parts[-1][-1].box[2], group, lines, edges, height, config):
                parts.append(list(group))
            else:
                parts[-1].extend(group)
        texts = _group_texts(text, parts)
        out.extend(_joined(part, bold, t) for part, t in zip(parts, texts, strict=True) if part)
    return out


def _word_groups(line, gap: float) -> list[list] | None:
    """A line's words in runs parted by gaps wider than `gap` line heights; None for a line without
    word boxes."""
    words = getattr(line, "words", None)
    if not words:
        return None
    height = max(line.box[3] - line.box[1], 1e-3)
    groups: list[list] = [[]]
    for word in words:
        if groups[-1] and word.box[0] - groups[-1][-1].box[2] > gap * height:
            groups.append([])
        groups[-1].append(word)
    return [g for g in groups if g]


def _edges(lines: Sequence, groups: list) -> list[list[tuple[float, float]]]:
    """Each line's runs as (left, right) x-intervals: its word runs, or its box for a line without
    words."""
    out = []
    for line, line_groups in zip(lines, groups, strict=True):
        if line_groups is None:
            out.append([(float(line.box[0]), float(line.box[2]))])
        else:
            out.append([(float(g[0].box[0]), float(max(w.box[2] for w in g))) for g in line_groups])
    return out


def _lined_up(k: int, gap_start: float, group: list, lines: Sequence, edges, height: float,
              config: SplitConfig) -> bool:  # fmt: skip
    """Whether the run `group` of line `k`, after a gap starting at `gap_start`, starts (or ends) where
    runs of `config.rows` other lines near it start (or end), those runs lying right of the gap."""
    left, right = group[0].box[0], max(w.box[2] for w in group)
    tol = config.tolerance * height
    # a right edge counts for a short run only (a figure in a column set flush right): a justified
    # paragraph's lines all end at its margin, and a long run after a sentence's gap ends there too
    short = right - left <= config.short_run * height
    cy = (lines[k].box[1] + lines[k].box[3]) / 2
    count = 0
    for m, line in enumerate(lines):
        if m == k or abs((line.box[1] + line.box[3]) / 2 - cy) > config.reach * height:
            continue
        runs = [(a, b) for a, b in edges[m] if a > gap_start]
        if any(abs(a - left) <= tol or short and abs(b - right) <= tol for a, b in runs):
            count += 1
            if count >= config.rows:
                return True
    return False


def _group_texts(text: str, groups: list[list]) -> list[str]:
    """Each word group's text as the line's own text spells it: the recogniser's spacing, not a space
    between every two word boxes (RapidOCR gives boxes for pieces of a word, "em" "u" for "emu"; CJK text
    gets a box per character). Groups whose letters cannot be found in order in the line's text fall back
    to their words joined by spaces."""
    out, pos = [], 0
    for group in groups:
        letters = "".join(w.text for w in group).replace(" ", "")
        while pos < len(text) and text[pos] == " ":
            pos += 1
        start, k = pos, 0
        while pos < len(text) and k < len(letters):
            if _same_char(text[pos], letters[k]):
                k += 1
            elif text[pos] != " ":
                break
            pos += 1
        if k < len(letters):
            return [" ".join(w.text for w in g) for g in groups]
        out.append(text[start:pos])
    return out


def _same_char(a: str, b: str) -> bool:
    """Whether two characters are one, full-width forms folded (NFKC): an OCR line's text has its Chinese
    punctuation full-width ("（" for "(", `jocr.lines.spacing`), its word boxes the recogniser's own."""
    return a == b or unicodedata.normalize("NFKC", a) == unicodedata.normalize("NFKC", b)


def _joined(words, bold: bool, text: str | None = None) -> Piece:
    box = (
        min(w.box[0] for w in words),
        min(w.box[1] for w in words),
        max(w.box[2] for w in words),
        max(w.box[3] for w in words),
    )
    return Piece(text if text is not None else " ".join(w.text for w in words), tuple(float(v) for v in box),
                 bold)  # fmt: skip


# -- a PDF page ----------------------------------------------------------------------------------------


def pdf_page_pieces(page, textpage=None) -> list[Piece]:
    """The pieces of a `pypdfium2.PdfPage` from its characters' loose boxes (font ascent to descent): a new
    piece at a new baseline or across a gap of `PIECE_GAP` line heights. The caller holds the PDFium lock."""
    import pypdfium2.raw as raw

    own = textpage is None
    textpage = textpage or page.get_textpage()
    try:
        tp = textpage.raw
        count = min(raw.FPDFText_CountChars(tp), MAX_PAGE_CHARS)
        to_page = page_mapper(page, *page.get_size())
        rect = raw.FS_RECTF()
        pieces: list[Piece] = []
        chars: list[tuple[str, float, float, float, float, int]] = []
        pending_space = False

        def flush() -> None:
            for part in _numeric_split(chars):
                text = "".join(c[0] for c in part).strip()
                if text:
                    box = (min(c[1] for c in part), min(c[2] for c in part),
                           max(c[3] for c in part), max(c[4] for c in part))  # fmt: skip
                    weights = [c[5] for c in part if c[5] > 0]
                    bold = bool(weights) and statistics.median_low(weights) >= BOLD
                    pieces.append(Piece(text, box, bold))
            chars.clear()

        for i in range(count):
            code = raw.FPDFText_GetUnicode(tp, i)
            ch = chr(code) if 0 < code < 0x110000 else ""
            if not ch or ch.isspace() or ch in "\ufffe\uffff":
                pending_space = bool(chars)
                if ch in "\r\n":
                    flush()
                continue
            if not raw.FPDFText_GetLooseCharBox(tp, i, rect):
                continue
            (xa, ya), (xb, yb) = to_page(rect.left, rect.top), to_page(rect.right, rect.bottom)
            x0, y0, x1, y1 = min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb)
            if chars:
                last = chars[-1]
                h = max(last[4] - last[2], y1 - y0, 1e-3)
                overlap = min(last[4], y1) - max(last[2], y0)
                gap = x0 - last[3]
                if overlap < 0.5 * h or gap > PIECE_GAP * h or gap < -2 * h:
                    flush()
                    pending_space = False
            if pending_space and chars:
                chars.append((" ", x0, y0, x0, y1, 0))
            pending_space = False
            chars.append((ch, x0, y0, x1, y1, _weight(raw, tp, i)))
        flush()
        return pieces
    finally:
        if own:
            textpage.close()


_NUMBER = re.compile(r"[-+−–(]?[$€£¥]?[0-9][0-9.,]*[%)*†‡]?")


def _numeric_split(chars: list) -> list[list]:
    """A run of characters split at the spaces between two numbers: numbers side by side are columns of
    figures set closer than a column gap ("0.87 0.20 0.20"), never one cell's words."""
    words: list[list] = [[]]
    for c in chars:
        if c[0] == " ":
            words.append([])
        else:
            words[-1].append(c)
    words = [w for w in words if w]
    if len(words) < 2:
        return [chars] if chars else []
    texts = ["".join(c[0] for c in w) for w in words]
    parts: list[list] = [list(words[0])]
    for prev, word, text in zip(texts, words[1:], texts[1:], strict=False):
        if _NUMBER.fullmatch(prev) and _NUMBER.fullmatch(text):
            parts.append(list(word))
        else:
            parts[-1].append((" ", word[0][1], word[0][2], word[0][1], word[0][4], 0))
            parts[-1].extend(word)
    return parts


def _weight(raw, tp, index: int) -> int:
    """A character's font weight; a font named bold ("Helvetica-Bold", "LiberationSerif-Bold") is 700
    whatever its descriptor says (`jocr.lines.textlayer` reads weights the same way)."""
    from jocr.lines.textlayer import _BOLD_NAME, _font_info

    weight = max(int(raw.FPDFText_GetFontWeight(tp, index)), 0)
    if weight < BOLD and _BOLD_NAME.search(_font_info(raw, tp, index)[0]):
        weight = 700
    return weight


def pdf_page_rules(page) -> list[Rule]:
    """The ruling lines of a `pypdfium2.PdfPage`: thin path objects (TeX's rules are filled rectangles) and
    the straight horizontal and vertical segments of stroked paths (cell borders, frames). The caller holds
    the PDFium lock."""
    import pypdfium2.raw as raw

    to_page = page_mapper(page, *page.get_size())
    rules: list[Rule] = []
    for n, obj in enumerate(page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=4)):
        if n >= MAX_PATHS:
            break
        try:
            left, bottom, right, top = obj.get_bounds()
        except Exception:  # a path PDFium cannot bound is no rule
            continue
        if _invisible(raw, obj):
            continue
        (xa, ya), (xb, yb) = to_page(left, top), to_page(right, bottom)
        x0, y0, x1, y1 = min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb)
        w, h = x1 - x0, y1 - y0
        if h <= 3.0 and w > 3 * h:
            rules.append(Rule(x0, (y0 + y1) / 2, x1, (y0 + y1) / 2))
            continue
        if w <= 3.0 and h > 3 * w:
            rules.append(Rule((x0 + x1) / 2, y0, (x0 + x1) / 2, y1))
            continue
        if obj.level == 0:
            rules.extend(_stroked_segments(raw, obj, to_page))
    return rules


def _invisible(raw, obj) -> bool:
    """Whether a path draws nothing a reader sees: neither filled nor stroked, or only in white or fully
    transparent colour (the invisible cell borders of exported spreadsheets)."""
    fill, stroke = ctypes.c_int(), ctypes.c_int()
    if not raw.FPDFPath_GetDrawMode(obj.raw, fill, stroke):
        return False
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    seen = []
    for used, getter in (
        (fill.value, raw.FPDFPageObj_GetFillColor),
        (stroke.value, raw.FPDFPageObj_GetStrokeColor),
    ):
        if not used:
            continue
        if not getter(obj.raw, r, g, b, a):
            return False  # a colour PDFium cannot tell (a pattern): count it as drawn
        seen.append(a.value == 0 or min(r.value, g.value, b.value) >= 235)
    return all(seen)


def _stroked_segments(raw, obj, to_page) -> list[Rule]:
    """Horizontal and vertical straight segments of a stroked path (its matrix applied)."""
    fill, stroke = ctypes.c_int(), ctypes.c_int()
    if not raw.FPDFPath_GetDrawMode(obj.raw, fill, stroke) or not stroke.value:
        return []
    m = raw.FS_MATRIX()
    if not raw.FPDFPageObj_GetMatrix(obj.raw, m):
        return []
    count = raw.FPDFPath_CountSegments(obj.raw)
    if count <= 0 or count > 2000:
        return []
    x, y = ctypes.c_float(), ctypes.c_float()
    points: list[tuple[int, float, float, bool]] = []
    for i in range(count):
        seg = raw.FPDFPath_GetPathSegment(obj.raw, i)
        if not seg or not raw.FPDFPathSegment_GetPoint(seg, x, y):
            continue
        px, py = m.a * x.value + m.c * y.value + m.e, m.b * x.value + m.d * y.value + m.f
        points.append(
            (raw.FPDFPathSegment_GetType(seg), *to_page(px, py), bool(raw.FPDFPathSegment_GetClose(seg)))
        )
    out: list[Rule] = []
    start = prev = None
    for kind, px, py, close in points:
        if kind == raw.FPDF_SEGMENT_MOVETO:
            start = prev = (px, py)
            continue
        if prev is not None and kind == raw.FPDF_SEGMENT_LINETO:
            out.extend(_axis_rule(prev, (px, py)))
        prev = (px, py)
        if close and start is not None:
            out.extend(_axis_rule(prev, start))
            prev = start
    return out


def _axis_rule(a, b) -> list[Rule]:
    (ax, ay), (bx, by) = a, b
    if abs(ay - by) <= 0.5 and abs(ax - bx) > 1.0:
        return [Rule(min(ax, bx), (ay + by) / 2, max(ax, bx), (ay + by) / 2)]
    if abs(ax - bx) <= 0.5 and abs(ay - by) > 1.0:
        return [Rule((ax + bx) / 2, min(ay, by), (ax + bx) / 2, max(ay, by))]
    return []


# -- pixels --------------------------------------------------------------------------------------------


def image_rules(
    image: Image.Image, scale: float = 1.0, origin: tuple[float, float] = (0.0, 0.0)
) -> list[Rule]:
    """Ruling lines in an image: runs of dark pixels at least `min_run` long along rows (horizontal rules)
    or columns (vertical rules), runs of adjacent rows merged into one rule, bands thicker than a rule (a
    filled area, a photo) dropped. Boxes are mapped to the page by dividing by `scale` (pixels per page
    unit) and adding `origin`. With OpenCV (installed with RapidOCR) a morphological opening and connected
    components do it in a few milliseconds a page; without it, a run-length scan in numpy."""
    grey = np.asarray(image.convert("L"), dtype=np.uint8)
    if grey.size == 0:
        return []
    dark = _dark(grey)
    out = []
    for axis_dark, horizontal in ((dark, True), (dark.T, False)):
        length = axis_dark.shape[1]
        min_run = max(20, length // 25)
        for a, b, lo, hi in _long_runs(axis_dark, min_run):
            if horizontal:
                rule = Rule(a, (lo + hi) / 2, b, (lo + hi) / 2)
            else:
                rule = Rule((lo + hi) / 2, a, (lo + hi) / 2, b)
            out.append(
                Rule(
                    rule.x0 / scale + origin[0],
                    rule.y0 / scale + origin[1],
                    rule.x1 / scale + origin[0],
                    rule.y1 / scale + origin[1],
                )  # fmt: skip
            )
    return out


def _dark(grey: np.ndarray) -> np.ndarray:
    """Ink: pixels darker than 160, or, on a page lit unevenly (a photo, a scan's shaded edge), than 70% of
    the paper's brightness around them (the local background: a 31-pixel maximum, blurred)."""
    try:
        import cv2
    except ImportError:
        return grey < 160
    background = cv2.blur(cv2.dilate(grey, np.ones((31, 31), np.uint8)), (31, 31))
    return (grey < 160) & (grey.astype(np.int16) < 0.7 * background) | (grey < 0.55 * background)


def _long_runs(dark: np.ndarray, min_run: int) -> list[tuple[int, int, float, float]]:
    """Runs of True at least `min_run` long in each row: (start, end, first row, last row), runs of
    adjacent rows merged (a rule 2-3 pixels thick is one); a band thicker than a rule is dropped."""
    thick = max(6, 0.01 * dark.shape[0])
    try:
        import cv2
    except ImportError:
        runs = _long_runs_numpy(dark, min_run)
    else:
        # pixels on a horizontal run of `min_run` (an opening by a 1 x min_run line), then one
        # component per rule; a rule broken by a pixel or two of noise is closed first
        mask = dark.astype(np.uint8)
        mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((1, 3), np.uint8))
        opened = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((1, min_run), np.uint8))
        n, _labels, stats, _ = cv2.connectedComponentsWithStats(opened, connectivity=8)
        # thickness is area over length: a rule at a slight slant (a skewed scan) spans many rows
        return [
            (int(x), int(x + w), float(y), float(y + h - 1))
            for x, y, w, h, area in stats[1:n]
            if w >= min_run and area / w <= thick
        ]
    return [r for r in runs if r[3] - r[2] <= thick]


def _long_runs_numpy(dark: np.ndarray, min_run: int) -> list[tuple[int, int, float, float]]:
    """`_long_runs` without OpenCV: run starts and ends from row differences, row by row."""

    padded = np.zeros((dark.shape[0], dark.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = dark
    diff = np.diff(padded, axis=1)
    open_runs: list[list[float]] = []  # [start, end, first row, last row]
    done: list[tuple[int, int, float, float]] = []
    rows_with_runs = np.nonzero(dark.sum(axis=1) >= min_run)[0]
    for row in rows_with_runs:
        starts = np.nonzero(diff[row] == 1)[0]
        ends = np.nonzero(diff[row] == -1)[0]
        long = [(int(s), int(e)) for s, e in zip(starts, ends, strict=False) if e - s >= min_run]
        still = []
        for s, e in long:
            for run in open_runs:
                if run[3] >= row - 1 and min(run[1], e) - max(run[0], s) >= 0.5 * min(run[1] - run[0], e - s):
                    run[0], run[1], run[3] = min(run[0], s), max(run[1], e), row
                    still.append(run)
                    break
            else:
                run = [s, e, row, row]
                open_runs.append(run)
                still.append(run)
        for run in open_runs:
            if run not in still and run[3] < row - 1:
                done.append(tuple(run))
        open_runs = [r for r in open_runs if r[3] >= row - 1]
    done.extend(tuple(r) for r in open_runs)
    return done
