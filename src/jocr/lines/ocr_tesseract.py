"""Tesseract 5 through its command line: lines and words from its TSV output, and the page's orientation and
script from its OSD (`--psm 0`). Every call runs a subprocess with a time limit, one thread per call
(OMP_THREAD_LIMIT=1: Tesseract's OpenMP threads slow it down on a shared machine), the image on stdin.

Coordinates are pixels of the image handed in; `jocr.lines.ocr` maps them back to the page.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from PIL import Image

from jocr.cjk import CJK_CHAR
from jocr.lines.types import TESSERACT, Line, Word

# Tesseract's word confidences are 0-100; -1 marks a block/line row without text.
_OSD_ROTATE = re.compile(r"Rotate:\s*(\d+)")
_OSD_CONFIDENCE = re.compile(r"Orientation confidence:\s*([0-9.]+)")
_OSD_SCRIPT = re.compile(r"Script:\s*(\S+)")


class TesseractError(RuntimeError):
    """Tesseract failed or ran past its time limit; the message is one line."""


def binary() -> str | None:
    return shutil.which("tesseract")


def installed_languages() -> set[str]:
    exe = binary()
    if exe is None:
        return set()
    try:
        proc = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return set()
    return {ln.strip() for ln in proc.stdout.splitlines()[1:] if ln.strip()}


def _run(args: list[str], image: Image.Image, timeout: float) -> str:
    exe = binary()
    if exe is None:
        raise TesseractError("tesseract is not installed")
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    try:
        proc = subprocess.run(
            [exe, "stdin", "stdout", *args],
            input=buf.getvalue(),
            capture_output=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        raise TesseractError(f"tesseract ran past {timeout:g} s") from exc
    except OSError as exc:
        raise TesseractError(f"cannot run tesseract ({exc})") from exc
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise TesseractError(f"tesseract failed ({err[-1] if err else f'exit {proc.returncode}'})")
    return proc.stdout.decode("utf-8", "replace")


@dataclass
class Orientation:
    """Tesseract OSD's answer: `turn`, the clockwise quarter turn (0, 90, 180, 270) that sets the page
    upright; `confidence` its orientation confidence (Tesseract's scale, ~2+ is reliable); `script` e.g.
    Latin, Han."""

    turn: int
    confidence: float
    script: str


def orientation(image: Image.Image, timeout: float) -> Orientation | None:
    """The page's orientation and script, None when OSD finds too little text to say."""
    try:
        out = _run(["--psm", "0"], image, timeout)
    except TesseractError:
        return None  # "Too few characters": a page OSD cannot judge is read as it is
    rotate, conf, script = _OSD_ROTATE.search(out), _OSD_CONFIDENCE.search(out), _OSD_SCRIPT.search(out)
    if rotate is None:
        return None
    return Orientation(
        turn=int(rotate.group(1)) % 360,
        confidence=float(conf.group(1)) if conf else 0.0,
        script=script.group(1) if script else "",
    )


def join_words(words: list[str]) -> str:
    """Words joined by spaces, except between two CJK characters (Tesseract splits Chinese per character)."""
    out = ""
    for word in words:
        if out and not (CJK_CHAR.match(out[-1]) and CJK_CHAR.match(word[0])):
            out += " "
        out += word
    return out


def read(image: Image.Image, languages: str, timeout: float, min_word_confidence: float) -> list[Line]:
    """The lines of `image` (its own pixel frame) in Tesseract's reading order; words under
    `min_word_confidence` (0-1) are dropped. Raises TesseractError."""
    out = _run(["-l", languages, "--psm", "3", "tsv"], image, timeout)
    groups: dict[tuple[str, str, str, str], list[Word]] = {}
    for row in out.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5":
            continue
        text = cols[11].strip()
        try:
            left, top, width, height = (int(v) for v in cols[6:10])
            conf = float(cols[10]) / 100.0
        except ValueError:
            continue
        if not text or conf < min_word_confidence:
            continue
        key = (cols[1], cols[2], cols[3], cols[4])  # page, block, paragraph, line
        groups.setdefault(key, []).append(Word(text, (left, top, left + width, top + height), conf))
    lines = []
    for words in groups.values():
        box = (
            min(w.box[0] for w in words),
            min(w.box[1] for w in words),
            max(w.box[2] for w in words),
            max(w.box[3] for w in words),
        )
        confidence = sum(w.confidence for w in words) / len(words)
        text = join_words([w.text for w in words])
        lines.append(Line(text, box, float(box[3] - box[1]), 0, confidence, source=TESSERACT, words=words))
    return lines
