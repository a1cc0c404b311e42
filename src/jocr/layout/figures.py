"""Figures cut out of pages (docs/layout.md, "Figures"): a page's figure regions become `figure` blocks
of its document tree, each linked to its caption, cut out of the page image at its render resolution, and
written as `<stem>_p<N>_fig<K>.png` beside the Markdown (`files`), embedded as a data: URI (`inline`), or
left out (`none`: the caption stays).

    figures = place_figures(tree, image, candidates, config)   # blocks added to `tree`, images cut
    name_figures(tree, figures, stem, "files")                  # Markdown `![caption](stem_p3_fig1.png)`
    write_figures(figures, folder)                              # the PNG files

Regions come from `jocr.layout.figure_regions` (PDF drawing objects, ink no text line covers) and from the
tree itself (a model's grounding boxes labelled image / figure / chart).
"""

from __future__ import annotations

import base64
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from jocr.bbox import area, clamp, overlap_area
from jocr.layout.figure_regions import FROM_DRAWING, FROM_IMAGE, FROM_INK, FROM_MODEL, Region, ink_regions
from jocr.layout.render import page_markdown
from jocr.layout.tree import (
    CAPTION,
    FIGURE,
    FURNITURE_TYPES,
    HEADING,
    PARAGRAPH,
    TABLE,
    TITLE,
    BBox,
    Block,
    PageTree,
    union,
)

FIGURE_MODES = ("none", "files", "inline")

# A figure's caption: "Figure 3", "Fig. 2", "Chart 1" (tables and listings have captions of their own).
FIGURE_CAPTION = re.compile(
    r"\s*(?:Figure|Fig\.|FIGURE|FIG\.|Chart|Plate|Scheme|Exhibit|Abbildung|Abb\.)\s*[0-9IVX]"
)


@dataclass
class FiguresConfig:
    """What counts as a figure, as fractions of the page so they hold at any render resolution."""

    mode: str = "files"  # none | files | inline
    min_side: float = 0.04  # each side at least this fraction of the page's shorter side
    min_area: float = 0.004  # at least this fraction of the page's area
    max_area: float = 0.9  # larger is the page itself (a scan's one image, a background)
    max_figures: int = 24  # more are capped, the smallest dropped (noted)
    max_text_cover: float = 0.35  # a region more than this much covered by text lines is a text panel
    max_rule_text_cover: float = 0.08  # the same for rectilinear drawings (rules, frames: tables, boxes)
    max_ink_text_cover: float = 0.1  # the same for ink of a page image (what OCR missed is text too)
    label_reach: float = 1.0  # text lines this many of their heights from a figure are its labels
    max_label_chars: int = 40  # ... when they are this short (a body line is longer)
    absorb_inside: float = 0.9  # a text block this much inside a figure is the figure's label
    caption_gap: float = 0.12  # a caption at most this fraction of the page height from its figure


@dataclass
class Figure:
    """One figure cut out of a page: `number` K on its page (1-based, reading order), its box in the tree's
    unit and in pixels of the page image, where its region came from, its caption's text, its file name
    (`name`, set by `name_figures`), and the PNG bytes (`png`; `image` opens them)."""

    page: int
    number: int
    bbox: BBox
    pixels: tuple[int, int, int, int]
    origin: str
    png: bytes = b""
    caption: str = ""
    name: str = ""
    generated_caption: str | None = None  # the model's caption of a figure without a printed one (when asked)

    @property
    def image(self) -> Image.Image:
        return Image.open(io.BytesIO(self.png))

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")

    def to_dict(self) -> dict:
        return {
            "number": self.number,
            "file": self.name or None,
            "bbox": [round(float(v), 2) for v in self.bbox],
            "pixels": list(self.pixels),
            "origin": self.origin,
            "caption": self.caption,
            **({"generated_caption": self.generated_caption} if self.generated_caption is not None else {}),
        }


@dataclass
class PlacedFigures:
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def normalise_figures_mode(mode: str | None) -> str:
    mode = "none" if mode is None else str(mode).lower()
    if mode not in FIGURE_MODES:
        raise ValueError(f"figures must be one of {', '.join(FIGURE_MODES)}, not {mode!r}")
    return mode


def clean_regions(
    regions: list[Region], width: float, height: float, config: FiguresConfig
) -> tuple[list[Region], list[str]]:
    """Regions clamped to the page, those too small or covering the page dropped, overlapping ones merged,
    at most `config.max_figures` kept (the largest); notes say what was dropped and why."""
    notes: list[str] = []
    shorter = min(width, height)
    kept: list[Region] = []
    outside = huge = tiny = 0
    for region in regions:
        box = clamp(region.bbox, width, height)
        if box is None:
            outside += 1
            continue
        if area(box) > config.max_area * width * height:
            huge += 1
            continue
        kept.append(Region(box, region.origin, region.drawn, region.objects))
    large = []
    for region in kept:  # tiny first, so that specks never chain into one region over the page
        x0, y0, x1, y1 = region.bbox
        small = min(x1 - x0, y1 - y0) < config.min_side * shorter
        if small or area(region.bbox) < config.min_area * width * height:
            tiny += 1
        else:
            large.append(region)
    out = []
    for region in _merge_overlapping(large):
        if area(region.bbox) > config.max_area * width * height:
            huge += 1
        else:
            out.append(region)
    if outside:
        notes.append(f"{outside} figure region(s) off the page or empty dropped")
    if huge:
        notes.append(f"{huge} figure region(s) covering the page dropped")
    if len(out) > config.max_figures:
        out.sort(key=lambda r: -area(r.bbox))
        notes.append(
            f"{len(out) - config.max_figures} figure(s) over the limit of {config.max_figures} dropped"
        )
        out = out[: config.max_figures]
    del tiny  # too small to be a figure: a bullet, a rule, an icon; not worth a note
    return out, notes


def _merge_overlapping(regions: list[Region]) -> list[Region]:
    out: list[Region] = []
    for region in sorted(regions, key=lambda r: -area(r.bbox)):
        for other in out:
            if overlap_area(region.bbox, other.bbox) > 0:
                other.bbox = union([other.bbox, region.bbox])
                other.drawn = other.drawn or region.drawn
                if region.origin == FROM_IMAGE:
                    other.origin = FROM_IMAGE
                break
        else:
            out.append(Region(region.bbox, region.origin, region.drawn, region.objects))
    return out if len(out) == len(regions) else _merge_overlapping(out)


def _text_boxes(tree: PageTree) -> list[BBox]:
    return [
        line.bbox
        for block in tree.blocks
        for line in block.lines
        if line.bbox is not None and line.source != "model"
    ]


def _beside_text(box: BBox, text: list[BBox]) -> bool:
    """Whether ink lies beside text lines on their rows (the part of a line OCR did not box), not above or
    below them as a figure does: a fifth of its height or more shares rows with lines ending or starting
    within a line's height of it."""
    rows = 0.0
    for t in text:
        height = t[3] - t[1]
        shared = min(box[3], t[3]) - max(box[1], t[1])
        if shared <= 0.5 * height:
            continue
        if box[0] - 2 * height <= t[2] <= box[0] + height or box[2] - height <= t[0] <= box[2] + 2 * height:
            rows += shared
    return rows >= 0.2 * (box[3] - box[1])


def _text_like(crop: Image.Image, line_height: float, paper: float) -> bool:
    """Whether a crop of ink reads as lines of text (what OCR did not box): its inked rows form two or more
    bands, the median no taller than 1.6 text lines. A picture, a chart or a diagram is one tall band (its
    strokes and axes run down it) or bands of mixed heights. `paper` is the page's grey level."""
    gray = np.asarray(crop.convert("L"), dtype=np.int16)
    if gray.size == 0 or line_height <= 0:
        return False
    rows = ((paper - gray) > 64).any(axis=1)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], rows.view(np.int8), [0]))))
    bands = sorted(int(b - a) for a, b in zip(edges[::2], edges[1::2]))
    return len(bands) >= 2 and bands[len(bands) // 2] <= 1.6 * line_height


def _at_edge(box: BBox, page: tuple[float, float]) -> bool:
    """Whether ink touches the page image's edge (a scan's shadow, the table under a photographed page)."""
    margin = 0.004 * max(page)
    return box[0] <= margin or box[1] <= margin or box[2] >= page[0] - margin or box[3] >= page[1] - margin


def _is_figure(region: Region, text: list[BBox], tables: list[BBox], config: FiguresConfig) -> bool:
    """Whether a candidate is a figure rather than text: not mostly text lines (a framed box, a ruled
    table: rectilinear drawings may hold less text than pictures and curves, ink of a page image less
    still), and, when it holds text, not over a table block the page already has (a chart's tick labels
    in rows and columns read as a table by the rules over lines do not count against it)."""
    own = area(region.bbox)
    if region.origin == FROM_MODEL:
        return True
    covered = sum(overlap_area(region.bbox, t) for t in text)
    if region.origin == FROM_INK:
        return covered <= config.max_ink_text_cover * own
    if covered <= config.max_rule_text_cover * own:
        return True
    if any(overlap_area(region.bbox, t) > 0.5 * min(own, area(t)) for t in tables):
        return False
    return (region.drawn or region.origin == FROM_IMAGE) and covered <= config.max_text_cover * own


def _body_size(lines: list) -> float:
    """The size most characters are set in (a page of charts has more tick labels than body lines)."""
    weights: dict[float, int] = {}
    for line in lines:
        if line.size > 0:
            weights[round(line.size, 1)] = weights.get(round(line.size, 1), 0) + len(line.text)
    return max(weights, key=weights.get) if weights else 0.0


def _grown(box: BBox, lines: list, config: FiguresConfig) -> BBox:
    """`box` grown over the short text lines at its border or near it (a chart's tick labels and axis
    titles, a diagram's labels drawn as text), twice (labels of labels). Labels set smaller than the body
    reach `label_reach` line heights; lines of the body's size half that (a body line or a heading right
    under a picture is no label)."""
    body = _body_size(lines)
    for _ in range(2):
        near = []
        for line in lines:
            b = line.bbox
            if len(line.text) > config.max_label_chars or line.mono:  # code beside a chart is no label
                continue
            small = body > 0 and 0 < line.size < 0.9 * body
            reach = config.label_reach * (1.0 if small else 0.5) * max(1.0, b[3] - b[1])
            if (
                b[0] - reach <= box[2]
                and box[0] - reach <= b[2]
                and b[1] - reach <= box[3]
                and box[1] - reach <= b[3]
            ):
                near.append(b)
        grown = union([box, *near])
        if grown == box:
            break
        box = grown
    return box


def find_regions(
    tree: PageTree,
    image: Image.Image | None,
    candidates: list[Region] | None,
    config: FiguresConfig,
    candidates_size: tuple[float, float] | None = None,
    text_boxes: list[BBox] = (),
) -> tuple[list[Region], list[str]]:
    """The page's figure regions in the tree's unit: `candidates` from a PDF page's drawing objects (in a
    page of `candidates_size`, the tree's size when not given), else ink regions of `image` no text line
    covers; a model's grounding figure boxes always. `text_boxes` are the page's text lines beyond the
    tree's (a text layer's lines an anchored answer left out), in the candidates' unit."""
    if tree.width <= 0 or tree.height <= 0:
        return [], []
    regions = _scaled(candidates or [], candidates_size, tree)
    notes: list[str] = []
    text = _text_boxes(tree)
    seen = {tuple(round(v, 1) for v in b) for b in text}  # a line in both is counted once
    for region in _scaled([Region(b, FROM_DRAWING) for b in text_boxes], candidates_size, tree):
        if tuple(round(v, 1) for v in region.bbox) not in seen:
            text.append(region.bbox)
    page_area = tree.width * tree.height
    scanned = any(r.origin == FROM_IMAGE and area(r.bbox) > config.max_area * page_area for r in regions)
    if scanned:  # a scan in a PDF: its one image is the page; figures are in its ink
        regions = [
            r for r in regions if r.origin != FROM_IMAGE or area(r.bbox) <= config.max_area * page_area
        ]
    if (candidates is None or scanned) and image is not None:
        sx, sy = image.width / tree.width, image.height / tree.height
        heights = sorted(b[3] - b[1] for b in text)
        pitch = heights[len(heights) // 2] if heights else 0.012 * tree.height
        paper = float(np.percentile(np.asarray(image.convert("L").reduce(8)), 90))
        in_pixels = [(b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy) for b in text]
        for region in ink_regions(image, in_pixels):
            x0, y0, x1, y1 = region.bbox
            box = (x0 / sx, y0 / sy, x1 / sx, y1 / sy)
            # ink beside text lines (what OCR did not box) or at the image's edge is no figure: dropped
            # before regions merge, so that it never joins a figure
            if min(box[2] - box[0], box[3] - box[1]) < config.min_side * min(tree.width, tree.height):
                continue  # a speck, a word
            if not region.drawn or _beside_text(box, text) or _at_edge(box, (tree.width, tree.height)):
                continue  # rules alone (a ruled table, a frame) are no figure either
            if not _text_like(image.crop(tuple(int(v) for v in region.bbox)), pitch * sy, paper):
                regions.append(Region(box, FROM_INK, region.drawn, region.objects))
    cleaned, notes = clean_regions(regions, tree.width, tree.height, config)
    tables = [b.bbox for b in tree.blocks if b.type == TABLE and b.bbox is not None]
    found = [r for r in cleaned if _is_figure(r, text, tables, config)]
    # the model's own figure boxes (grounding) are figures whatever the rules say
    model = [
        b.bbox
        for b in tree.blocks
        if b.type == FIGURE and b.bbox is not None
        and (tree.source == "grounding" or any(x.source == "model" for x in b.lines))
    ]  # fmt: skip
    for box in model:
        box = clamp(box, tree.width, tree.height)
        if box is not None and not any(overlap_area(box, r.bbox) > 0.5 * area(box) for r in found):
            found.append(Region(box, FROM_MODEL))
    return found, notes


def _scaled(regions: list[Region], size: tuple[float, float] | None, tree: PageTree) -> list[Region]:
    if not size or size[0] <= 0 or size[1] <= 0:
        return list(regions)
    if abs(size[0] - tree.width) <= 0.005 * tree.width and abs(size[1] - tree.height) <= 0.005 * tree.height:
        return list(regions)  # the same page size (a tree's size may be rounded)
    sx, sy = tree.width / size[0], tree.height / size[1]
    return [
        Region((r.bbox[0] * sx, r.bbox[1] * sy, r.bbox[2] * sx, r.bbox[3] * sy), r.origin, r.drawn, r.objects)
        for r in regions
    ]


def _is_caption(block: Block) -> bool:
    return block.type in (CAPTION, PARAGRAPH, HEADING) and bool(FIGURE_CAPTION.match(block.text))


def _caption_for(
    box: BBox, blocks: list[Block], taken: set[int], tree: PageTree, config: FiguresConfig
) -> Block | None:
    """The nearest figure caption below `box` (else above), overlapping it across, within the gap."""
    best, best_gap = None, config.caption_gap * tree.height
    for block in blocks:
        if id(block) in taken or block.bbox is None or not _is_caption(block):
            continue
        b = block.bbox
        if min(b[2], box[2]) - max(b[0], box[0]) <= 0:
            continue
        below = b[1] - box[3]
        above = box[1] - b[3]
        gap = (
            below
            if below >= -0.02 * tree.height
            else (above + 0.01 * tree.height if above >= -0.02 * tree.height else None)
        )
        if gap is not None and max(gap, 0.0) <= best_gap:
            best, best_gap = block, max(gap, 0.0)
    return best


def place_figures(
    tree: PageTree,
    image: Image.Image | None,
    candidates: list[Region] | None = None,
    config: FiguresConfig | None = None,
    candidates_size: tuple[float, float] | None = None,
    text_boxes: list[BBox] = (),
) -> PlacedFigures:
    """Figure blocks for the page's figure regions put into `tree` in reading order (beside their caption,
    else before the first block below them in their column), text blocks lying inside a figure taken into
    it (a diagram's labels: short lines, no code; anything longer stays text even inside a figure's box),
    and each figure cut out of `image` (the page as rendered). `candidates` are
    a PDF page's drawing regions (`figure_regions.pdf_regions`) in a page of `candidates_size` (points;
    None: the tree's unit), or None for a page known only by its image (its ink is looked at). A figure
    block the tree already has (a model's `![]()` or grounding box) takes a region rather than a second
    block."""
    config = config or FiguresConfig()
    placed = PlacedFigures()
    if image is None or tree.width <= 0 or tree.height <= 0:
        return placed
    regions, placed.notes = find_regions(tree, image, candidates, config, candidates_size, text_boxes)
    if not regions:
        return placed
    regions.sort(key=lambda r: (r.bbox[1], r.bbox[0]))
    blocks = list(tree.blocks)
    taken: set[int] = set()
    captions: dict[int, Block | None] = {}
    unplaced = [b for b in blocks if b.type == FIGURE and b.bbox is None and not b.text]
    sx, sy = image.width / tree.width, image.height / tree.height
    labels = [
        line
        for b in blocks
        if b.type not in (*FURNITURE_TYPES, CAPTION, TITLE, HEADING) and not _is_caption(b)
        for line in b.lines
        if line.bbox is not None and line.text.strip()
    ]
    for region in regions:
        box = region.bbox
        block = next(
            (
                b
                for b in blocks
                if b.type == FIGURE and b.bbox is not None and overlap_area(b.bbox, box) > 0.5 * area(box)
            ),
            None,
        )
        if block is None and unplaced:
            block = unplaced.pop(0)
            block.bbox = box
        if region.origin != FROM_MODEL:
            box = _grown(box, labels, config)
            if block is not None:
                block.bbox = box
        inside = [b for b in blocks if b is not block and b.bbox is not None and b.type not in FURNITURE_TYPES
                  and b.type not in (CAPTION, FIGURE) and not _is_caption(b)
                  and overlap_area(b.bbox, box) >= config.absorb_inside * area(b.bbox)
                  and all(len(x.text) <= config.max_label_chars and not x.mono for x in b.lines)]  # fmt: skip
        if block is None:
            block = Block(type=FIGURE, bbox=box)
            _insert(blocks, block, box, _caption_for(box, blocks, taken, tree, config))
        for label in inside:
            block.lines.extend(label.lines)
            blocks.remove(label)
        if inside:
            block.text = " ".join(x for x in [block.text, *(b.text for b in inside)] if x).strip()
        caption = _caption_for(box, blocks, taken, tree, config)
        if caption is not None:
            taken.add(id(caption))
            if caption.type != CAPTION:  # a centred caption the rules over lines read as a heading
                caption.type, caption.level = CAPTION, None
                caption.markdown = " ".join(caption.text.split())
        pixels = (
            int(box[0] * sx),
            int(box[1] * sy),
            min(image.width, int(box[2] * sx + 0.999)),
            min(image.height, int(box[3] * sy + 0.999)),
        )
        if pixels[2] - pixels[0] < 1 or pixels[3] - pixels[1] < 1:
            placed.notes.append("a figure of no pixels dropped")
            continue
        caption_text = " ".join(caption.text.split()) if caption else ""
        png = _png(image.crop(pixels))
        figure = Figure(tree.page, 0, box, pixels, region.origin, png=png, caption=caption_text)
        block.figure = figure
        captions[id(block)] = caption
    tree.blocks = blocks
    tree.numbered()
    ordered = [b for b in tree.blocks if b.figure is not None]
    for number, block in enumerate(ordered, 1):
        block.figure.number = number
        caption = captions.get(id(block))
        block.caption = caption.order if caption is not None else None
        placed.figures.append(block.figure)
    return placed


def _insert(blocks: list[Block], figure: Block, box: BBox, caption: Block | None) -> None:
    """`figure` into `blocks` in reading order: before its caption when that is below it, after it when
    above, else before the first body block below the figure's top that shares its column."""
    if caption is not None:
        at = blocks.index(caption)
        blocks.insert(at if caption.bbox[1] >= box[1] else at + 1, figure)
        return
    middle = (box[1] + box[3]) / 2
    for same_column in (True, False):
        for i, block in enumerate(blocks):
            b = block.bbox
            if b is None or block.type in FURNITURE_TYPES or b[1] < middle:
                continue
            if same_column and min(b[2], box[2]) - max(b[0], box[0]) <= 0:
                continue
            blocks.insert(i, figure)
            return
    last_body = max((i for i, b in enumerate(blocks) if b.type not in FURNITURE_TYPES), default=-1)
    blocks.insert(last_body + 1, figure)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def figure_file_name(stem: str, page: int, number: int) -> str:
    """`<stem>_p<N>_fig<K>.png`, the stem reduced to one safe file name (no folders, no leading dot)."""
    safe = re.sub(r"[^\w.+-]+", "_", Path(str(stem)).name).lstrip(".") or "page"
    return f"{safe[:120]}_p{int(page)}_fig{int(number)}.png"


def _alt(text: str) -> str:
    return re.sub(r"([\[\]\\])", r"\\\1", " ".join(text.split()))


def name_figures(tree: PageTree, stem: str, mode: str) -> str:
    """Sets each figure block's file name and Markdown for `mode` (`files`: `![caption](name)`, `inline`:
    a data: URI, `none`: no image, the block's Markdown empty) and returns the page's Markdown."""
    for block in tree.blocks:
        figure = block.figure
        if figure is None:
            continue
        figure.name = figure_file_name(stem, figure.page, figure.number) if mode == "files" else ""
        block.image = figure.name or None
        if mode == "none":
            block.markdown = ""
        else:
            target = figure.name if mode == "files" else figure.data_uri
            block.markdown = f"![{_alt(figure.caption)}]({target})"
    return page_markdown(tree)


def write_figures(figures: list[Figure], folder: str | os.PathLike) -> list[Path]:
    """Each named figure's PNG into `folder` (atomically: a temporary file renamed), its name checked to
    stay inside the folder. Returns the paths written; OSError as the caller's to report."""
    root = Path(folder)
    written = []
    for figure in figures:
        if not figure.name:
            continue
        name = Path(figure.name).name
        if name != figure.name or name.startswith("."):
            raise OSError(f"figure file name {figure.name!r} would leave the output folder")
        target = root / name
        tmp = root / f".{name}.tmp-{os.getpid()}"
        try:
            tmp.write_bytes(figure.png)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        written.append(target)
    return written


def save_page_figures(pages, folder: str | os.PathLike, stem: str, mode: str) -> None:
    """A document's figures written as the CLI writes them: each page's (`PageResult`s with `tree` and
    `figures`) named after the output `stem`, its Markdown rendered again, the PNGs written into `folder`
    (`files`). OSError as the caller's to report."""
    for page in pages:
        if not page.figures or page.tree is None:
            continue
        page.markdown = name_figures(page.tree, stem, mode)
        if mode == "files":
            write_figures(page.figures, folder)


__all__ = [
    "FIGURE_MODES",
    "FROM_DRAWING",
    "FROM_IMAGE",
    "FROM_INK",
    "FROM_MODEL",
    "Figure",
    "FiguresConfig",
    "PlacedFigures",
    "clean_regions",
    "figure_file_name",
    "find_regions",
    "name_figures",
    "normalise_figures_mode",
    "place_figures",
    "save_page_figures",
    "write_figures",
]
