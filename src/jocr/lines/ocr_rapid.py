"""RapidOCR (PP-OCR detection, direction classifier and recognition as ONNX models, run by onnxruntime):
lines and word boxes. The `rapidocr` wheel ships its default models (PP-OCR det/rec "small" and the
mobile direction classifier, Chinese + English in one recogniser), so nothing is fetched at run time.

The engine runs in-process; its work is bounded by the image size (RapidOCR scales the longest side to at
most `max_side` pixels before detection; its detector then scales the shorter side up to at least
`det_min_side`), its detector's candidate limit and a wall-clock limit
(`_bounded`: past it the running onnxruntime session is told to stop, and `RapidTimeout` is raised).
Coordinates are pixels of the image handed in; `jocr.lines.ocr` maps them back to the page.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from PIL import Image

from jocr.lines.types import RAPIDOCR, Line, Word

_ENGINES: dict[tuple[int, bool, int | None], object] = {}
_LOCK = threading.Lock()  # one page at a time per process: onnxruntime already uses every core


def available() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import rapidocr  # noqa: F401
    except ImportError:
        return False
    return True


def _engine(max_side: int, use_cls: bool, det_min_side: int | None = None):
    """One engine per settings, kept for the process. `det_min_side` None: RapidOCR's own (736)."""
    key = (max_side, use_cls, det_min_side)
    engine = _ENGINES.get(key)
    if engine is None:
        from rapidocr import RapidOCR

        params = {"Global.log_level": "error", "Global.max_side_len": max_side, "Global.use_cls": use_cls}
        if det_min_side is not None:
            params["Det.limit_side_len"] = det_min_side  # with its limit_type "min": the shorter side
        engine = _ENGINES[key] = RapidOCR(params=params)
    return engine


class RapidTimeout(RuntimeError):
    """RapidOCR ran past its time limit; the message is one line."""


class _Deadline:
    """A wall-clock limit on one read. Each onnxruntime run (detection, direction classifier, a batch of
    recognised lines) starts only before the limit, with its own `RunOptions`; a timer sets the running
    one's `terminate` flag when the limit passes, so onnxruntime stops it at its next operator and the read
    leaves nothing running behind (the timer's thread ends with the read)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.expired = False
        self._lock = threading.Lock()
        self._running = None  # the RunOptions of the run in progress
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        self._timer.join()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._running is not None:
                self._running.terminate = True

    def run(self, session, output_names, feeds):
        from onnxruntime import RunOptions

        options = RunOptions()
        with self._lock:
            if self.expired or time.monotonic() >= self.end:
                self.expired = True
                raise RapidTimeout(self.note)
            self._running = options
        try:
            return session.run(output_names, feeds, options)
        finally:
            with self._lock:
                self._running = None

    @property
    def note(self) -> str:
        return f"rapidocr ran past {self.seconds:g} s"


class _TimedSession:
    """An onnxruntime session whose runs go through the read's `_Deadline` while one is set."""

    def __init__(self, session):
        self._session = session
        self.deadline: _Deadline | None = None

    def run(self, output_names, feeds, run_options=None):
        if self.deadline is None:
            return self._session.run(output_names, feeds, run_options)
        return self.deadline.run(self._session, output_names, feeds)

    def __getattr__(self, name):
        return getattr(self._session, name)


def _timed_sessions(engine) -> list[_TimedSession]:
    """The engine's stage sessions (loaded now; RapidOCR loads them on first use), each wrapped once."""
    stages = [engine._load_det_model(), engine._load_rec_model()]
    if engine.use_cls:
        stages.append(engine._load_cls_model())
    out = []
    for stage in stages:
        infer = stage.session  # rapidocr's OrtInferSession; its `session` is onnxruntime's
        if not isinstance(infer.session, _TimedSession):
            infer.session = _TimedSession(infer.session)
        out.append(infer.session)
    return out


def _bounded(engine, array: np.ndarray, timeout_s: float | None):
    """RapidOCR's result for `array`, or `RapidTimeout` once the read has taken `timeout_s` seconds (None:
    no limit). A run stopped by the limit fails inside RapidOCR, which may wrap or swallow the error: the
    deadline, not the error, says what happened."""
    if timeout_s is None:
        return engine(array, return_word_box=True)
    sessions = _timed_sessions(engine)
    with _Deadline(timeout_s) as deadline:
        for session in sessions:
            session.deadline = deadline
        try:
            result = engine(array, return_word_box=True)
        except Exception:
            if deadline.expired:
                raise RapidTimeout(deadline.note) from None
            raise
        finally:
            for session in sessions:
                session.deadline = None
    if deadline.expired:
        raise RapidTimeout(deadline.note)
    return result


def axis_box(quad) -> tuple[float, float, float, float]:
    """The axis-aligned box (x0, y0, x1, y1) of a quadrilateral's corner points, as RapidOCR gives boxes."""
    pts = np.asarray(quad, dtype=np.float64).reshape(-1, 2)
    return (float(pts[:, 0].min()), float(pts[:, 1].min()), float(pts[:, 0].max()), float(pts[:, 1].max()))


def read(
    image: Image.Image,
    max_side: int,
    min_word_confidence: float,
    use_cls: bool,
    timeout_s: float | None = None,
    det_min_side: int | None = None,
) -> list[Line]:
    """The lines of `image` (its own pixel frame) in RapidOCR's order (top to bottom, left to right).

    `use_cls`: turn lines its direction classifier calls upside down. Only for a page whose orientation
    was not settled before: on upright pages the classifier turns some long lines over (a clean manual
    page at 150 dpi: 86.8% of characters right with it, 96.6% without). `timeout_s`: `RapidTimeout` past
    it (`_bounded`). `det_min_side`: the detector scales an image whose shorter side is below it up to it
    (None: RapidOCR's own 736; `jocr.lines.ocr.OCRLinesConfig.rapid_det_min_side`)."""
    array = np.asarray(image.convert("RGB"))
    with _LOCK:
        result = _bounded(_engine(max_side, use_cls, det_min_side), array, timeout_s)
    boxes, texts, scores = result.boxes, result.txts, result.scores
    if boxes is None or texts is None or scores is None:
        return []
    word_results = result.word_results if len(result.word_results or ()) == len(texts) else None
    lines = []
    for i, (quad, text, score) in enumerate(zip(boxes, texts, scores)):
        text = " ".join(str(text).split())
        if not text:
            continue
        box = axis_box(quad)
        words = []
        for item in word_results[i] if word_results is not None else ():
            word_text, word_score, word_quad = item[0], item[1], item[2] if len(item) > 2 else None
            word_text = str(word_text).strip()
            if word_text and word_quad is not None and float(word_score) >= min_word_confidence:
                words.append(Word(word_text, axis_box(word_quad), float(word_score)))
        if not words:
            words = [Word(text, box, float(score))]
        lines.append(Line(text, box, box[3] - box[1], 0, float(score), source=RAPIDOCR, words=words))
    return lines
