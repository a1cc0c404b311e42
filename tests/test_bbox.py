"""Box geometry (`jocr.bbox`): the one clamp (inverted boxes sorted or dropped), area, overlap area, IoU and
union that the layout's steps and the layout scores use."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import pytest

from jocr.bbox import DROP, SORT, BoxEdges, area, clamp, iou, overlap_area, union


def test_clamp_keeps_what_is_on_the_page():
    assert clamp((-10, -5, 50, 900), 100, 200) == (0.0, 0.0, 50.0, 200.0)
    assert clamp((10, 20, 30, 40), 100, 200) == (10.0, 20.0, 30.0, 40.0)
    assert all(isinstance(v, float) for v in clamp((10, 20, 30, 40), 100, 200))
    assert clamp([-1, -1, 101, 201], 100, 200, inverted=DROP) == (0.0, 0.0, 100.0, 200.0)


def test_clamp_sorts_or_drops_an_inverted_box():
    assert clamp((50, 40, 10, 20), 100, 200) == (10.0, 20.0, 50.0, 40.0)
    assert clamp((500, 700, -20, -30), 400, 600, inverted=SORT) == (0, 0, 400, 600)
    assert clamp((50, 40, 10, 20), 100, 200, inverted=DROP) is None
    assert clamp((50, 20, 10, 40), 100, 200, inverted=DROP) is None  # inverted in x only
    assert clamp((10, 40, 50, 20), 100, 200, inverted=DROP) is None  # inverted in y only


@pytest.mark.parametrize("inverted", [SORT, DROP])
def test_clamp_gives_none_for_nothing_on_the_page_or_not_a_box(inverted):
    assert clamp((120, 10, 150, 20), 100, 200, inverted) is None  # wholly off the page
    assert clamp((10, 10, 10, 50), 100, 200, inverted) is None  # no width
    assert clamp((10, 50, 60, 50), 100, 200, inverted) is None  # no height
    assert clamp((float("nan"), 0, 10, 10), 100, 200, inverted) is None
    assert clamp((0, 0, 10, float("nan")), 100, 200, inverted) is None
    assert clamp(("a", 0, 10, 10), 100, 200, inverted) is None
    assert clamp((0, 0, 10), 100, 200, inverted) is None
    assert clamp(None, 100, 200, inverted) is None
    assert clamp((0, 0, math.inf, 10), 100, 200, inverted) == (0.0, 0.0, 100.0, 10.0)


def test_clamp_refuses_an_unknown_rule_for_inverted_boxes():
    with pytest.raises(ValueError, match="inverted must be one of sort, drop"):
        clamp((0, 0, 1, 1), 10, 10, inverted="flip")


def test_area_and_overlap():
    assert area((0, 0, 10, 5)) == 50
    assert area((10, 0, 0, 5)) == 0  # inverted: no area
    assert overlap_area((0, 0, 10, 10), (5, 5, 20, 20)) == 25
    assert overlap_area((5, 5, 20, 20), (0, 0, 10, 10)) == 25
    assert overlap_area((0, 0, 10, 10), (2, 2, 4, 4)) == 4  # one inside the other
    assert overlap_area((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0  # touching
    assert overlap_area((0, 0, 10, 10), (0, 20, 10, 30)) == 0.0  # apart in y only
    assert overlap_area((0, 0, 10, 10), (20, 0, 30, 10)) == 0.0  # apart in x only
    assert overlap_area((0, 0, math.inf, 10), (0, 10, math.inf, 20)) == 0.0  # touching, not NaN


def test_iou():
    assert iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == 50 / 150
    assert iou((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0
    assert iou((0, 0, 10, 10), (2, 2, 4, 4)) == 4 / 100
    assert iou((0, 0, 0, 0), (0, 0, 0, 0)) == 0.0  # no area at all


def test_union():
    assert union([(0, 0, 10, 10), None, (5, -5, 20, 8)]) == (0, -5, 20, 10)
    assert union([]) is None
    assert union([None]) is None


def test_box_edges_read_the_box():
    @dataclass
    class Thing(BoxEdges):
        box: tuple[float, float, float, float]

    thing = Thing((1.0, 2.0, 5.0, 10.0))
    assert (thing.x0, thing.y0, thing.x1, thing.y1) == (1.0, 2.0, 5.0, 10.0)
    assert (thing.cx, thing.cy) == (3.0, 6.0)
    assert [f.name for f in fields(thing)] == ["box"]  # the base adds no dataclass fields
