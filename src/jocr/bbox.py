"""Box geometry: boxes are (x0, y0, x1, y1) tuples, top-left origin, in one unit (PDF points or pixels).
The one clamp to a page, area, overlap area, IoU and union that the layout's steps and the layout scores
share, and `BoxEdges`, the edge and centre properties of the objects that carry a box. Plain Python only:
this module sits at the bottom of the dependency order with config.py."""

from __future__ import annotations

import math

BBox = tuple[float, float, float, float]  # (x0, y0, x1, y1); a well-formed box has x0 <= x1 and y0 <= y1

# What `clamp` does with an inverted box (x1 < x0 or y1 < y0).
SORT = "sort"  # put its corners in order: a box whose corners were given the other way round
DROP = "drop"  # drop it: a detector's inverted box is noise, not a box read backwards
INVERTED = (SORT, DROP)


def clamp(box, width: float, height: float, inverted: str = SORT) -> BBox | None:
    """`box` clamped to a `width` x `height` page (x to 0..width, y to 0..height), as floats; an inverted
    box has its corners sorted or is dropped (`inverted`: `SORT` or `DROP`). None when `box` is not four
    numbers, has a NaN, is inverted under `DROP`, or has nothing left on the page (no width or no height)."""
    if inverted not in INVERTED:
        raise ValueError(f"inverted must be one of {', '.join(INVERTED)}, not {inverted!r}")
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        return None
    if any(math.isnan(v) for v in (x0, y0, x1, y1)):
        return None
    x0, x1 = min(max(x0, 0.0), width), min(max(x1, 0.0), width)
    y0, y1 = min(max(y0, 0.0), height), min(max(y1, 0.0), height)
    if inverted == SORT:
        x0, x1 = sorted((x0, x1))
        y0, y1 = sorted((y0, y1))
    return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else None


def area(box: BBox) -> float:
    """The area of `box`; 0 for an inverted or empty one."""
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def holds_point(box: BBox, x: float, y: float) -> bool:
    """Whether the point (x, y) lies in `box` (its edges included)."""
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def overlap_area(a: BBox, b: BBox) -> float:
    """The area `a` and `b` share (0 when they only touch or are apart)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def iou(a: BBox, b: BBox) -> float:
    """Intersection over union of `a` and `b`: 0 when they do not overlap or their union has no area."""
    inter = overlap_area(a, b)
    if inter <= 0:
        return 0.0
    union_area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union_area if union_area > 0 else 0.0


def union(boxes) -> BBox | None:
    """The smallest box holding all `boxes` (None entries skipped; None when there are none)."""
    boxes = [b for b in boxes if b is not None]
    if not boxes:
        return None
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


class BoxEdges:
    """`x0`, `y0`, `x1`, `y1` and the centre `cx`, `cy` of an object's `box`, as properties: a base of the
    dataclasses that carry one (source lines, glyphs, formula items, table pieces)."""

    __slots__ = ()
    box: BBox

    @property
    def x0(self) -> float:
        return self.box[0]

    @property
    def y0(self) -> float:
        return self.box[1]

    @property
    def x1(self) -> float:
        return self.box[2]

    @property
    def y1(self) -> float:
        return self.box[3]

    @property
    def cx(self) -> float:
        return (self.box[0] + self.box[2]) / 2

    @property
    def cy(self) -> float:
        return (self.box[1] + self.box[3]) / 2
