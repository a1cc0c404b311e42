"""OCR as a line source: a page image in, `PageLines` (lines and word boxes, source "rapidocr" or
"tesseract") out, on a CPU. The engines sit behind one call, `read_image`; docs/parsing.md ("OCR line
source") says which is the default and why.

Steps, all bounded:
1. Refuse what cannot be a page worth reading, with a one-line note and no lines: fewer than
   `min_side` pixels on a side, more than `max_input_pixels`, an aspect beyond `max_aspect`, a blank page.
2. Scale down to at most `max_pixels` (an engine reads small text fine at 150-200 dpi; more only costs).
3. Set the page upright: projection profiles tell a page lying on its side (rows of text give a sharper
   profile across than along them); Tesseract's OSD, when Tesseract is installed, gives the quarter turn
   (taken when its confidence reaches `min_osd_confidence` or it agrees with the profiles on sideways or
   not; an unsure OSD that disagrees with them leaves the page upright); without Tesseract an upside-down
   page rests on RapidOCR's per-line direction classifier (with
   it that classifier is off: it turns some long upright lines over). OSD reads a copy with its light
   evened (`even_light`: no dark table or shadow around the sheet). With RapidOCR every page is read as
   it stands first, and OSD is asked only when that reading is unsure (`_reads_upright`); the page is
   read again when OSD turns it. Then the
   skew: the angle within `max_skew_degrees` whose row profile of the ink is sharpest, corrected when at
   least `min_skew_degrees`.
4. Read with the engine under `timeout_s` (Tesseract: a subprocess, killed past it; RapidOCR: in process,
   its running onnxruntime session stopped past it, `jocr.lines.ocr_rapid`, reading a colour page in
   colour, and a space its word boxes show put back into a line's text, `jocr.lines.spacing`), drop words
   and lines under `min_confidence`. An engine past the limit gives no lines, verdict "too_large" and the
   note "<engine> ran past N s", like a page refused in step 1.
5. Map every box back to the original image's frame (the inverse of steps 2-3) and scale it to the page's
   units (`page_size`: points for a PDF page). A photographed sheet with background around it has its top
   and bottom in `stats["paper"]` (`paper_rows`), for the furniture bands (`jocr.layout.furniture`).

Never raises for a bad image or a failing engine: problems are the verdict ("none", "too_large",
"error") and the note.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter

from jocr.errors import one_line
from jocr.lines.ocr_rapid import RapidTimeout
from jocr.lines.ocr_rapid import available as rapid_available
from jocr.lines.ocr_rapid import read as rapid_read
from jocr.lines.ocr_tesseract import TesseractError, binary, installed_languages, orientation
from jocr.lines.ocr_tesseract import read as tesseract_read
from jocr.lines.spacing import as_printed
from jocr.lines.types import (
    ERROR,
    NONE,
    OK,
    RAPIDOCR,
    TESSERACT,
    TOO_LARGE,
    Line,
    PageLines,
    Word,
    empty_lines,
)

ENGINES = (RAPIDOCR, TESSERACT)
# "auto" takes the first installed engine in this order (docs/parsing.md, "OCR line source", measured):
# RapidOCR reads more characters right (Chinese above all: Tesseract's OSD misses Han on some pages, and it
# reads no handwriting); its row-by-row line order is no longer the page's reading order, which the rules
# over lines set (jocr.layout.line_rules). Tesseract is 4-5x cheaper and ~8x lighter to install.
AUTO_ORDER = (RAPIDOCR, TESSERACT)
OCR_MODES = ("auto", *ENGINES, "none")


# The detector's least shorter side for a table region drawn on a page (`jocr parse --task table
# --region`; a crop 150-400 px tall): RapidOCR's own 736 scales such a crop up 2-7 times, slower and read
# worse on the crop sets than 480. The page pass's padded crops keep the engine's own, which read them
# better on two of three page sets (docs/results/2026-12-08-crop-detection.md).
CROP_DET_MIN_SIDE = 480


@dataclass
class OCRLinesConfig:
    """How a page image is read by OCR (module docstring for each step)."""

    engine: str = "auto"  # "auto" (AUTO_ORDER's first installed), "rapidocr" or "tesseract"
    # Tesseract languages ("eng+chi_sim"), or "auto": English, plus Simplified Chinese when OSD says the
    # script is Han and the language is installed. RapidOCR's bundled recogniser reads both at once.
    languages: str = "auto"
    max_pixels: int = 8_000_000  # scaled down beyond (an A4 page at 300 dpi is 8.7 MP)
    max_input_pixels: int = 150_000_000  # refused beyond
    max_aspect: float = 12.0  # refused beyond (a 30,000 x 1,000 strip reads as nothing at page scale)
    min_side: int = 16  # refused below
    timeout_s: float = 120.0  # each engine call (Tesseract's OSD and read, RapidOCR's read), wall clock
    rapid_max_side: int = 2000  # RapidOCR scales the longest side to at most this
    # RapidOCR's detector scales a shorter side below this up to it; None: RapidOCR's own 736, which pages
    # keep (a small page's print needs it). A drawn table region's crop is read with CROP_DET_MIN_SIDE.
    rapid_det_min_side: int | None = None
    orient: bool = True
    min_osd_confidence: float = 2.0
    deskew: bool = True
    max_skew_degrees: float = 8.0
    min_skew_degrees: float = 0.3
    min_confidence: float = 0.3  # words and lines below it are dropped (noise reads at 0.0-0.3)


def normalise_ocr_mode(mode: str | None) -> str:
    """ "auto" (default), "rapidocr", "tesseract" or "none"; one-line ValueError otherwise."""
    value = "auto" if mode is None else str(mode).strip().lower()
    if value not in OCR_MODES:
        raise ValueError(f"ocr must be one of {', '.join(OCR_MODES)}, not {mode!r}")
    return value


def engine_available(name: str) -> bool:
    if name == TESSERACT:
        return binary() is not None
    if name == RAPIDOCR:
        return rapid_available()
    return False


def resolve_engine(mode: str) -> str | None:
    """The engine a mode reads with: the named one when installed, AUTO_ORDER's first installed for
    "auto", None for "none" or when none is installed."""
    mode = normalise_ocr_mode(mode)
    if mode == "none":
        return None
    if mode == "auto":
        return next((e for e in AUTO_ORDER if engine_available(e)), None)
    return mode if engine_available(mode) else None


# --- geometry: the page as read -> the original image ----------------------------------------------------


def _scale(sx: float, sy: float) -> np.ndarray:
    return np.array([[sx, 0, 0], [0, sy, 0], [0, 0, 1]], dtype=np.float64)


def _quarter_turn(turn: int, width: float, height: float) -> np.ndarray:
    """Original -> turned coordinates for a clockwise quarter `turn` of a width x height image."""
    if turn == 90:  # PIL ROTATE_270
        return np.array([[0, -1, height], [1, 0, 0], [0, 0, 1]], dtype=np.float64)
    if turn == 180:
        return np.array([[-1, 0, width], [0, -1, height], [0, 0, 1]], dtype=np.float64)
    if turn == 270:  # PIL ROTATE_90
        return np.array([[0, 1, 0], [-1, 0, width], [0, 0, 1]], dtype=np.float64)
    return np.eye(3)


_TRANSPOSE = {90: Image.Transpose.ROTATE_270, 180: Image.Transpose.ROTATE_180, 270: Image.Transpose.ROTATE_90}


def _rotation(degrees: float, width: int, height: int) -> tuple[np.ndarray, tuple[int, int]]:
    """Original -> rotated coordinates for a rotation that maps lines of slope tan(degrees) to level ones,
    about the centre, onto a canvas grown to hold the whole image; and that canvas's size."""
    a = np.deg2rad(degrees)
    c, s = np.cos(a), np.sin(a)
    new_w = int(np.ceil(abs(width * c) + abs(height * s)))
    new_h = int(np.ceil(abs(width * s) + abs(height * c)))
    to_centre = np.array([[1, 0, -width / 2], [0, 1, -height / 2], [0, 0, 1]], dtype=np.float64)
    rotate = np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]], dtype=np.float64)
    from_centre = np.array([[1, 0, new_w / 2], [0, 1, new_h / 2], [0, 0, 1]], dtype=np.float64)
    return from_centre @ rotate @ to_centre, (new_w, new_h)


def upright_size(turn: int, size: tuple):
    """(width, height) of a page of `size` once turned by `turn` degrees (clockwise quarters)."""
    return (size[1], size[0]) if turn in (90, 270) else tuple(size)


def upright_image(image: Image.Image, turn: int) -> Image.Image:
    """`image` turned clockwise by `turn` degrees (0, 90, 180, 270): a page OCR found turned (its lines'
    `stats["turn"]`) in the frame its lines are in."""
    return image.transpose(_TRANSPOSE[turn]) if turn in _TRANSPOSE else image


def _map_box(box, inverse: np.ndarray, bound: tuple[float, float]) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = box
    corners = np.array([[x0, x1, x1, x0], [y0, y0, y1, y1], [1, 1, 1, 1]], dtype=np.float64)
    xs, ys, _ = inverse @ corners
    w, h = bound
    return (
        float(np.clip(xs.min(), 0, w)),
        float(np.clip(ys.min(), 0, h)),
        float(np.clip(xs.max(), 0, w)),
        float(np.clip(ys.max(), 0, h)),
    )


# --- orientation and skew ---------------------------------------------------------------------------------


def _ink_points(grey: Image.Image, max_points: int = 60_000) -> np.ndarray | None:
    """(x, y) of dark pixels of a small copy of the page (longest side ~1000 px), or None for too few."""
    small = grey.copy()
    small.thumbnail((1000, 1000))
    a = np.asarray(small, dtype=np.float32)
    threshold = min(float(np.median(a)) - 40.0, 160.0)
    ys, xs = np.nonzero(a < threshold)
    if len(xs) < 200:
        return None
    if len(xs) > max_points:
        step = len(xs) // max_points + 1
        xs, ys = xs[::step], ys[::step]
    return np.stack([xs, ys]).astype(np.float64)


def _sharpness(points: np.ndarray, degrees: float, axis: int = 1) -> float:
    """How peaked the profile of `points` is across rows (axis 1) or columns (axis 0) after turning them
    by `degrees`: the sum of squared bin counts, high when ink gathers in lines with gaps between."""
    a = np.deg2rad(degrees)
    c, s = np.cos(a), np.sin(a)
    coord = -points[0] * s + points[1] * c if axis == 1 else points[0] * c + points[1] * s
    counts = np.bincount(np.round(coord - coord.min()).astype(np.int64))
    return float(np.square(counts, dtype=np.float64).sum())


def even_light(grey: Image.Image, step: int = 8) -> Image.Image:
    """`grey` divided by its local background, the brightest level within about `5 * step` pixels
    (taken on a copy `step` times smaller, then smoothed): uneven light, a shadow and the dark table
    around a photographed sheet turn white, strokes narrower than that stay dark. Tesseract's OSD
    binarises the whole image at one level; on photographs of upright Chinese pages the table around the
    sheet led it to a sure half turn."""
    small = grey.resize((max(1, grey.width // step), max(1, grey.height // step)), Image.Resampling.BOX)
    background = small.filter(ImageFilter.MaxFilter(5)).filter(ImageFilter.GaussianBlur(2))
    light = np.asarray(background.resize(grey.size, Image.Resampling.BILINEAR), dtype=np.float32)
    evened = np.asarray(grey, dtype=np.float32) / np.maximum(light, 1.0) * 255.0
    return Image.fromarray(np.clip(evened, 0, 255).astype(np.uint8))


def profile_turn(grey: Image.Image) -> int:
    """0 or 90 from projection profiles: 90 when the ink lines up in columns more than in rows (a page
    lying on its side). Cannot tell 0 from 180."""
    points = _ink_points(grey)
    if points is None:
        return 0
    return 90 if _sharpness(points, 0.0, axis=0) > 1.3 * _sharpness(points, 0.0, axis=1) else 0


def skew_angle(grey: Image.Image, max_degrees: float) -> float:
    """The angle (degrees) in [-max_degrees, max_degrees] that best levels the page's text lines: a coarse
    search in 0.5 degree steps, refined to 0.1 degree; 0.0 for a page with too little ink."""
    points = _ink_points(grey)
    if points is None:
        return 0.0
    coarse = np.arange(-max_degrees, max_degrees + 1e-9, 0.5)
    best = max(coarse, key=lambda d: _sharpness(points, d))
    fine = np.arange(best - 0.4, best + 0.41, 0.1)
    return float(round(max(fine, key=lambda d: _sharpness(points, d)), 2))


# --- reading ----------------------------------------------------------------------------------------------


PAPER_MIN_INSET = 0.03  # a sheet's edge this far in from the image's (a share of its height) is reported


def paper_rows(image: Image.Image) -> tuple[float, float] | None:
    """Where a photographed sheet lies in the image, (top, bottom) in the image's pixel rows, when it sits
    clearly inside the image (`PAPER_MIN_INSET`) with a darker background around it (a page on a table);
    None for a scan, whose sheet fills the image. A row is the sheet's when most of its pixels are brighter
    than halfway between the image's dark and light ends (text covers far less than half a row)."""
    grey = image.convert("L")
    scale = min(1.0, 256 / max(grey.size))
    if scale < 1.0:
        grey = grey.resize((max(1, round(grey.width * scale)), max(1, round(grey.height * scale))))
    pixels = np.asarray(grey, dtype=np.float32)
    dark, light = np.percentile(pixels, [5, 95])
    if light - dark < 60:  # no background darker than the paper to tell it from
        return None
    sheet = np.flatnonzero((pixels > (dark + light) / 2).mean(axis=1) > 0.5)
    if sheet.size == 0:
        return None
    rows = pixels.shape[0]
    top, bottom = sheet[0] / rows, (sheet[-1] + 1) / rows
    if top < PAPER_MIN_INSET and bottom > 1 - PAPER_MIN_INSET:
        return None
    return float(top * image.height), float(bottom * image.height)


def _refuse(image: Image.Image, config: OCRLinesConfig) -> str | None:
    w, h = image.size
    if min(w, h) < config.min_side:
        return f"the image is {w}x{h} pixels, too small to read"
    if w * h > config.max_input_pixels:
        return f"the image has {w * h / 1e6:.0f} MP, over the limit of {config.max_input_pixels / 1e6:.0f} MP"
    if max(w, h) / min(w, h) > config.max_aspect:
        return f"the image is {w}x{h} pixels, an aspect beyond {config.max_aspect:g}:1"
    return None


def _languages(config: OCRLinesConfig, script: str) -> str:
    if config.languages != "auto":
        return config.languages
    if script in ("Han", "HanS", "HanT") and "chi_sim" in _tesseract_languages():
        return "chi_sim+eng"
    return "eng"


_LANGS: set[str] | None = None


def _tesseract_languages() -> set[str]:
    global _LANGS
    if _LANGS is None:
        _LANGS = installed_languages()
    return _LANGS


def read_region(image: Image.Image, ocr: str = "auto", orient: bool = False,
                det_min_side: int | None = None) -> PageLines | None:  # fmt: skip
    """The OCR lines of a region cut from a page (boxes in its pixels) under an `--ocr` mode; None under
    "none" or without an engine. `orient` False: the region was cut from the page as shown, so it is
    upright and the orientation step is skipped (a slight skew is still corrected). `det_min_side`:
    RapidOCR's detector's least side (`OCRLinesConfig.rapid_det_min_side`; None: the engine's own)."""
    mode = normalise_ocr_mode(ocr)
    if mode == "none" or resolve_engine(mode) is None:
        return None
    return read_image(image, OCRLinesConfig(engine=mode, orient=orient, rapid_det_min_side=det_min_side))


def read_image(
    image: Image.Image,
    config: OCRLinesConfig | None = None,
    page_size: tuple[float, float] | None = None,
) -> PageLines:
    """The lines of a page image by OCR. Boxes are in the page's units: `page_size` (width, height), e.g.
    the PDF page in points the image was rendered from; the image's own pixels when None. A page found
    turned (`stats["turn"]`, a note) has its lines and size in its upright frame: the image turned by
    `upright_image`. Never raises."""
    config = config or OCRLinesConfig()
    start = time.perf_counter()
    width, height = image.size
    page_w, page_h = page_size or (float(width), float(height))
    try:
        engine = resolve_engine(config.engine)
    except ValueError as exc:
        return empty_lines(ERROR, str(exc), page_w, page_h, source=config.engine)
    if engine is None:
        return empty_lines(NONE, f"no OCR engine installed for {config.engine!r}", page_w, page_h, "none")
    refusal = _refuse(image, config)
    if refusal is not None:
        return empty_lines(TOO_LARGE, refusal, page_w, page_h, engine)
    try:
        lines, stats = _read(image, engine, config)
    except (TesseractError, RapidTimeout) as exc:
        verdict = TOO_LARGE if "ran past" in str(exc) else ERROR
        return empty_lines(verdict, str(exc), page_w, page_h, engine)
    except Exception as exc:  # an engine's own failure on a strange image fails this page's OCR only
        return empty_lines(ERROR, f"{engine} failed ({one_line(exc)})", page_w, page_h, engine)
    if lines is None:
        return empty_lines(NONE, "the image is blank", page_w, page_h, engine)
    if stats.get("turn"):  # the lines are in the page's upright frame (`upright_image`)
        width, height = upright_size(stats["turn"], (width, height))
        page_w, page_h = upright_size(stats["turn"], (page_w, page_h))
    sx, sy = page_w / width, page_h / height
    if (sx, sy) != (1.0, 1.0):
        lines = [_scaled(line, sx, sy) for line in lines]
    paper = paper_rows(image) if not stats.get("turn") else None
    if paper is not None:  # a photographed sheet: page furniture is looked for near its edges
        stats["paper"] = [round(paper[0] * sy, 2), round(paper[1] * sy, 2)]
    stats["seconds"] = round(time.perf_counter() - start, 3)
    stats["lines"] = len(lines)
    out = PageLines(width=page_w, height=page_h, lines=lines, source=engine, stats=stats)
    if not lines:
        out.verdict, out.note = NONE, f"{engine} found no text"
    else:
        out.verdict = OK
        turned = [f"turned {stats['turn']} degrees"] if stats.get("turn") else []
        skewed = [f"deskewed {stats['skew']:g} degrees"] if stats.get("skew") else []
        out.note = "; ".join(turned + skewed)
    return out


def _scaled(line: Line, sx: float, sy: float) -> Line:
    def box(b):
        return (b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy)

    words = None if line.words is None else [Word(w.text, box(w.box), w.confidence) for w in line.words]
    return Line(line.text, box(line.box), line.size * sy, line.weight, line.confidence, line.source, words)


def _levelled(image: Image.Image, size: tuple[int, int], inverse: np.ndarray) -> Image.Image:
    """`image` rotated by the affine map whose inverse is `inverse`, onto a white canvas of `size`."""
    white = 255 if image.mode == "L" else (255,) * len(image.getbands())
    return image.transform(
        size,
        Image.Transform.AFFINE,
        tuple(inverse[:2].flatten()),
        resample=Image.Resampling.BILINEAR,
        fillcolor=white,
    )


UPRIGHT_LINES = 3  # an upright reading is judged on this many lines at least
# RapidOCR reads upright print at a median confidence of 0.99-1.0 and the same pages turned upside down at
# 0.56-0.78 (21 development scans and photos, docs/results/2026-12-07-orientation.md)
UPRIGHT_CONFIDENCE = 0.9
UPRIGHT_LYING = 0.9  # the share of an upright reading's lines that are wider than tall, at least


def _reads_upright(lines: list[Line]) -> bool:
    """Whether RapidOCR's reading of a page as it stands is sure enough to call the page upright without
    Tesseract's orientation check: `UPRIGHT_LINES` lines at least, at a median confidence of
    `UPRIGHT_CONFIDENCE` (text upside down reads as low-confidence noise), nearly all of them wider than
    tall (RapidOCR turns a tall line's crop a quarter before reading it, so a page on its side can read
    sure: its lines stand up)."""
    confidences = [ln.confidence for ln in lines if ln.confidence is not None]
    lying = sum(ln.box[2] - ln.box[0] >= ln.box[3] - ln.box[1] for ln in lines)
    return (
        len(confidences) >= UPRIGHT_LINES
        and float(np.median(confidences)) >= UPRIGHT_CONFIDENCE
        and lying >= UPRIGHT_LYING * len(lines)
    )


def _osd_turn(grey: Image.Image, sideways: bool, config: OCRLinesConfig):
    """(turn, OSD result): Tesseract's OSD answer when it is sure, or when it agrees with the profiles on
    sideways or not; the profiles cannot tell upright from upside down, so a half turn needs OSD to be
    sure (an unsure 180 turned a handwritten note over). Where they disagree and OSD is unsure the page
    stays upright: the profiles call a photographed sheet sideways when the dark table around it runs
    down its sides (10 of 14 upright development photographs)."""
    osd = orientation(even_light(grey), config.timeout_s)
    agrees = sideways == (osd.turn in (90, 270)) and osd.turn != 180 if osd is not None else False
    sure = osd is not None and osd.confidence >= config.min_osd_confidence
    return (osd.turn if sure or agrees else 0), osd


def _prepared(grey, colour, forward, turn: int, config: OCRLinesConfig):
    """The page turned by `turn` and levelled (`deskew`): (grey, colour, forward transform, stats)."""
    done: dict = {}
    if turn:
        forward = _quarter_turn(turn, *grey.size) @ forward
        grey = grey.transpose(_TRANSPOSE[turn])
        colour = colour and colour.transpose(_TRANSPOSE[turn])
        done["turn"] = turn
    if config.deskew:
        angle = skew_angle(grey, config.max_skew_degrees)
        if abs(angle) >= config.min_skew_degrees:
            rotation, size = _rotation(angle, *grey.size)
            inverse = np.linalg.inv(rotation)
            grey = _levelled(grey, size, inverse)
            colour = colour and _levelled(colour, size, inverse)
            forward = rotation @ forward
            done["skew"] = angle
    return grey, colour, forward, done


def _engine_lines(prepared, engine: str, config: OCRLinesConfig, osd, settled: bool | None) -> list[Line]:
    """The engine's lines of a prepared page; RapidOCR's own line-direction classifier runs only where no
    orientation was decided here (`settled` False). Tesseract's languages go into the prepared page's
    stats (`_prepared`), with what was done to it."""
    grey, colour, _, done = prepared
    if engine == TESSERACT:
        languages = done["languages"] = _languages(config, osd.script if osd else "")
        return tesseract_read(grey, languages, config.timeout_s, config.min_confidence)
    page = grey if colour is None else colour
    return rapid_read(page, config.rapid_max_side, config.min_confidence, settled is False, config.timeout_s,
                      config.rapid_det_min_side)  # fmt: skip


def _read(image: Image.Image, engine: str, config: OCRLinesConfig) -> tuple[list[Line] | None, dict]:
    """Lines in the original image's pixel frame (None for a blank page), and what was done."""
    from jocr.documents.preprocess import is_blank_page

    width, height = image.size
    grey = image.convert("L") if image.mode != "L" else image
    if is_blank_page(grey):
        return None, {}
    # RapidOCR reads a colour page in colour, turned and levelled as the grey copy is: its models read
    # colour, and the grey copy lost lone section numbers and spaces that the colour one kept on the
    # development photographs (docs/results/2026-12-06-photos-en.md); Tesseract binarises grey itself.
    colour = image.convert("RGB") if engine == RAPIDOCR and Image.getmodebase(image.mode) == "RGB" else None
    stats: dict = {"engine": engine}
    forward = np.eye(3)
    scale = min(1.0, (config.max_pixels / (width * height)) ** 0.5)
    if scale < 1.0:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        grey = grey.resize(size, Image.Resampling.LANCZOS)
        colour = colour and colour.resize(size, Image.Resampling.LANCZOS)
        forward = _scale(size[0] / width, size[1] / height) @ forward
        stats["scale"] = round(scale, 4)
    osd = None
    turn = 0
    # True: the orientation was decided here with Tesseract's OSD; None: by RapidOCR's reading of the page
    # as it stands, OSD only where that is unsure; False: left to RapidOCR's line-direction classifier (no
    # Tesseract), the profiles' quarter turn taken
    settled: bool | None = False
    if config.orient:
        sideways = profile_turn(grey) == 90
        turn = 90 if sideways else 0
        if binary() is not None and engine == TESSERACT:
            turn, osd = _osd_turn(grey, sideways, config)
            settled = True
        elif binary() is not None:
            turn, settled = 0, None  # as it stands unless RapidOCR's reading so is unsure (`_reads_upright`)
    prepared = _prepared(grey, colour, forward, turn, config)
    lines = _engine_lines(prepared, engine, config, osd, settled)
    if settled is None and not _reads_upright(lines):
        turn, osd = _osd_turn(grey, sideways, config)
        if turn:
            prepared = _prepared(grey, colour, forward, turn, config)
            lines = _engine_lines(prepared, engine, config, osd, True)
    grey, colour, forward, done = prepared
    stats.update(done)
    lines = [as_printed(ln) for ln in lines]  # spaces and Chinese punctuation a recogniser left out
    lines = [ln for ln in lines if ln.confidence is None or ln.confidence >= config.min_confidence]
    # back to the original pixels, and for a turned page on to the page turned upright (`upright_image`):
    # its lines are read, ordered and drawn in the frame a reader sees them in
    inverse = np.linalg.inv(forward)
    bound = (float(width), float(height))
    if stats.get("turn"):
        inverse = _quarter_turn(stats["turn"], width, height) @ inverse
        bound = upright_size(stats["turn"], bound)
    out = []
    for line in lines:
        words = None
        if line.words is not None:
            words = [Word(w.text, _map_box(w.box, inverse, bound), w.confidence) for w in line.words]
        box = _map_box(line.box, inverse, bound)
        size = line.size / scale
        out.append(Line(line.text, box, size, 0, line.confidence, line.source, words))
    return out, stats
