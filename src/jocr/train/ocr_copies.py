"""Training pages for the anchored member on OCR anchors: the vector pages printed to pixels, degraded as
scans and phone photographs, read by an OCR engine, and their ground truth in reference form.

`jocr synth DIR --ocr-copies N` writes, for the first N vector pages of DIR (`pdfs/`, `gt/`), one copy each
in `DIR/ocr/`: `<stem>.jpg` (the degraded page image as `jocr parse` would be given it) and `<stem>.json`
(`{"variant", "degrade", "lines"}`, `lines` the engine's `PageLines.to_dict()`). OCR is the slow step
(RapidOCR: ~10 CPU-s a page on this machine's class of CPU), so it runs once, here, and training reads
the cached lines; copies already written are kept, so a stopped run resumes.

The target (`ocr_reference_form`): the page's Markdown with each OCR run that the Markdown holds, up to
OCR's errors, replaced by its reference `@i`. The reference resolves to the run's text as OCR read it, so
the model learns to point at runs and to type what OCR lost; text-layer pages keep their exact-match
targets (`jocr.lines.anchor.reference_target`).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from jocr.lines.types import PageLines

OCR_DIR = "ocr"
# A run replaces a stretch of the Markdown when their similarity (rapidfuzz's ratio, 0-100, over the
# stretch snapped to word boundaries) reaches this; below it the run's text is left for the model to type.
MIN_RATIO = 85.0
# Runs shorter than this (a unit, a single CJK character of vertical text) are placed only where the page
# holds them exactly and once: a short fuzzy match is a guess.
MIN_FUZZY_CHARS = 4
_TAG = re.compile(r"<[^<>\n]*>")


def _joined(a: str, b: str) -> bool:
    """Whether two neighbouring characters belong to one word: both letters or digits, and not CJK (whose
    words are not separated by spaces, so a word boundary cannot be told from the characters)."""
    return a.isalnum() and b.isalnum() and ord(a) < 0x2E80 and ord(b) < 0x2E80


@dataclass(frozen=True)
class OCRCopy:
    """One cached OCR copy of a vector page: its image file, the page's lines, and how it was degraded."""

    image: Path
    lines: PageLines
    variant: str  # "scan" or "photo"


def copy_paths(vector_dir: Path, stem: str) -> tuple[Path, Path]:
    """(image, lines JSON) of a vector page's OCR copy."""
    folder = Path(vector_dir) / OCR_DIR
    return folder / f"{stem}.jpg", folder / f"{stem}.json"


def make_copy(pdf: Path, seed: int):
    """A vector page printed and degraded (a scan for even seeds, a photograph for odd), at 0.7-1.3 times
    the resolution `jocr parse` renders PDFs at; returns (image, variant, degradation log). The image does
    not depend on the OCR engine that reads it (`write_ocr_copies`), so copies read by different engines
    are the same pixels."""
    from PIL import Image

    from jocr.documents.pages import LoadOptions, open_source
    from jocr.synth.degrade import degrade, photograph

    rng = random.Random(f"ocr-copy/{pdf.stem}/{seed}")
    with open_source(str(pdf), LoadOptions()) as source:
        image = source.render(0)
    scale = rng.uniform(0.7, 1.3)
    image = image.resize(
        (max(1, round(image.width * scale)), max(1, round(image.height * scale))), Image.LANCZOS
    )
    if seed % 2 == 0:
        out, log = degrade(image, rng.uniform(0.2, 0.7), rng)
        variant = "scan"
    else:
        out, log = photograph(image, rng.uniform(0.3, 0.8), rng)
        variant = "photo"
    log["scale"] = round(scale, 3)
    return out, variant, log


def write_ocr_copies(vector_dir: str | Path, pages: int, engine: str = "rapidocr", log=None) -> int:
    """Write the OCR copies of the first `pages` vector pages of `vector_dir` that are not there yet;
    returns how many were written. `log(message)` hears of each page."""
    from jocr.lines.ocr import OCRLinesConfig, read_image

    root = Path(vector_dir)
    pdfs = sorted((root / "pdfs").glob("*.pdf"))[:pages]
    if not pdfs:
        raise ValueError(f"{root} holds no pdfs/*.pdf (jocr synth {root} --profile vector)")
    (root / OCR_DIR).mkdir(exist_ok=True)
    config = OCRLinesConfig(engine=engine)
    written = 0
    for k, pdf in enumerate(pdfs):
        image_path, lines_path = copy_paths(root, pdf.stem)
        if lines_path.exists():
            continue
        image, variant, degraded = make_copy(pdf, k)
        lines = read_image(image, config)
        image.save(image_path, quality=85)
        record = {"variant": variant, "degrade": degraded, "lines": lines.to_dict()}
        tmp = lines_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
        tmp.replace(lines_path)  # the JSON is the copy's mark of completion: written last, whole
        written += 1
        if log is not None:
            log(f"{pdf.stem}: {variant}, {len(lines.lines)} lines ({lines.verdict})")
    return written


def read_copy(vector_dir: str | Path, stem: str) -> OCRCopy | None:
    """The cached OCR copy of a vector page, None when it was not made."""
    image_path, lines_path = copy_paths(Path(vector_dir), stem)
    if not lines_path.exists():
        return None
    record = json.loads(lines_path.read_text(encoding="utf-8"))
    return OCRCopy(image=image_path, lines=PageLines.from_dict(record["lines"]), variant=record["variant"])


def _snap(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) widened to whole words: a stretch that begins or ends inside a word takes the word."""
    while 0 < start < len(text) and _joined(text[start - 1], text[start]):
        start -= 1
    while 0 < end < len(text) and _joined(text[end - 1], text[end]):
        end += 1
    return start, end


def _best_stretch(run: str, markdown: str, masked: str, lo: int, hi: int) -> tuple[float, int, int]:
    """The stretch of markdown[lo:hi] most like `run` (rapidfuzz's partial alignment over `masked`, where
    stretches already taken are blanked), snapped to words and rescored on the page's own characters."""
    from rapidfuzz import fuzz

    hit = fuzz.partial_ratio_alignment(run, masked[lo:hi], score_cutoff=MIN_RATIO)
    if hit is None:
        return 0.0, -1, -1
    start, end = _snap(markdown, lo + hit.dest_start, lo + hit.dest_end)
    # Spaces and blanked characters (taken stretches, HTML tags) at its ends stay the page's.
    while start < end and (markdown[start].isspace() or masked[start] == "\x00"):
        start += 1
    while end > start and (markdown[end - 1].isspace() or masked[end - 1] == "\x00"):
        end -= 1
    stretch = markdown[start:end]
    if "\x00" in masked[start:end] or "\n" in stretch.strip():
        return 0.0, -1, -1
    return fuzz.ratio(run, stretch), start, end


def _only_whole(masked: str, run: str) -> int:
    """Where `run` stands in the page exactly, as whole words, untaken, and nowhere else; else -1."""
    found = []
    at = masked.find(run)
    while at >= 0 and len(found) < 2:
        end = at + len(run)
        whole = (at == 0 or not _joined(masked[at - 1], run[0])) and (
            end == len(masked) or not _joined(run[-1], masked[end])
        )
        if whole:
            found.append(at)
        at = masked.find(run, at + 1)
    return found[0] if len(found) == 1 else -1


def ocr_reference_form(markdown: str, runs: dict[int, str]) -> str:
    """`markdown` with every run found in it up to OCR's errors replaced by `@i`: runs taken in order, each
    searched first just after the previous one's stretch, then over the whole page (columns and floats
    leave OCR's order); a stretch is taken once, never crosses a line break or holds an HTML tag; a run
    of fewer than MIN_FUZZY_CHARS characters is placed only where it stands exactly and once. Markdown
    that already holds references is returned unchanged (they could not be told from the page's own
    text)."""
    from jocr.lines.references import REFERENCES, with_references

    if REFERENCES.search(markdown):
        return markdown
    masked = _TAG.sub(lambda m: "\x00" * len(m.group(0)), markdown)  # a run never takes a tag
    taken: list[tuple[int, int, int]] = []  # (start, end, run number)
    cursor = 0
    for number, run in runs.items():
        run = run.strip()
        if not run or (" ... " in run and len(run) > 8):  # a capped run is not the page's text
            continue
        if len(run) < MIN_FUZZY_CHARS:
            at = _only_whole(masked, run)
            if at >= 0:
                taken.append((at, at + len(run), number))
                masked = masked[:at] + "\x00" * len(run) + masked[at + len(run) :]
            continue
        near = min(len(markdown), cursor + 3 * len(run) + 40)
        score, start, end = _best_stretch(run, markdown, masked, cursor, near)
        if score < MIN_RATIO:
            score, start, end = _best_stretch(run, markdown, masked, 0, len(markdown))
        if score < MIN_RATIO:
            continue
        taken.append((start, end, number))
        masked = masked[:start] + "\x00" * (end - start) + masked[end:]
        cursor = end
    return with_references(markdown, taken)
