"""OCR engines the benchmarks compare jocr with, and the line source read alone: one place for each.

- `tesseract_text(image, langs)`: the Tesseract CLI (one thread, `OMP_THREAD_LIMIT=1`) on a page image.
- `rapidocr_lines(image, words=False)`: RapidOCR's lines with their boxes (pixels), in the engine's order
  (top to bottom), with `words` each line's word boxes too (rapidocr 3.x); `rapidocr_text` joins them one a
  line. Either RapidOCR package works: `rapidocr` (3.x, models shipped in
  the wheel) or the older `rapidocr_onnxruntime`.
- `layer_text(layer, ...)`: a PDF page's text layer through the page assembly rules and no model, its runs
  cut into the anchor's windows and put through `jocr.layout.request.page_text` as if the model had named
  none of them and run out of room (every run an unread run, one a line, page furniture dropped, words
  broken across lines joined): the control the anchored model must beat. (The OCR'd pages' control,
  jocr's own line source through the rules, is `accuracy_sets._ocr_lines_text`.)
- `ocr_tree(image, lines)`: RapidOCR's lines through the rules over lines (`jocr.layout.line_rules`), for
  the benchmarks that read an image's lines as the engine gives them.

OCR lines come from `ocr_layer`: RapidOCR's boxes as `PageLines` in pixels, read as the engine reads the
page (no turning or deskewing: `jocr.lines.ocr.read_image` does those for `jocr parse`).

Engines are benchmark-only extras: `apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim`,
`pip install rapidocr onnxruntime`; a missing engine raises `ImportError` / `FileNotFoundError`, which the
benchmarks report as "not available".
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
from functools import lru_cache

from PIL import Image


def tesseract_languages() -> set[str]:
    if shutil.which("tesseract") is None:
        raise FileNotFoundError("tesseract is not installed")
    out = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True).stdout
    return {line.strip() for line in out.splitlines()[1:] if line.strip()}


def tesseract_text(image: Image.Image, langs: str = "eng") -> str:
    """Tesseract's text for a page image, one thread; `langs` like "eng" or "chi_sim+eng"."""
    if shutil.which("tesseract") is None:
        raise FileNotFoundError("tesseract is not installed")
    buf = io.BytesIO()
    image.convert("RGB").save(buf, "PNG")
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    proc = subprocess.run(
        ["tesseract", "-", "-", "-l", langs], input=buf.getvalue(), capture_output=True, env=env
    )
    return proc.stdout.decode("utf-8", errors="replace")


@lru_cache(maxsize=1)
def _rapidocr_engine():
    try:
        from rapidocr import RapidOCR

        engine = "v3", RapidOCR()
    except ImportError:
        from rapidocr_onnxruntime import RapidOCR  # the 1.x package; ImportError when neither is there

        engine = "v1", RapidOCR()
    logging.getLogger("RapidOCR").setLevel(logging.ERROR)  # its INFO lines name model files per call
    return engine


def rapidocr_lines(image: Image.Image, words: bool = False) -> list[tuple]:
    """RapidOCR's text lines with axis-aligned boxes (x0, y0, x1, y1) in pixels, in its reading order;
    with `words` (rapidocr 3.x), each line's word boxes as a third item: [(text, box), ...]."""
    import numpy as np

    from jocr.lines.ocr_rapid import axis_box

    kind, engine = _rapidocr_engine()
    pixels = np.asarray(image.convert("RGB"))
    word_results = None
    if kind == "v3":
        out = engine(pixels, return_word_box=True) if words else engine(pixels)
        texts, boxes = list(out.txts or ()), list(out.boxes if out.boxes is not None else ())
        if words and len(out.word_results or ()) == len(texts):
            word_results = out.word_results
    else:
        result, _ = engine(pixels)
        texts = [r[1] for r in result or ()]
        boxes = [r[0] for r in result or ()]
    lines = []
    for i, (text, quad) in enumerate(zip(texts, boxes)):
        line = (text, axis_box(quad))
        if words:
            items = word_results[i] if word_results is not None else ()
            kept = [w for w in items if len(w) > 2 and str(w[0]).strip()]
            line += ([(str(w[0]).strip(), axis_box(w[2])) for w in kept],)
        lines.append(line)
    return lines


def rapidocr_text(image: Image.Image) -> str:
    return "\n".join(text for text, _ in rapidocr_lines(image))


def ocr_layer(image: Image.Image, lines=None):
    """RapidOCR's lines of a page image as `jocr.lines.types.PageLines` (verdict ok when any line was found),
    boxes in pixels, each line's size its box's height, in the engine's order, their text spaced as
    `jocr.lines.ocr` writes it (`spacing.as_printed`); `lines`, if already read
    (`rapidocr_lines`, with or without word boxes), saves reading the page twice."""
    from jocr.lines.ocr import paper_rows
    from jocr.lines.spacing import as_printed
    from jocr.lines.types import NONE, OK, RAPIDOCR, Line, PageLines

    lines = rapidocr_lines(image) if lines is None else lines
    width, height = image.size
    runs = [
        as_printed(
            Line(line[0], tuple(line[1]), line[1][3] - line[1][1], 0, None, RAPIDOCR, words=_words(line))
        )
        for line in lines
        if line[0].strip()
    ]
    if not runs:
        return PageLines(float(width), float(height), [], NONE, "OCR found no text", RAPIDOCR)
    paper = paper_rows(image)  # a photographed sheet: furniture bands from its edges, as in jocr.lines.ocr
    stats = {"paper": list(paper)} if paper is not None else {}
    return PageLines(float(width), float(height), runs, OK, "", RAPIDOCR, stats)


def _words(line) -> list | None:
    """A cached line's word boxes (`rapidocr_lines(..., words=True)`) as `jocr.lines.types.Word`s."""
    from jocr.lines.types import Word

    if len(line) < 3 or not line[2]:
        return None
    return [Word(text, tuple(box)) for text, box in line[2]]


def layer_text(layer, tokenizer, max_tokens: int) -> str:
    """A layer's runs through the page assembly rules, no model: every run an unread run of its window."""
    from jocr.layout.request import page_text
    from jocr.lines.anchor import build_windows

    if not layer.usable or not layer.lines:
        return ""
    windows = build_windows(layer, tokenizer, max_tokens)
    anchors = [w.text for w in windows]
    return page_text([""] * len(anchors), anchors, ["length"] * len(anchors))


def ocr_tree(image: Image.Image, lines=None):
    """The document tree of a page image from its OCR lines by the rules over lines
    (`jocr.layout.line_rules`, as `jocr parse` reads an OCR'd page alone), boxes in the image's pixels;
    None when OCR found nothing."""
    from jocr.layout.line_rules import lines_tree

    layer = ocr_layer(image, lines)
    if not layer.usable or not layer.lines:
        return None
    paper = layer.stats.get("paper")
    return lines_tree(layer.lines, layer.width, layer.height, unit="px", source=layer.source, paper=paper)
