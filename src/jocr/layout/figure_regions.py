"""Where a page's figures are: candidate regions from a PDF page's drawing objects (images, vector paths,
included graphics) and from a page image's ink that no text line covers (docs/layout.md, "Figures").

Candidates are only proposals: `jocr.layout.figures` cleans them (clamps, drops, merges, caps) and decides
against the page's text lines which become figure blocks. Boxes here are `[x0, y0, x1, y1]`, top-left
origin: PDF points of the page as rendered for PDF objects, pixels for ink regions.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageFilter

from jocr.bbox import BBox
from jocr.lines.textlayer import page_mapper

# Where a region came from.
FROM_IMAGE = "image"  # a PDF image object (or a cluster holding one)
FROM_DRAWING = "drawing"  # a cluster of PDF vector paths or an included graphic (form XObject)
FROM_INK = "ink"  # ink of a page image that no text line covers
FROM_MODEL = "model"  # a grounding box the model labelled image / figure / chart


@dataclass
class Region:
    """A candidate figure: its box, where it came from, and for PDF drawings whether any path is curved or
    diagonal (`drawn`: a rectilinear cluster of rules and frames is more likely a table or a text box)."""

    bbox: BBox
    origin: str
    drawn: bool = True
    objects: int = 1
    paths: list = field(default_factory=list, repr=False, compare=False)  # PDF path handles, while read


@dataclass
class RegionLimits:
    """Limits on reading a PDF page's drawing objects (a page of thousands of tiny paths stays cheap)."""

    max_objects: int = 5000  # non-text objects read per page; the rest are left out (noted)
    max_segments: int = 256  # path segments looked at per path to tell curves and diagonals
    max_page_segments: int = 20000  # ... and per page (PDFium answers each one through a C call)
    min_side_pt: float = 12.0  # clusters smaller than this on a side are no figure: not looked into
    merge_gap_pt: float = 6.0  # objects closer than this are one figure


def pdf_regions(
    page, limits: RegionLimits | None = None
) -> tuple[list[Region], str | None, tuple[float, float]]:
    """Candidate regions of a `pypdfium2.PdfPage` (the caller holds the PDFium lock): its top-level image
    objects, vector paths and form XObjects (an included graphic) merged into clusters, in points of the
    page as rendered (rotation and crop box applied). Returns (regions, note, (width, height) of the page
    in points): the note says when objects were left out. Never raises: a page PDFium cannot read has no
    regions."""
    import pypdfium2.raw as raw

    limits = limits or RegionLimits()
    try:
        width, height = page.get_size()
    except Exception:
        return [], None, (0.0, 0.0)
    if not (width > 0 and height > 0):
        return [], None, (0.0, 0.0)
    to_page = page_mapper(page, width, height)
    found: list[Region] = []
    note = None
    budget = limits.max_page_segments
    try:
        objects = page.get_objects(max_depth=0)
        for obj in objects:
            kind = obj.type
            if kind not in (raw.FPDF_PAGEOBJ_IMAGE, raw.FPDF_PAGEOBJ_PATH, raw.FPDF_PAGEOBJ_FORM):
                continue
            if len(found) >= limits.max_objects:
                note = f"more than {limits.max_objects} drawing objects: the rest left out of figures"
                break
            try:
                left, bottom, right, top = obj.get_bounds()
            except Exception:  # an object PDFium cannot bound draws nothing we can cut
                continue
            xa, ya = to_page(left, bottom)
            xb, yb = to_page(right, top)
            box = (min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb))
            if kind == raw.FPDF_PAGEOBJ_IMAGE:
                found.append(Region(box, FROM_IMAGE))
            elif kind == raw.FPDF_PAGEOBJ_FORM:
                if _form_draws(raw, obj.raw):
                    found.append(Region(box, FROM_DRAWING, drawn=True))
            else:
                thin = box[2] - box[0] < 1.0 or box[3] - box[1] < 1.0  # a rule: no curve or diagonal
                found.append(Region(box, FROM_DRAWING, drawn=False, paths=[] if thin else [obj.raw]))
    except Exception:  # a broken content stream: what was read so far stands
        note = note or "the page's drawing objects could not all be read"
    regions = cluster(found, limits.merge_gap_pt)
    # Whether a cluster is drawn (a curve or a diagonal in one of its paths), looked at only for clusters
    # large enough to be figures, and only until one path is: PDFium answers each segment through a call.
    for region in regions:
        x0, y0, x1, y1 = region.bbox
        if not region.drawn and min(x1 - x0, y1 - y0) >= limits.min_side_pt:
            for path in region.paths:
                if budget <= 0:  # a page of heavy vector art: taken as drawn without looking further
                    region.drawn = True
                    break
                drawn, looked = _path_drawn(raw, path, limits.max_segments)
                budget -= looked
                if drawn:
                    region.drawn = True
                    break
        region.paths = []
    return regions, note, (width, height)


def _form_draws(raw, form) -> bool:
    """Whether a form XObject holds anything but text (an included picture or drawing)."""
    count = raw.FPDFFormObj_CountObjects(form)
    for i in range(min(count, 256)):
        child = raw.FPDFFormObj_GetObject(form, i)
        if child and raw.FPDFPageObj_GetType(child) != raw.FPDF_PAGEOBJ_TEXT:
            return True
    return False


def _path_drawn(raw, path, max_segments: int) -> tuple[bool, int]:
    """(whether a path has a curve or a diagonal line among its first `max_segments` segments, how many
    segments were looked at)."""
    count = raw.FPDFPath_CountSegments(path)
    x, y = ctypes.c_float(), ctypes.c_float()
    last = None
    for i in range(min(count, max_segments)):
        segment = raw.FPDFPath_GetPathSegment(path, i)
        if not segment:
            continue
        kind = raw.FPDFPathSegment_GetType(segment)
        if kind == raw.FPDF_SEGMENT_BEZIERTO:
            return True, i + 1
        if not raw.FPDFPathSegment_GetPoint(segment, x, y):
            continue
        point = (x.value, y.value)
        if kind == raw.FPDF_SEGMENT_LINETO and last is not None:
            if abs(point[0] - last[0]) > 0.5 and abs(point[1] - last[1]) > 0.5:
                return True, i + 1
        last = point
    return False, min(count, max_segments)


def _near(a: BBox, b: BBox, gap: float) -> bool:
    return a[0] - gap <= b[2] and b[0] - gap <= a[2] and a[1] - gap <= b[3] and b[1] - gap <= a[3]


def cluster(regions: list[Region], gap: float) -> list[Region]:
    """Regions merged while any two are within `gap` of each other: one region per cluster, its box the
    union, an image's origin winning over a drawing's, drawn when any member is."""
    pending = sorted(regions, key=lambda r: r.bbox[0])
    merged = True
    while merged:
        merged = False
        out: list[Region] = []
        for region in pending:
            for other in out:
                if _near(region.bbox, other.bbox, gap):
                    a, b = region.bbox, other.bbox
                    other.bbox = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    if region.origin == FROM_IMAGE:
                        other.origin = FROM_IMAGE
                    other.drawn = other.drawn or region.drawn
                    other.objects += region.objects
                    other.paths.extend(region.paths)
                    merged = True
                    break
            else:
                out.append(
                    Region(region.bbox, region.origin, region.drawn, region.objects, list(region.paths))
                )
        pending = out
    return pending


def ink_regions(
    image: Image.Image, text_boxes: list[BBox], cells: int = 160, darker: int = 48
) -> list[Region]:
    """Regions of `image` (pixels) holding ink that no text line covers: the page is cut into cells
    (`cells` along its longer side), a cell holds ink when a pixel in it is `darker` levels below the
    page's local background (a wide blur, so photos' shading is not ink), cells under `text_boxes`
    (pixels, grown by a cell) are cleared, and touching cells (8 neighbours, one empty cell bridged) form
    regions. Size rules are the caller's."""
    width, height = image.size
    if width < 8 or height < 8:
        return []
    cell = max(2, int(max(width, height) / cells + 0.999))
    small = image.convert("L").resize((max(1, width // 2), max(1, height // 2)), Image.Resampling.BOX)
    background = small.filter(ImageFilter.BoxBlur(max(4, cell)))
    ink = (np.asarray(background, dtype=np.int16) - np.asarray(small, dtype=np.int16)) > darker
    half = max(1, cell // 2)  # the cell size in the half-size image
    rows, cols = ink.shape[0] // half, ink.shape[1] // half
    if rows < 2 or cols < 2:
        return []
    grid = ink[: rows * half, : cols * half].reshape(rows, half, cols, half).any(axis=(1, 3))
    for x0, y0, x1, y1 in text_boxes:
        c0, c1 = int(x0 / (2 * half)) - 1, int(x1 / (2 * half)) + 2
        r0, r1 = int(y0 / (2 * half)) - 1, int(y1 / (2 * half)) + 2
        grid[max(0, r0) : max(0, r1), max(0, c0) : max(0, c1)] = False
    # one empty cell between inked cells still joins them (a drawing's strokes, a photo's flat areas)
    grown = grid.copy()
    grown[1:, :] |= grid[:-1, :]
    grown[:-1, :] |= grid[1:, :]
    grown[:, 1:] |= grid[:, :-1]
    grown[:, :-1] |= grid[:, 1:]
    found = []
    unit = 2 * half
    for r0, c0, r1, c1, count in _components(grown):
        cells = grid[r0 : r1 + 1, c0 : c1 + 1]
        rows, cols = np.flatnonzero(cells.any(axis=1)), np.flatnonzero(cells.any(axis=0))
        if not len(rows):
            continue
        # the inked cells' extent, not the bridged one (a cell wider on each side)
        r0, r1, c0, c1 = r0 + rows[0], r0 + rows[-1], c0 + cols[0], c0 + cols[-1]
        box = (float(c0 * unit), float(r0 * unit), float((c1 + 1) * unit), float((r1 + 1) * unit))
        found.append(Region(box, FROM_INK, drawn=not _ruled(grid[r0 : r1 + 1, c0 : c1 + 1]), objects=count))
    return found


def _ruled(cells: np.ndarray) -> bool:
    """Whether a region's ink is rules only: nearly all its inked cells lie on rows or columns inked over
    at least 80% of the region (a ruled table or a frame once its text is cleared)."""
    inked = int(cells.sum())
    if inked == 0:
        return True
    rows = cells.mean(axis=1) >= 0.8
    cols = cells.mean(axis=0) >= 0.8
    on_rules = cells[rows, :].sum() + cells[:, cols].sum() - cells[np.ix_(rows, cols)].sum()
    return bool(on_rules >= 0.85 * inked)


def _components(grid: np.ndarray) -> list[tuple[int, int, int, int, int]]:
    """Bounding boxes (row0, col0, row1, col1, cells) of the 8-connected components of a boolean grid:
    runs of each row joined to the runs of the row above that touch them (union-find over runs)."""
    parent: list[int] = []

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    runs: list[tuple[int, int, int]] = []  # (row, start, end) inclusive
    previous: list[int] = []
    for r in range(grid.shape[0]):
        row = grid[r]
        if not row.any():
            previous = []
            continue
        edges = np.flatnonzero(np.diff(np.concatenate(([0], row.view(np.int8), [0]))))
        current = []
        for start, stop in zip(edges[::2], edges[1::2]):
            index = len(runs)
            runs.append((r, int(start), int(stop) - 1))
            parent.append(index)
            for p in previous:
                _, ps, pe = runs[p]
                if ps <= stop and start - 1 <= pe:  # touching, diagonals included
                    a, b = find(p), find(index)
                    if a != b:
                        parent[b] = a
            current.append(index)
        previous = current
    boxes: dict[int, list[int]] = {}
    for i, (r, s, e) in enumerate(runs):
        root = find(i)
        box = boxes.get(root)
        if box is None:
            boxes[root] = [r, s, r, e, e - s + 1]
        else:
            box[0], box[1] = min(box[0], r), min(box[1], s)
            box[2], box[3] = max(box[2], r), max(box[3], e)
            box[4] += e - s + 1
    return [tuple(b) for b in boxes.values()]
