"""The document tree: a page as typed blocks in reading order, each with its box, text, Markdown and the
lines it was built from (docs/layout.md). Every output (Markdown, HTML, JSON) is rendered from it
(`jocr.layout.render`), whichever way the page was read: an anchored model's answer with run references,
the text layer's lines alone, or an unanchored model's Markdown with or without grounding boxes.

Coordinates: `[x0, y0, x1, y1]`, top-left origin, in the page's `unit`: PDF points ("pt") for a page whose
lines came from a PDF's text layer, pixels ("px") of the page image otherwise.

Furniture (running headers and footers, page numbers) stays in the tree, marked `furniture`, so a JSON
reader sees it; Markdown and HTML leave it out. The JSON form is versioned (`TREE_VERSION`, semantic
versioning: a reader accepts files of its major version) and described by `tree.schema.json` beside this
module.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

# The box type and `union` live with the other box geometry; the tree's callers take them from here too.
from jocr.bbox import BBox as BBox
from jocr.bbox import union as union

TREE_VERSION = "1.3.0"  # 1.2.0: figures' generated_caption; 1.3.0: the page's notes
SCHEMA_PATH = Path(__file__).with_name("tree.schema.json")


def lines_unit(lines_width: float, image_width: float, ocr: bool = True) -> str:
    """The unit of a page's lines: pixels of the page image for OCR lines that span its width (an image's),
    else PDF points (a text layer; OCR over a rendered PDF page reports its lines in points)."""
    return "px" if ocr and abs(float(lines_width) - float(image_width)) <= 1 else "pt"


TITLE, HEADING, PARAGRAPH, LIST_ITEM, TABLE, FORMULA = (
    "title",
    "heading",
    "paragraph",
    "list_item",
    "table",
    "formula",
)
FIGURE, CAPTION, CODE, FOOTNOTE = "figure", "caption", "code", "footnote"
HEADER, FOOTER, PAGE_NUMBER = "header", "footer", "page_number"
BLOCK_TYPES = (
    TITLE, HEADING, PARAGRAPH, LIST_ITEM, TABLE, FORMULA, FIGURE, CAPTION, CODE, FOOTNOTE, HEADER, FOOTER,
    PAGE_NUMBER,
)  # fmt: skip
FURNITURE_TYPES = frozenset((HEADER, FOOTER, PAGE_NUMBER))

# Where a tree line came from (the schema's enum): the PDF's text layer, an OCR engine (whichever one read
# it: RapidOCR, Tesseract), a position read back from an anchor, or a model's grounding box.
LINE_SOURCES = ("textlayer", "ocr", "anchor", "model")


def line_source(source: str) -> str:
    """A line source as the tree names it: an OCR engine's name ("rapidocr", "tesseract") is "ocr"."""
    return source if source in LINE_SOURCES else "ocr"


# Where a page's blocks came from.
FROM_ANCHORED = "anchored"  # an anchored model's answer, its run references resolved against the text layer
FROM_LINES = "lines"  # the line source alone (text layer or OCR lines), grouped by rules
FROM_GROUNDING = "grounding"  # an unanchored model's Markdown with grounding boxes
FROM_MARKDOWN = "markdown"  # an unanchored model's Markdown without boxes

# A caption's first words: "Figure 3", "Table 2", "Algorithm IV" (a word such as "algorithmic" is none), a
# Chinese caption's "表 1.2", "图 3".
CAPTION_START = re.compile(
    r"(?:Figure|Fig\.|FIGURE|Table|TABLE|Tab\.|Listing|Chart|Exhibit|Scheme|Plate|Algorithm)\s*(?:[0-9]+|[IVX]+\b)"
    r"|[表图]\s*[0-9]"
)


def _box(values) -> BBox | None:
    return None if values is None else tuple(float(v) for v in values)


def _rounded(box: BBox | None) -> list[float] | None:
    return None if box is None else [round(float(v), 2) for v in box]


@dataclass
class TreeLine:
    """One source line a block was built from: its text, box, where it came from ("textlayer", "ocr",
    "anchor": a position read back from an anchor, its extent estimated), and, for an anchored page, its
    run number on the page (1-based, in the text layer's order)."""

    text: str
    bbox: BBox | None
    source: str = "textlayer"
    run: int | None = None
    confidence: float | None = None
    size: float = 0.0
    weight: int = 0
    mono: bool = False

    def to_dict(self) -> dict:
        out = {"text": self.text, "bbox": _rounded(self.bbox), "source": self.source}
        if self.run is not None:
            out["run"] = self.run
        if self.confidence is not None:
            out["confidence"] = round(float(self.confidence), 4)
        if self.size:
            out["size"] = round(float(self.size), 2)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> TreeLine:
        return cls(
            text=data["text"],
            bbox=_box(data["bbox"]),
            source=data["source"],
            run=data.get("run"),
            confidence=data.get("confidence"),
            size=data.get("size", 0.0),
        )


@dataclass
class Block:
    """One block of a page. `text` is its plain text; `markdown` how it reads in the page's Markdown (a
    heading's `#`s, a list item's marker, a table's HTML, a formula's `$$`); `html` a table's HTML and
    `latex` a formula's LaTeX where the block is one. `order` is its place in reading order (furniture
    included); `bbox` the union of its lines' boxes, or the box the model gave it."""

    type: str
    text: str = ""
    markdown: str = ""
    bbox: BBox | None = None
    lines: list[TreeLine] = field(default_factory=list)
    level: int | None = None  # headings: 1 (title) to 6
    order: int = 0
    html: str | None = None
    latex: str | None = None
    marker: str | None = None  # list items: "-", "1.", "a)", ...
    image: str | None = None  # figures: the image file written for it, relative to the Markdown
    caption: int | None = None  # figures: the `order` of its caption block
    # figures without a printed caption: a caption the model wrote for the figure (`jocr.pipeline.caption`,
    # only when asked); never part of the Markdown, since the page does not print it
    generated_caption: str | None = None
    figure: Any = field(default=None, repr=False, compare=False)  # figures: the cut image (not serialised)
    # formulas of a page read from pixels: the box's pixels until the formula reader reads them
    # (`jocr.pipeline.formulas`; not serialised)
    crop: Any = field(default=None, repr=False, compare=False)

    @property
    def furniture(self) -> bool:
        return self.type in FURNITURE_TYPES

    def to_dict(self) -> dict:
        out = {
            "order": self.order,
            "type": self.type,
            "furniture": self.furniture,
            "bbox": _rounded(self.bbox),
            "text": self.text,
            "markdown": self.markdown,
        }
        for key in ("level", "marker", "html", "latex", "image", "caption", "generated_caption"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out["lines"] = [line.to_dict() for line in self.lines]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Block:
        """A block from `to_dict()`'s form (a page's JSON read back)."""
        return cls(
            type=data["type"],
            text=data["text"],
            markdown=data["markdown"],
            bbox=_box(data["bbox"]),
            lines=[TreeLine.from_dict(line) for line in data["lines"]],
            level=data.get("level"),
            order=data["order"],
            html=data.get("html"),
            latex=data.get("latex"),
            marker=data.get("marker"),
            image=data.get("image"),
            caption=data.get("caption"),
            generated_caption=data.get("generated_caption"),
        )


@dataclass
class PageTree:
    """A page: its size in `unit`, where its blocks came from (`FROM_*`), its blocks in reading order, and
    notes on what of the source was clamped or dropped on the way (a model's box off the page, an answer
    cut off inside a grounding tag), one line each."""

    width: float
    height: float
    unit: str = "pt"
    source: str = FROM_LINES
    blocks: list[Block] = field(default_factory=list)
    page: int = 1
    notes: list[str] = field(default_factory=list)
    # a page read from pixels: the boxes a layout detector called tables (`jocr.layout.regions`), for the
    # table pass (`jocr.layout.tables_pages.image_page_tables`); not serialised
    table_regions: list[BBox] = field(default_factory=list, repr=False, compare=False)

    def numbered(self) -> PageTree:
        """The tree with every block's `order` set to its place in `blocks`."""
        for index, block in enumerate(self.blocks):
            block.order = index
        return self

    @property
    def body(self) -> list[Block]:
        """The blocks Markdown and HTML show: all but furniture."""
        return [b for b in self.blocks if not b.furniture]

    @property
    def from_pixels(self) -> bool:
        """Whether the page was read from pixels: an image's tree (in pixels), or a PDF page in points
        whose lines all come from OCR (a scanned page without a usable text layer)."""
        if self.unit == "px":
            return True
        lines = [tl for b in self.blocks for tl in b.lines]
        return bool(lines) and all(tl.source == "ocr" for tl in lines)

    def to_dict(self) -> dict:
        return {
            "version": TREE_VERSION,
            "page": self.page,
            "width": round(float(self.width), 2),
            "height": round(float(self.height), 2),
            "unit": self.unit,
            "source": self.source,
            "blocks": [b.to_dict() for b in self.blocks],
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    @classmethod
    def from_dict(cls, data: dict) -> PageTree:
        """A page's tree from `to_dict()`'s form; a file of another major version is refused (ValueError)."""
        version = str(data.get("version", ""))
        if version.split(".")[0] != TREE_VERSION.split(".")[0]:
            raise ValueError(f"page tree version {version or '(none)'} is not {TREE_VERSION.split('.')[0]}.x")
        return cls(
            width=data["width"],
            height=data["height"],
            unit=data["unit"],
            source=data["source"],
            blocks=[Block.from_dict(b) for b in data["blocks"]],
            page=data["page"],
            notes=list(data.get("notes", [])),
        )


@lru_cache(maxsize=1)
def tree_schema() -> dict:
    """The JSON Schema (draft 2020-12) of `PageTree.to_dict()`."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
