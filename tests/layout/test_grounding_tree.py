"""An unanchored page's tree from a grounding answer: blocks typed by their labels and boxed by their boxes,
and a model's bad boxes (off the page, inverted, of no area, not numbers) or an answer cut off inside a tag
clamped or dropped with a note on the tree, never a traceback, never tag debris in the Markdown."""

from __future__ import annotations

import jsonschema
import pytest

from jocr.layout.draw import box_problems
from jocr.layout.grounding_tree import markdown_tree
from jocr.layout.render import page_markdown
from jocr.layout.tree import PageTree, tree_schema

HEAD = "<|ref|>title<|/ref|><|det|>[[10, 20, 300, 40]]<|/det|>\n# Report\n\n"
TEXT = "<|ref|>text<|/ref|><|det|>[[10, 50, 900, 90]]<|/det|>\nSome text."


def _valid(tree: PageTree) -> dict:
    data = tree.to_dict()
    jsonschema.validate(data, tree_schema())
    assert PageTree.from_dict(data).to_dict() == data
    return data


def test_labels_type_the_blocks_and_boxes_place_them():
    tree = markdown_tree(HEAD + TEXT, 600, 800)
    assert [(b.type, b.text, b.bbox) for b in tree.blocks] == [
        ("title", "Report", (6, 16, 180, 32)),
        ("paragraph", "Some text.", (6, 40, 540, 72)),
    ]
    assert tree.notes == [] and "notes" not in _valid(tree) and box_problems(tree) == []


@pytest.mark.parametrize(
    "tail",
    [
        "<|ref|>text<|/ref|><|det|>[[10, 50, 9",  # mid-box
        "<|ref|>text<|/ref|><|det|>",  # right after the box opened
        "<|ref|>text<|/ref|>",  # the label closed, no box yet
        "<|ref|>te",  # mid-label
        "<|det|>[[1, 2",  # a box without a label
        "<|",  # half a tag
    ],
)
def test_an_answer_cut_off_inside_a_tag_drops_the_tag_with_a_note(tail):
    tree = markdown_tree(HEAD + tail, 600, 800, finish_reason="length")
    assert [(b.type, b.text) for b in tree.blocks] == [("title", "Report")]
    assert page_markdown(tree) == "# Report"
    (note,) = tree.notes
    assert note.startswith("the answer ends inside a grounding tag")
    assert _valid(tree)["notes"] == [note]


def test_text_after_the_last_box_is_kept_when_no_tag_is_cut():
    tree = markdown_tree(HEAD + TEXT + "\n\nMore text, no tag.", 600, 800)
    assert page_markdown(tree) == "# Report\n\nSome text.\n\nMore text, no tag."
    assert tree.notes == []


def test_a_box_off_the_page_is_clamped_and_an_inverted_one_put_in_order_with_notes():
    raw = (
        "<|ref|>text<|/ref|><|det|>[[-50, -20, 5000, 1e9]]<|/det|>\nOutside.\n\n"
        "<|ref|>text<|/ref|><|det|>[[900, 900, 100, 100]]<|/det|>\nInverted."
    )
    tree = markdown_tree(raw, 600, 800)
    assert [b.bbox for b in tree.blocks] == [(0, 0, 600, 800), (60, 80, 540, 720)]
    assert tree.notes == [
        "grounding box 1 (text): outside the page, clamped",
        "grounding box 2 (text): inverted, corners put in order",
    ]
    assert box_problems(tree) == []
    _valid(tree)


def test_boxes_of_no_area_or_not_numbers_are_dropped_with_notes():
    raw = (
        "<|ref|>image<|/ref|><|det|>[[100, 100, 100, 100]]<|/det|>\n\n"
        "<|ref|>text<|/ref|><|det|>[[100, 100, 100, 300]]<|/det|>\nFlat.\n\n"
        "<|ref|>text<|/ref|><|det|>[[nan, 1, 2, 3], [a, b]]<|/det|>\nNo numbers.\n\n"
        "<|ref|>text<|/ref|><|det|>[[10, 10, 20, 20], [30, 30, 30, 40]]<|/det|>\nOne of two."
    )
    tree = markdown_tree(raw, 999, 999)
    # the figure had nothing but its box: gone; text blocks stay, without a box where none was usable
    assert [(b.type, b.text, b.bbox) for b in tree.blocks] == [
        ("paragraph", "Flat.", None),
        ("paragraph", "No numbers.", None),
        ("paragraph", "One of two.", (10, 10, 20, 20)),
    ]
    assert tree.notes == [
        "grounding box 1 (image): of no area, dropped",
        "grounding box 1 (image): a figure without a box, left out",
        "grounding box 2 (text): of no area, dropped",
        "grounding box 3 (text): not four numbers, dropped",
        "grounding box 4 (text): of no area, dropped",
    ]
    # a block without a box is reported, not drawn somewhere made up
    assert [p.split(":")[1].strip() for p in box_problems(tree)] == ["no box", "no box"]
    _valid(tree)


def test_a_huge_answer_of_bad_boxes_never_raises():
    raw = "".join(
        f"<|ref|>text<|/ref|><|det|>[[{v}, {v}, 1e308, -1e308]]<|/det|>\nx{v}\n\n" for v in range(300)
    )
    tree = markdown_tree(
        raw + "<|ref|>image<|/ref|><|det|>[[0, 0, 1e309", 10**6, 10**6, finish_reason="length"
    )
    # the first box, [0, 0, 999, 0] once clamped, has no area; every other one is clamped inside the page
    assert len(tree.blocks) == 300 and tree.blocks[0].bbox is None
    assert box_problems(tree) == ["block 1 (paragraph): no box"]
    assert tree.notes[0].startswith("the answer ends inside a grounding tag")
