"""RapidOCR's readings kept on disk, so `jocr parse` on the same scans and photographs is scored twice
(two code versions, or a rerun) without running the engine again: `use_ocr_cache(folder)` wraps the engine
call that `jocr.lines.ocr.read_image` makes (`jocr.lines.ocr_rapid.read`) for this process.

Each call is keyed by the image it is given (its mode, size and pixels, after read_image has scaled, turned
and deskewed it) and its arguments; a call seen before is answered from `folder/<key>.json`, any other runs
the engine and is written there. The engine gives the same lines for the same pixels, so a cached reading
is the one the engine would give; a change to what read_image does before the engine (another scale or
deskew angle) gives other pixels and misses the cache. Used by `benchmarks/accuracy.py --suite real
--ocr-cache DIR`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from jocr.lines.types import Line, Word

RAPID_DET_MIN_SIDE = 736  # RapidOCR's own Det.limit_side_len: what a call without det_min_side used


def call_key(image, max_side: int, min_word_confidence: float, use_cls: bool, det_min_side=None) -> str:
    """The key of one reading. The detector scales an image only when its shorter side is below
    `det_min_side`, so an image at least as large as both that and RapidOCR's own limit reads the same
    under either, and keeps the key it had before `det_min_side` was passed (so do calls without it). The
    shorter side is taken as the detector gets it: after RapidOCR scales the longest side to `max_side`,
    less 32 for its rounding."""
    shorter = min(image.size) * min(1.0, max_side / max(image.size)) - 32
    same = det_min_side is None or shorter >= max(det_min_side, RAPID_DET_MIN_SIDE)
    extra = "" if same else f"|det{det_min_side}"
    digest = hashlib.sha256(
        f"{image.mode}|{image.size}|{max_side}|{min_word_confidence}|{use_cls}{extra}".encode()
    )
    digest.update(image.tobytes())
    return digest.hexdigest()[:32]


def _line_record(line: Line) -> dict:
    words = None if line.words is None else [[w.text, list(w.box), w.confidence] for w in line.words]
    return {
        "text": line.text,
        "box": list(line.box),
        "size": line.size,
        "weight": line.weight,
        "confidence": line.confidence,
        "source": line.source,
        "words": words,
    }


def _line(record: dict) -> Line:
    words = record["words"]
    return Line(
        record["text"],
        tuple(record["box"]),
        record["size"],
        record["weight"],
        record["confidence"],
        record["source"],
        None if words is None else [Word(t, tuple(b), c) for t, b, c in words],
    )


def cached_read(read, folder: Path):
    """`read` (the signature of `jocr.lines.ocr_rapid.read`) answered from `folder` where it can be."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    def wrapped(image, max_side, min_word_confidence, use_cls, timeout_s=None, det_min_side=None):
        # the time limit is not in the key: a reading that ends within it is the same reading
        path = folder / f"{call_key(image, max_side, min_word_confidence, use_cls, det_min_side)}.json"
        if path.is_file():
            return [_line(r) for r in json.loads(path.read_text(encoding="utf-8"))]
        if det_min_side is None:  # a jocr that does not pass it
            lines = read(image, max_side, min_word_confidence, use_cls, timeout_s)
        else:
            lines = read(image, max_side, min_word_confidence, use_cls, timeout_s, det_min_side)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps([_line_record(ln) for ln in lines], ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
        return lines

    return wrapped


def use_ocr_cache(folder: Path) -> None:
    """Every RapidOCR reading by `jocr.lines.ocr.read_image` in this process goes through `folder`."""
    import jocr.lines.ocr as ocr

    ocr.rapid_read = cached_read(ocr.rapid_read, folder)
