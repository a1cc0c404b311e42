"""The document tree's JSON form follows its published schema, from every way a page is read; Markdown and
HTML leave furniture out while the tree keeps it."""

from __future__ import annotations

import json

import jsonschema
import pytest
from page_fixtures import SECOND, WRAPPED, Text, page_layer, paragraph

from jocr.layout.answer_tree import anchored_tree
from jocr.layout.grounding_tree import markdown_tree
from jocr.layout.line_rules import lines_tree
from jocr.layout.render import page_html, page_markdown
from jocr.layout.tree import BLOCK_TYPES, SCHEMA_PATH, TREE_VERSION, Block, PageTree, tree_schema
from jocr.lines.types import RAPIDOCR, TESSERACT, Line

ANCHOR = "\n".join(
    [
        "page 600x800",
        "@1 100,10 Running head",
        *(f"@{i} 100,{100 + 20 * i} body line {i}" for i in range(2, 8)),
        "@8 480,975 7",
    ]
)


def test_the_schema_is_valid_and_names_every_block_type():
    jsonschema.Draft202012Validator.check_schema(tree_schema())
    assert tree_schema()["$defs"]["block"]["properties"]["type"]["enum"] == list(BLOCK_TYPES)
    assert json.loads(SCHEMA_PATH.read_text())["properties"]["version"]["pattern"].startswith("^1")
    assert TREE_VERSION.startswith("1.")


def trees() -> list[PageTree]:
    layer = page_layer([Text(72, 40, "Chapter 2", 9)] + paragraph(72, 100, WRAPPED + SECOND * 12, pitch=13))
    raw = (
        "<|ref|>title<|/ref|><|det|>[[10, 20, 300, 40]]<|/det|>\n# Report\n\n"
        "<|ref|>text<|/ref|><|det|>[[10, 50, 900, 90]]<|/det|>\nSome text.\n\n"
        "<|ref|>page_number<|/ref|><|det|>[[480, 970, 520, 990]]<|/det|>\n7"
    )
    return [
        lines_tree(layer.lines, layer.width, layer.height),
        anchored_tree(["@1\n\n# @2\n\n@3 @4"], [ANCHOR], ["length"]),
        markdown_tree(raw, 600, 800),
        markdown_tree("# Plain\n\nno boxes", 600, 800),
    ]


@pytest.mark.parametrize("index", range(4))
def test_every_tree_validates(index):
    tree = trees()[index]
    data = tree.to_dict()
    jsonschema.validate(data, tree_schema())
    assert [b["order"] for b in data["blocks"]] == list(range(len(data["blocks"])))
    json.dumps(data)  # plain data


def test_furniture_stays_in_the_tree_and_out_of_markdown_and_html():
    lines, anchored, grounded, _ = trees()
    assert [b.text for b in lines.blocks if b.furniture] == ["Chapter 2"]
    assert [(b.type, b.text) for b in anchored.blocks if b.furniture] == [
        ("header", "Running head"),
        ("page_number", "7"),
    ]
    assert [(b.type, b.text) for b in grounded.blocks if b.furniture] == [("page_number", "7")]
    for tree in (lines, anchored, grounded):
        furniture = [b.text for b in tree.blocks if b.furniture]
        assert not any(text in page_markdown(tree).split("\n") for text in furniture)
        assert not any(f">{text}<" in page_html(tree) for text in furniture)
    assert page_markdown(grounded) == "# Report\n\nSome text."
    assert grounded.blocks[0].bbox == (6, 16, 180, 32)  # the grounding box in pixels of the 600 x 800 page


def test_html_escapes_text_and_groups_lists():
    items = [Block("list_item", "a < b", marker="-"), Block("list_item", "c", marker="-")]
    tree = PageTree(600, 800, blocks=[*items, Block("paragraph", "x & y")]).numbered()
    assert page_html(tree) == (
        '<section class="page" data-page="1">\n<ul>\n<li>a &lt; b</li>\n<li>c</li>\n</ul>\n'
        "<p>x &amp; y</p>\n</section>"
    )


@pytest.mark.parametrize("index", range(4))
def test_a_tree_reads_back_from_its_json(index):
    tree = trees()[index]
    data = json.loads(json.dumps(tree.to_dict()))
    assert PageTree.from_dict(data).to_dict() == data
    with pytest.raises(ValueError, match="version 2.0.0"):
        PageTree.from_dict({**data, "version": "2.0.0"})


def test_an_ocr_pages_tree_validates_with_its_lines_marked_ocr():
    lines = [
        Line("An Improved Environment", (100, 50, 500, 90), size=40, confidence=0.9, source=RAPIDOCR),
        *(
            Line(
                f"body line {k} of the page",
                (100, 120 + 30 * k, 500, 142 + 30 * k),
                size=22,
                confidence=0.95,
                source=TESSERACT,
            )
            for k in range(6)
        ),
    ]
    data = lines_tree(lines, 600, 800).to_dict()
    jsonschema.validate(data, tree_schema())
    assert {line["source"] for b in data["blocks"] for line in b["lines"]} == {"ocr"}
    assert all(line["confidence"] > 0 for b in data["blocks"] for line in b["lines"])
