"""Blocks drawn on a page image: boxes scaled from points to pixels, clamped to the page, never outside it."""

from __future__ import annotations

from PIL import Image

from jocr.layout.draw import COLOURS, draw_tree
from jocr.layout.tree import BLOCK_TYPES, Block, PageTree


def test_every_type_has_a_colour():
    assert set(COLOURS) == set(BLOCK_TYPES)


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


def test_inverted_off_page_and_not_finite_boxes_never_raise():
    tree = PageTree(
        100,
        200,
        blocks=[
            Block("title", "T", bbox=(50, 30, 10, 10)),  # inverted: drawn with its corners in order
            Block("paragraph", "x", bbox=(float("nan"), 0, 1e308, float("inf"))),
            Block("paragraph", "y", bbox=(500, 500, 600, 600)),  # off the page: not drawn
        ],
    )
    image = draw_tree(Image.new("RGB", (200, 400), "white"), tree)
    assert image.size == (200, 400)
    assert image.getpixel((60, 40)) != (255, 255, 255)
    assert image.getpixel((199, 399)) == (255, 255, 255)


def test_each_box_carries_its_number_in_reading_order():
    first, second = (
        Block("paragraph", "a", bbox=(10, 40, 90, 60)),
        Block("paragraph", "b", bbox=(10, 120, 90, 140)),
    )

    def tab(blocks, box):  # the number's tab above a box's top-left corner, in pixels of a 200 x 400 image
        image = draw_tree(Image.new("RGB", (200, 400), "white"), PageTree(100, 200, blocks=blocks))
        return image.crop((2 * box[0], 2 * box[1] - 11, 2 * box[0] + 11, 2 * box[1])).tobytes()

    blank = Image.new("RGB", (11, 11), "white").tobytes()
    assert tab([first, second], first.bbox) != blank  # a tab is drawn
    # the same box under "1" and under "2": the tab differs, so the number is the block's place in order
    assert tab([first, second], first.bbox) == tab([first, second], first.bbox)
    assert tab([first, second], first.bbox) != tab([second, first], first.bbox)
    assert tab([first, second], first.bbox) == tab([second, first], second.bbox)
