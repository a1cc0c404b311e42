"""RapidOCR (PP-OCR detection, direction classifier and recognition as ONNX models, run by onnxruntime):
lines and word boxes. The `rapidocr` wheel ships its default models (PP-OCR det/rec "small" and the
mobile direction classifier, Chinese + English in one recogniser), so nothing is fetched at run time.

The engine runs in-process; its work is bounded by the image size (RapidOCR scales the longest side to at
most `max_side` pixels before detection) and its detector's candidate limit. Coordinates are pixels of the
image handed in; `jocr.lines.ocr` maps them back to the page.
"""

from __future__ import annotations

import threading

import numpy as np
from PIL import Image

from jocr.lines.types import RAPIDOCR, Line, Word

_ENGINES: dict[tuple[int, bool], object] = {}
_LOCK = threading.Lock()  # one page at a time per process: onnxruntime already uses every core


def available() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import rapidocr  # noqa: F401
    except ImportError:
        return False
    return True


def _engine(max_side: int, use_cls: bool):
    engine = _ENGINES.get((max_side, use_cls))
    if engine is None:
        from rapidocr import RapidOCR

        engine = _ENGINES[(max_side, use_cls)] = RapidOCR(
            params={"Global.log_level": "error", "Global.max_side_len": max_side, "Global.use_cls": use_cls}
        )
    return engine


def _aabb(quad) -> tuple[float, float, float, float]:
    pts = np.asarray(quad, dtype=np.float64).reshape(-1, 2)
    return (float(pts[:, 0].min()), float(pts[:, 1].min()), float(pts[:, 0].max()), float(pts[:, 1].max()))


def read(image: Image.Image, max_side: int, min_word_confidence: float, use_cls: bool) -> list[Line]:
    """The lines of `image` (its own pixel frame) in RapidOCR's order (top to bottom, left to right).

    `use_cls`: turn lines its direction classifier calls upside down. Only for a page whose orientation
    was not settled before: on upright pages the classifier turns some long lines over (a clean manual
    page at 150 dpi: 86.8% of characters right with it, 96.6% without)."""
    array = np.asarray(image.convert("RGB"))
    with _LOCK:
        result = _engine(max_side, use_cls)(array, return_word_box=True)
    boxes, texts, scores = result.boxes, result.txts, result.scores
    if boxes is None or texts is None or scores is None:
        return []
    word_results = result.word_results if len(result.word_results or ()) == len(texts) else None
    lines = []
    for i, (quad, text, score) in enumerate(zip(boxes, texts, scores)):
        text = " ".join(str(text).split())
        if not text:
            continue
        box = _aabb(quad)
        words = []
        for item in word_results[i] if word_results is not None else ():
            word_text, word_score, word_quad = item[0], item[1], item[2] if len(item) > 2 else None
            word_text = str(word_text).strip()
            if word_text and word_quad is not None and float(word_score) >= min_word_confidence:
                words.append(Word(word_text, _aabb(word_quad), float(word_score)))
        if not words:
            words = [Word(text, box, float(score))]
        lines.append(Line(text, box, box[3] - box[1], 0, float(score), source=RAPIDOCR, words=words))
    return lines
