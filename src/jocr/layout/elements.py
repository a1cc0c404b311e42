"""Element tasks: one element of a page (a table, a formula, a caption) read on its own, from a region of
the page or the whole page (`jocr parse --task ... --region ...`, `jocr.parse(task=..., region=...)`;
docs/elements.md).

One mapping says how each task is read:

- `READERS`: tasks read from the page's own geometry, without the model: task -> a function
  `reader(source, index, region, ocr) -> ElementResult` (`source` a `jocr.documents.pages.PageSource`,
  `index` the 0-based page, `region` a checked box in page units or None for the whole page). A new
  reader is added with `register`.
- `MODEL_PROMPTS`: tasks the model reads from the region's pixels, with the named prompt of
  `jocr.tokenizer.PROMPTS` (run by `jocr.pipeline`, which holds the model). A task in both (formulas) is
  read by its reader where the reader can (a PDF page's glyphs), by the model where the reader returns
  None (an image).

A region is `x0,y0,x1,y1` in the page's unit: PDF points for a PDF page, pixels for an image, top-left
origin; `check_region` refuses one outside the page, inverted, or too small to hold an element.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from jocr.bbox import BBox as Box
from jocr.bbox import holds_point
from jocr.layout.tables import Table, TableConfig, read_table

PAGE = "page"
TASKS = ("page", "table", "formula", "caption")
MIN_REGION = 4.0  # page units (points or pixels): a smaller side holds no element


class RegionError(ValueError):
    """A region that cannot be read (one line)."""


@dataclass
class ElementResult:
    """One element read from a region: its Markdown (a table's HTML, a formula's `$$...$$`), a one-line
    note when nothing was found (the Markdown is then empty), and how it was read."""

    task: str
    page: int
    markdown: str = ""
    note: str = ""
    region: Box | None = None
    unit: str = "pt"
    method: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "task": self.task,
            "page": self.page,
            "markdown": self.markdown,
            "note": self.note,
            "region": None if self.region is None else [round(v, 2) for v in self.region],
            "unit": self.unit,
            "method": self.method,
            "seconds": round(self.seconds, 4),
        }


Reader = Callable[..., ElementResult]
READERS: dict[str, Reader] = {}  # filled at the end of the module, once the readers are defined
MODEL_PROMPTS: dict[str, str] = {"formula": "formula", "caption": "caption"}


def register(task: str, reader: Reader) -> None:
    """Read `task` with `reader` (see the module docstring) instead of the model."""
    READERS[task] = reader
    MODEL_PROMPTS.pop(task, None)


def check_task(task: str) -> str:
    task = (task or PAGE).strip().lower()
    if task not in TASKS:
        raise RegionError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    return task


def parse_region(text: str | None) -> Box | None:
    """`"x0,y0,x1,y1"` (or a sequence of four numbers) -> a box; None stays None."""
    if text is None:
        return None
    parts = text.split(",") if isinstance(text, str) else list(text)
    try:
        values = [float(p) for p in parts]
    except (TypeError, ValueError):
        raise RegionError(f"region {text!r} is not four numbers x0,y0,x1,y1") from None
    if len(values) != 4 or any(v != v or v in (float("inf"), float("-inf")) for v in values):
        raise RegionError(f"region {text!r} is not four numbers x0,y0,x1,y1")
    return values[0], values[1], values[2], values[3]


def check_region(region: Box | None, width: float, height: float, unit: str) -> Box | None:
    """The region clipped to the page, or a `RegionError` saying why it cannot be read."""
    if region is None:
        return None
    x0, y0, x1, y1 = region
    shown = ",".join(f"{v:g}" for v in region)
    if x1 <= x0 or y1 <= y0:
        raise RegionError(f"region {shown} is inverted or empty (x1 must exceed x0 and y1 y0)")
    if x1 <= 0 or y1 <= 0 or x0 >= width or y0 >= height:
        raise RegionError(f"region {shown} lies outside the page ({width:g} x {height:g} {unit})")
    clipped = (max(0.0, x0), max(0.0, y0), min(float(width), x1), min(float(height), y1))
    if clipped[2] - clipped[0] < MIN_REGION or clipped[3] - clipped[1] < MIN_REGION:
        raise RegionError(
            f"region {shown} is too small to hold an element (under {MIN_REGION:g} {unit} on a side)"
        )
    return clipped


def page_frame(source, index: int) -> tuple[float, float, str]:
    """(width, height, unit) of page `index`: points for a PDF page (its size as rendered), pixels for an
    image."""
    if source.kind == "pdf":
        width, height = _pdf_size(source, index)
        return width, height, "pt"
    image = source.render(index)
    return float(image.width), float(image.height), "px"


def _pdf_size(source, index: int) -> tuple[float, float]:
    def size(page) -> tuple[float, float]:
        width, height = page.get_size()
        if page.get_rotation() in (90, 270):
            width, height = height, width
        return float(width), float(height)

    found = source.read_pdf_page(index, size)
    if found is None:
        raise RegionError(f"page {index + 1} cannot be opened")
    return found


# -- tables --------------------------------------------------------------------------------------------


def read_table_region(source, index: int, region: Box | None, ocr: str = "auto",
                      config: TableConfig | None = None) -> ElementResult:  # fmt: skip
    """The table in `region` of page `index`: geometry from the text layer and path objects on a PDF page
    whose layer is usable, else from OCR words and rules found in the pixels (`image_region_table`; a
    drawn region's crop read with RapidOCR's detector at `CROP_DET_MIN_SIDE`)."""
    from jocr.lines.ocr import CROP_DET_MIN_SIDE

    start = time.perf_counter()
    unit = "pt" if source.kind == "pdf" else "px"
    geometry = pdf_geometry(source, index) if source.kind == "pdf" else None
    if geometry is not None:
        pieces, rules = geometry
        table = read_table(pieces, rules, region, config)
        method = f"textlayer+{table.method}"
    else:
        image = source.render(index)
        scale = page_scale(source, index, image)
        box = region or (0.0, 0.0, image.width / scale, image.height / scale)
        det = CROP_DET_MIN_SIDE if region is not None else None  # a drawn region's crop, not a page
        table = image_region_table(image, box, scale, ocr, config, orient=region is None, det_min_side=det)
        if table is None:
            note = (
                "no OCR engine is installed to read a table from pixels"
                if ocr != "none"
                else ("the page has no usable text layer and --ocr none was asked")
            )
            return ElementResult("table", index + 1, note=note, region=region, unit=unit,
                                 seconds=time.perf_counter() - start)  # fmt: skip
        method = f"ocr+{table.method}"
    return table_result(table, index, region, unit, method, time.perf_counter() - start)


def image_region_table(image, box: Box, scale: float = 1.0, ocr: str = "auto",
                       config: TableConfig | None = None, orient: bool = False,
                       keep: Box | None = None, det_min_side: int | None = None) -> Table | None:  # fmt: skip
    """The table in `box` (page units; `scale` pixels of `image` per unit) read from the crop's own OCR
    words and the rules in its pixels, boxes back in page units; None when no OCR engine can read it
    (`ocr` "none" or none installed). `orient`: ask the orientation step (a region drawn on the page as
    shown is upright). `keep`: only the pieces whose centre lies in it are read (a crop padded around a
    table takes in part of a line beside it, read as noise). `det_min_side`: RapidOCR's detector's least
    side for the crop (`OCRLinesConfig.rapid_det_min_side`; None: the engine's own)."""
    crop_box = tuple(round(v * scale) for v in box)
    crop = image.crop(crop_box)
    lines = _ocr_lines(crop, ocr, orient=orient, det_min_side=det_min_side)
    if lines is None:
        return None
    return crop_table_of_lines(crop, crop_box, scale, lines, keep, config)


def crop_table_of_lines(crop, crop_box, scale: float, lines, keep: Box | None = None,
                        config: TableConfig | None = None) -> Table:  # fmt: skip
    """The table of a crop (`crop_box` its pixels in the page image, `scale` pixels per page unit) from its
    OCR `lines` (crop pixels) and the rules in its pixels, boxes in page units: the rules' table, or where
    they find none, the structure model's (`jocr.layout.tables_learned`) filled with the same pieces."""
    from jocr.layout.tables_learned import learned_table
    from jocr.layout.tables_sources import image_rules, line_pieces

    own = line_pieces(lines)
    pieces = [_moved(p, scale, crop_box) for p in own]
    rules = image_rules(crop, scale, (crop_box[0] / scale, crop_box[1] / scale))
    table = read_table(pieces, rules, keep, config)
    if not table.empty:
        return table
    kept = [p for p, at in zip(own, pieces, strict=True) if keep is None or holds_point(keep, at.cx, at.cy)]
    learned = learned_table(crop, kept) if kept else None
    if learned is None or learned.empty:
        return table
    learned.bbox = keep or tuple(v / scale for v in crop_box)
    return learned


def table_result(table: Table, index: int, region, unit: str, method: str, seconds: float) -> ElementResult:
    if table.empty:
        return ElementResult("table", index + 1, note=table.note or "no table found", region=region,
                             unit=unit, method=method, seconds=seconds)  # fmt: skip
    result = ElementResult("table", index + 1, markdown=table.html, region=region, unit=unit, method=method,
                           seconds=seconds)  # fmt: skip
    result.extra = {"rows": table.n_rows, "cols": table.n_cols}
    return result


def read_formula_element(source, index: int, region: Box | None, ocr: str = "auto") -> ElementResult | None:
    """The formula in `region` of a PDF page whose text layer is usable, read from its glyphs and rules
    (`jocr.layout.formulas.read_formula_region`); None for a page without one (the model reads pixels)."""
    from jocr.layout.formulas import read_formula_region

    if source.kind != "pdf":
        return None
    layer = source.text_layer(index)
    if layer is None or not layer.usable:
        return None
    start = time.perf_counter()
    found = source.read_pdf_page(index, lambda page: read_formula_region(page, region))
    if found is None:
        return None
    return ElementResult("formula", index + 1, found.markdown, found.note, region, "pt", "textlayer",
                         time.perf_counter() - start)  # fmt: skip


def pdf_geometry(source, index: int, check_layer: bool = True):
    """(pieces, rules) of a PDF page whose text layer is usable (not checked again when `check_layer` is
    False: the caller knows), else None."""
    from jocr.layout.tables_sources import pdf_page_pieces, pdf_page_rules

    if check_layer:
        layer = source.text_layer(index)
        if layer is None or not layer.usable:
            return None
    return source.read_pdf_page(index, lambda page: (pdf_page_pieces(page), pdf_page_rules(page)))


def page_scale(source, index: int, image) -> float:
    """Pixels of the rendered page per page unit (1 for an image)."""
    if source.kind != "pdf":
        return 1.0
    return image.width / _pdf_size(source, index)[0]


def _ocr_lines(image, ocr: str, orient: bool = True, det_min_side: int | None = None):
    """OCR lines of `image` (None when no engine is there or `ocr` is "none"). `orient=False` for a region
    the caller drew on the page as shown: it is upright, and the orientation step (Tesseract's OSD, a
    subprocess: about half of a crop's CPU time) is skipped; a slight skew is still corrected.
    `det_min_side`: RapidOCR's detector's least side (None: the engine's own)."""
    from jocr.lines.ocr import read_region

    lines = read_region(image, ocr, orient, det_min_side)
    if lines is None:
        return None
    return lines.lines if lines.usable else []


def _moved(piece, scale: float, crop_box):
    from jocr.layout.tables import Piece

    x0, y0, x1, y1 = piece.box
    ox, oy = crop_box[0], crop_box[1]
    return Piece(piece.text, ((x0 + ox) / scale, (y0 + oy) / scale, (x1 + ox) / scale, (y1 + oy) / scale),
                 piece.bold)  # fmt: skip


register("table", read_table_region)
READERS["formula"] = read_formula_element  # a PDF page's glyphs; the model (MODEL_PROMPTS) reads images
