"""Blocks drawn on a page image: boxes scaled from points to pixels, clamped to the page, never outside it."""

from __future__ import annotations

from PIL import Image

from jocr.layout.draw import COLOURS, clamp_box, draw_tree
from jocr.layout.tree import BLOCK_TYPES, Block, PageTree


def test_every_type_has_a_colour_and_boxes_are_clamped():
    assert set(COLOURS) == set(BLOCK_TYPES)
    assert clamp_box((-10, -5, 50, 900), 100, 200) == (0.0, 0.0, 50.0, 200.0)
    assert clamp_box((120, 10, 150, 20), 100, 200) is None  # wholly off the page
    assert clamp_box((50, 40, 10, 20), 100, 200) == (10.0, 20.0, 50.0, 40.0)


def test_blocks_are_drawn_where_they_are_in_pixels():
    tree = PageTree(
        100,
        200,
        blocks=[
            Block("title", "T", bbox=(10, 10, 50, 30)),
            Block("paragraph", "x", bbox=(-40, 150, 400, 900)),
        ],
    )
    image = draw_tree(Image.new("RGB", (200, 400), "white"), tree)
    assert image.size == (200, 400)
    assert image.getpixel((60, 40)) != (255, 255, 255)  # inside the title's box, at twice its point position
    assert image.getpixel((100, 350)) != (255, 255, 255)  # the paragraph, clamped to the page
    assert image.getpixel((150, 10)) == (255, 255, 255)  # nothing drawn outside the blocks
