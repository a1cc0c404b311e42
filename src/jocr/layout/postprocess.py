"""Model output -> clean Markdown: grounding tags out (boxes kept in pixels), clean-ups, page joining.

Grounding output (DeepSeek-OCR, `<|grounding|>` prompt) interleaves
`<|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|>` before each block, on a 0-999 grid relative
to the page image; DeepSeek-OCR's run_dpsk_ocr_pdf.py maps a coordinate to pixels as `int(x / 999 * width)`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from jocr.tokenizer import BOS_TOKEN, EOS_TOKEN, PAD_TOKEN
from jocr.types import GRID_MAX

# DeepSeek-OCR joins pages with this marker (run_dpsk_ocr_pdf.py).
PAGE_SPLIT = "<--- Page Split --->"

# One grounded block's tags: its label and its boxes' payload.
GROUNDING_TAG = re.compile(r"<\|ref\|>(.*?)<\|/ref\|>\s*<\|det\|>(.*?)<\|/det\|>", re.DOTALL)
_LONE_DET = re.compile(r"<\|det\|>(.*?)<\|/det\|>", re.DOTALL)
_REF_TAGS = re.compile(r"<\|/?ref\|>")
_STRAY_TAGS = re.compile(r"<\|/?(?:det|ref|grounding)\|>")
_NUMBER = r"\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*"
_QUAD = re.compile(r"\[" + ",".join([_NUMBER] * 4) + r"\]")
# The end of an answer cut off inside a grounding tag (it ran out of tokens mid-box): an open `<|det|>`
# payload (with the `<|ref|>label<|/ref|>` before it), a `<|ref|>` label never closed or closed with no box
# after it, or half of a tag.
_UNFINISHED = re.compile(
    r"(?:<\|ref\|>[^<]*(?:<\|/ref\|>\s*)?)?<\|det\|>(?:(?!<\|/det\|>).)*\Z"
    r"|<\|ref\|>[^<]*(?:<\|/ref\|>\s*)?\Z|<\|/?[a-z]*\|?\Z",
    re.DOTALL,
)


@dataclass
class Box:
    """One grounded region in page-image pixels (x1, y1) top-left, (x2, y2) bottom-right."""

    label: str
    x1: int
    y1: int
    x2: int
    y2: int

    def to_dict(self) -> dict:
        return asdict(self)


def grid_to_pixels(coords: Sequence[float], width: int, height: int) -> tuple[int, int, int, int]:
    """A 0-999 grid box -> pixels (clamped to the grid first, as the model can overshoot)."""
    x1, y1, x2, y2 = (min(max(float(c), 0.0), GRID_MAX) for c in coords)
    if x2 < x1:
        x1, x2 = x2, x1
    if y2 < y1:
        y1, y2 = y2, y1
    return (
        int(x1 / GRID_MAX * width),
        int(y1 / GRID_MAX * height),
        int(x2 / GRID_MAX * width),
        int(y2 / GRID_MAX * height),
    )


def checked_box(
    coords: Sequence[float], width: int, height: int
) -> tuple[tuple[int, int, int, int] | None, str]:
    """A model's 0-999 grid box in pixels and what was wrong with it ("" when nothing): a corner off the
    grid is clamped to the page, inverted corners are put in order, a box of no area is dropped (None)."""
    problems = []
    if not all(0 <= float(c) <= GRID_MAX for c in coords):
        problems.append("outside the page, clamped")
    if float(coords[2]) < float(coords[0]) or float(coords[3]) < float(coords[1]):
        problems.append("inverted, corners put in order")
    box = grid_to_pixels(coords, width, height)
    if box[2] <= box[0] or box[3] <= box[1]:
        return None, "of no area, dropped"
    return box, "; ".join(problems)


def unfinished_tag(text: str) -> tuple[str, str]:
    """`text` without the grounding tag it was cut off inside of, and that tag ("" when none)."""
    match = _UNFINISHED.search(text)
    if match is None or not match.group(0):
        return text, ""
    return text[: match.start()], match.group(0)


def parse_boxes(det_text: str) -> list[tuple[float, float, float, float]]:
    """The quadruples inside a `<|det|>` payload such as "[[10, 20, 300, 40], [5, 6, 7, 8]]" (never eval'd;
    malformed entries are skipped)."""
    return [tuple(float(v) for v in m.groups()) for m in _QUAD.finditer(det_text)]


def extract_grounding(text: str, width: int, height: int) -> tuple[str, list[Box]]:
    """Remove grounding tags from `text`; return the text and the boxes in pixels, in reading order (a box
    of no area left out, a tag the answer was cut off inside of dropped with its payload)."""
    boxes: list[Box] = []

    def add(label: str, payload: str) -> None:
        for quad in parse_boxes(payload):
            box, _ = checked_box(quad, width, height)
            if box is not None:
                boxes.append(Box(label, *box))

    def take(match: re.Match) -> str:
        add(" ".join(match.group(1).split()), match.group(2))
        return ""

    text = GROUNDING_TAG.sub(take, unfinished_tag(text)[0])

    def take_lone(match: re.Match) -> str:
        add("", match.group(1))
        return ""

    text = _LONE_DET.sub(take_lone, text)
    # A `<|ref|>phrase<|/ref|>` without boxes keeps its phrase; unmatched tags (truncated output) go.
    text = _REF_TAGS.sub("", text)
    text = _STRAY_TAGS.sub("", text)
    return text, boxes


def close_open_tables(text: str) -> str:
    """Close a table cut off by the token limit so HTML parsers and renderers keep its rows."""
    opened = len(re.findall(r"<table\b", text, re.IGNORECASE))
    closed = len(re.findall(r"</table>", text, re.IGNORECASE))
    if opened <= closed:
        return text
    tail = text.rstrip()
    # Drop a half-written tag at the very end ("<td", "</t").
    tail = re.sub(r"<[^<>]*$", "", tail)
    if re.search(r"<td\b[^>]*>(?:(?!</td>).)*$", tail, re.DOTALL | re.IGNORECASE):
        tail += "</td>"
    if len(re.findall(r"<tr\b", tail, re.IGNORECASE)) > len(re.findall(r"</tr>", tail, re.IGNORECASE)):
        tail += "</tr>"
    return tail + "</table>" * (opened - closed)


def clean_markdown(text: str) -> str:
    """Clean-ups applied to every page: control tokens, DeepSeek-OCR's LaTeX substitutions, line endings,
    trailing spaces and runs of blank lines."""
    for token in (BOS_TOKEN, EOS_TOKEN, PAD_TOKEN):
        text = text.replace(token, "")
    # Same substitutions as DeepSeek-OCR's PDF script: KaTeX and most Markdown renderers lack these macros.
    text = text.replace("\\coloneqq", ":=").replace("\\eqqcolon", "=:")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n").strip()


def postprocess_page(
    raw: str, width: int, height: int, finish_reason: str | None = None
) -> tuple[str, list[Box]]:
    """Decoded model output for one page -> (Markdown, boxes in pixels)."""
    text, boxes = extract_grounding(raw, width, height)
    if finish_reason == "length":
        text = close_open_tables(text)
    return clean_markdown(text), boxes


def join_pages(pages: Sequence[str], marker: str | None = PAGE_SPLIT) -> str:
    """Join page Markdown; with a marker, pages are separated by it on its own line (DeepSeek-OCR style)."""
    if marker is None:
        return "\n\n".join(p for p in pages)
    return f"\n\n{marker}\n\n".join(pages)
