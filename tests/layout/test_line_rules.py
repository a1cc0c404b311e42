"""The tree from a page's text-layer lines alone, on small real PDFs: the misfires users saw (every line its
own paragraph, body lines as headings, running headers and page numbers as headings, code unfenced,
footnotes in the body, tables of contents as tables, a last row of numbers, a title in a narrow margin or
a year on the last line taken for furniture) each written as a page."""

from __future__ import annotations

from page_fixtures import SECOND, WRAPPED, Text, page_layer, paragraph

from jocr.layout.line_rules import lines_tree
from jocr.layout.render import page_markdown


def tree_of(lines: list[Text]):
    layer = page_layer(lines)
    return lines_tree(layer.lines, layer.width, layer.height)


def markdown_of(lines: list[Text]) -> str:
    return page_markdown(tree_of(lines))


def test_a_paragraph_wrapped_over_lines_is_one_paragraph():
    page = paragraph(72, 100, WRAPPED) + paragraph(72, 160, SECOND)
    md = markdown_of(page)
    assert md == " ".join(WRAPPED) + "\n\n" + " ".join(SECOND)
    # a first-line indent starts the next paragraph even without extra space
    page = paragraph(72, 100, WRAPPED) + [Text(90, 148, SECOND[0])] + paragraph(72, 160, SECOND[1:])
    assert markdown_of(page).count("\n\n") == 1


def test_headings_from_size_and_weight_never_a_body_line():
    page = (
        [Text(72, 80, "Annual Review of the Committee", 20, "bold")]
        + [Text(72, 120, "1 Introduction", 14, "bold")]
        + paragraph(72, 140, WRAPPED)
        + [Text(72, 200, "1.1 Scope", 12, "bold")]
        + paragraph(72, 220, SECOND)
    )
    tree = tree_of(page)
    assert [(b.type, b.level) for b in tree.blocks] == [
        ("title", 1), ("heading", 2), ("paragraph", None), ("heading", 3), ("paragraph", None)
    ]  # fmt: skip
    md = page_markdown(tree)
    assert md.startswith("# Annual Review of the Committee\n\n## 1 Introduction\n\nThe committee met")
    assert "### 1.1 Scope" in md and md.count("#") == 1 + 2 + 3


def test_running_header_and_page_number_are_furniture_not_headings():
    page = (
        [Text(72, 40, "Chapter 2: Methods of Review", 9)]
        + paragraph(72, 100, WRAPPED + SECOND * 10, pitch=13)
        + [Text(300, 750, "8", 9)]
    )
    tree = tree_of(page)
    kinds = {b.text: b.type for b in tree.blocks if b.furniture}
    assert kinds == {"Chapter 2: Methods of Review": "header", "8": "page_number"}
    md = page_markdown(tree)
    assert "Chapter 2" not in md and "# 8" not in md and not md.rstrip().endswith("8")
    assert "#" not in md  # the body is paragraphs


def test_a_title_in_a_half_inch_top_margin_stays():
    page = [Text(72, 50, "Quarterly Report", 24, "bold")] + paragraph(
        72, 110, WRAPPED + SECOND * 12, pitch=13
    )
    tree = tree_of(page)
    assert tree.blocks[0].type == "title" and not any(b.furniture for b in tree.blocks)
    assert page_markdown(tree).startswith("# Quarterly Report\n\n")


def test_a_year_alone_on_the_last_line_stays():
    body = WRAPPED + SECOND * 23 + ["the first reports were published in"]
    page = paragraph(72, 80, body, pitch=13) + [Text(72, 80 + 13 * len(body), "2019")]
    assert 80 + 13 * len(body) > 0.9 * 792  # in the bottom band
    md = markdown_of(page)
    assert md.endswith("published in 2019")


def test_a_last_table_row_of_numbers_stays():
    page = paragraph(72, 80, WRAPPED + SECOND * 12, pitch=13)
    rows = [("Region", "2021", "2022", "2023"), ("North", "12", "15", "19"), ("Total", "40", "52", "61")]
    for r, row in enumerate(rows):
        page += [Text(72 + 120 * c, 690 + 16 * r, cell) for c, cell in enumerate(row)]
    page += [Text(72 + 120 * c, 690 + 16 * 3, cell) for c, cell in enumerate(("", "31", "44", "58")) if cell]
    tree = tree_of(page)
    table = [b for b in tree.blocks if b.type == "table"]
    assert len(table) == 1 and "<td>58</td>" in table[0].html
    assert not any(b.furniture for b in tree.blocks)


def test_code_is_fenced_with_its_indentation():
    code = [
        "def total(items):",
        "    result = 0",
        "    for item in items:",
        "        result += item",
        "    return result",
    ]
    page = paragraph(72, 100, WRAPPED) + paragraph(72, 170, code, font="mono")
    md = markdown_of(page)
    assert "```\ndef total(items):\n    result = 0\n    for item in items:\n        result += item\n" in md


def test_footnotes_stand_apart_from_the_body():
    page = paragraph(72, 100, WRAPPED + SECOND * 8, pitch=13)
    page += [
        Text(72, 700, "1 The figures exclude part-time staff.", 8),
        Text(72, 712, "2 See the appendix.", 8),
    ]
    tree = tree_of(page)
    notes = [b.text for b in tree.blocks if b.type == "footnote"]
    assert notes == ["1 The figures exclude part-time staff.", "2 See the appendix."]
    assert tree.blocks[-1].type == "footnote"


def test_a_table_of_contents_is_a_list_not_a_table():
    entries = [
        ("1 Introduction", "3", 0),
        ("1.1 Scope", "4", 1),
        ("1.2 Method", "6", 1),
        ("2 Results", "9", 0),
        ("3 Discussion", "14", 0),
    ]
    page = [Text(72, 80, "Contents", 16, "bold")]
    for i, (title, number, depth) in enumerate(entries):
        page += [Text(72 + 18 * depth, 110 + 14 * i, title), Text(520, 110 + 14 * i, number)]
    md = markdown_of(page)
    assert "<table>" not in md
    assert md == (
        "# Contents\n\n- 1 Introduction 3\n  - 1.1 Scope 4\n  - 1.2 Method 6\n"
        "- 2 Results 9\n- 3 Discussion 14"
    )


def test_captions_and_list_items():
    page = paragraph(72, 100, WRAPPED) + [
        Text(72, 170, "Figure 3: Staff numbers by department."),
        Text(72, 200, "• first point of the list"),
        Text(72, 212, "• second point of the list"),
    ]
    tree = tree_of(page)
    assert [b.type for b in tree.blocks] == ["paragraph", "caption", "list_item", "list_item"]
    assert page_markdown(tree).endswith(
        "Figure 3: Staff numbers by department.\n\n- first point of the list\n- second point of the list"
    )


def test_two_columns_read_column_by_column():
    left = [f"left column line {i} of the text here" for i in range(12)]
    right = [f"right column line {i} of the text here" for i in range(12)]
    page = [Text(72, 70, "A Two Column Paper", 18, "bold")]
    page += paragraph(72, 110, left) + paragraph(320, 110, right)
    md = markdown_of(page)
    assert md.index("left column line 11") < md.index("right column line 0")
    assert md.startswith("# A Two Column Paper\n\nleft column line 0")


def test_a_line_with_a_drop_cap_is_read():
    page = [Text(72, 120, "O", 36), Text(100, 100, "ver the past three decades the committee has met")]
    page += paragraph(
        100, 112, ["every spring to review the proposals of each", "department of the institution."]
    )
    tree = tree_of(page)
    # the drop cap makes its line's box three lines tall: still a line of text, not a rotated stamp
    md = page_markdown(tree)
    assert "ver the past three decades the committee has met every spring" in md and "\n" not in md


def test_running_lines_repeated_across_pages_are_furniture_where_one_page_cannot_tell():
    from jocr.layout.line_rules import document_trees

    pages = []
    for number, word in ((3, "first"), (4, "second"), (5, "third")):
        page = [Text(72, 90, f"Chapter {number}: Results of the Review", 9)]
        body = [f"On the {word} page, {line[0].lower()}{line[1:]}" for line in WRAPPED + SECOND * 8]
        page += paragraph(72, 110, body, pitch=13)
        page += [Text(72, 690, "preliminary draft, September 2008", 9), Text(300, 760, str(number), 9)]
        layer = page_layer(page)
        pages.append((layer.lines, layer.width, layer.height))
    trees = document_trees(pages, first_page=3)
    for tree in trees:
        assert {b.type for b in tree.blocks if b.furniture} == {"header", "footer", "page_number"}
        md = page_markdown(tree)
        assert "Chapter" not in md and "draft" not in md and md.startswith("On the")
    # one page alone: the footer 13% up from the bottom edge reads as text
    assert "preliminary draft" in page_markdown(lines_tree(*pages[0]))


def test_hostile_layouts_end_in_a_tree():
    # thousands of lines, each gap wider than the last (a cut per line unbounded would recurse past Python's
    # limit), lines on top of each other, zero-size and inverted boxes: a tree, never an exception
    from jocr.lines.types import Line as TextLine

    lines, y = [], 0.0
    for i in range(3000):
        lines.append(TextLine(f"line {i} with some words in it", (72, y, 300, y + 10), 10))
        y += 12 + i * 0.01
    lines += [TextLine("stacked", (72, 50, 300, 60), 10)] * 50
    lines += [TextLine("odd", (300, 60, 72, 50), 0), TextLine("dot", (5, 5, 5, 5), 0)]
    tree = lines_tree(lines, 612, y + 20)
    assert sum(len(b.lines) for b in tree.blocks) == len(lines)


def test_a_heading_without_lines_ranks_as_body_size():
    # A heading the model wrote itself (no line of the line source under it) beside one from the lines.
    from jocr.layout.line_rules import set_heading_levels
    from jocr.layout.tree import HEADING, Block, TreeLine

    typed = Block(type=HEADING, text="Typed", markdown="## Typed", lines=[])
    found = Block(
        type=HEADING, text="Found", markdown="## Found", lines=[TreeLine("Found", (0, 0, 50, 12), size=12.0)]
    )
    set_heading_levels([typed, found], 10.0)
    assert (found.level, typed.level) == (2, 3)


HANGING = [
    "Jones B A, McMahan W, Walker I. Design and Analysis of a Novel Pneumatic Manipulator,",
    "IFAC Symposium on Mechatronic Systems, Hamburg, Germany, 2004, pages 745 to 750 in all.",
    "McMahan W, Jones B A, Walker I D. Design and Implementation of a Multi-section Robot,",
    "IEEE International Conference on Intelligent Robots and Systems, Shanghai, 2005 too.",
]


def test_entries_set_with_a_hanging_indent_are_one_block_each():
    # a reference list or change log: each entry's first line at the margin, its next lines indented; the
    # indent goes on the entry, and the next entry starts back at the margin
    page = [Text(72, 100 + 12 * k, text) if k % 2 == 0 else Text(90, 100 + 12 * k, text)
            for k, text in enumerate(HANGING)]  # fmt: skip
    blocks = [b.text for b in tree_of(page).blocks]
    assert blocks == [HANGING[0] + " " + HANGING[1], HANGING[2] + " " + HANGING[3]]


def test_a_short_line_then_an_indented_line_is_still_two_paragraphs():
    # the hanging indent needs a first line that fills the measure: after a short one, an indent starts a
    # new paragraph as before
    page = [Text(72, 100, "A short opening line."), Text(90, 112, SECOND[0]), Text(72, 124, SECOND[1])]
    assert len(tree_of(page).blocks) == 2
    # nor after a full line that ends a sentence (a paragraph's last line that happens to fill the measure)
    full = "proposals submitted by each department. Every proposal was read by two members."
    page = [Text(72, 100, full), Text(90, 112, SECOND[0]), Text(72, 124, SECOND[1])]
    assert [b.text for b in tree_of(page).blocks] == [full, " ".join(SECOND)]
