"""An anchored answer's tree: each block holds the runs it references (its box their union), paragraphs the
model split at every line come back whole, a broken word joins only its own paragraph's next line, and the
text layer's boxes and sizes replace the anchors' positions when given."""

from __future__ import annotations

import re

from page_fixtures import SECOND, WRAPPED, Text, page_layer, paragraph

from jocr.layout.answer_tree import anchored_tree, typed_block
from jocr.layout.render import block_markdown, page_markdown
from jocr.layout.request import page_text, page_tree
from jocr.lines.anchor import anchor_lines

TABLE = [["package", "roman", "math"], ["times", "Times", "Symbol"], ["utopia", "Utopia", "Fourier"]]
BROKEN = "\n".join(
    [
        "page 600x800",
        "@1 10,10 an irretrie\u00ad",
        "@2 10,20 vably negative force",
        "@3 10,60 Another paragraph",
    ]
)


def test_a_broken_word_is_not_glued_to_the_next_paragraph():
    # the model left the word's next part out: the paragraph after it starts anew
    assert page_text(["@1\n\n@3"], [BROKEN]) == "an irretrie-\n\nAnother paragraph"
    assert page_text(["@1\n\n@2"], [BROKEN]) == "an irretrievably negative force"


def test_blocks_hold_their_runs_and_boxes_from_the_text_layer():
    layer = page_layer([Text(72, 60, "Findings", 16, "bold")] + paragraph(72, 100, WRAPPED))
    anchor = "\n".join(anchor_lines(layer))
    # the model wrote every line of the wrapped paragraph as its own paragraph
    tree = page_tree(["# @1\n\n@2\n\n@3\n\n@4\n\n@5"], [anchor], ["stop"], lines=layer.lines)
    assert [b.type for b in tree.blocks] == ["title", "paragraph"]
    paragraph_block = tree.blocks[1]
    assert [ln.run for ln in paragraph_block.lines] == [2, 3, 4, 5]
    boxes = [ln.box for ln in layer.lines[1:]]
    assert paragraph_block.bbox == (min(b[0] for b in boxes), min(b[1] for b in boxes),
                                    max(b[2] for b in boxes), max(b[3] for b in boxes))  # fmt: skip
    assert tree.unit == "pt" and (tree.width, tree.height) == (612, 792)
    assert page_markdown(tree) == "# Findings\n\n" + " ".join(WRAPPED)
    # a paragraph's short last line ends it: the next paragraph, one pitch down, stays apart
    layer = page_layer(paragraph(72, 100, WRAPPED + SECOND))
    anchor = "\n".join(anchor_lines(layer))
    tree = page_tree(["@1 @2 @3\n\n@4\n\n@5\n\n@6"], [anchor], ["stop"], lines=layer.lines)
    assert [b.text for b in tree.blocks] == [" ".join(WRAPPED), " ".join(SECOND)]


def test_without_the_text_layer_the_anchor_positions_place_the_blocks():
    anchor = "\n".join(
        ["page 600x800", *(f"@{i} 100,{100 + 15 * i} line {i} of a paragraph" for i in range(1, 4))]
    )
    tree = anchored_tree(["@1\n\n@2\n\n@3"], [anchor])
    assert (
        len(tree.blocks) == 1
        and tree.blocks[0].text == "line 1 of a paragraph line 2 of a paragraph line 3 of a paragraph"
    )
    x0, y0, _, _ = tree.blocks[0].bbox
    assert round(x0) == round(100 / 999 * 600) and round(y0) == round(115 / 999 * 800)
    assert all(line.source == "anchor" for line in tree.blocks[0].lines)


def test_with_the_text_layer_block_types_follow_the_fonts():
    code = ["def total(items):", "    return sum(items)"]
    page = [Text(72, 60, "2", 14, "bold"), Text(100, 60, "Methods", 14, "bold")]
    page += paragraph(72, 90, WRAPPED) + paragraph(72, 150, code, font="mono")
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    # the model: the number and the title apart, the heading missed, a body line made a heading, code as text
    answer = "@1\n\n@2\n\n# @3 @4 @5 @6\n\n@7\n\n@8"
    tree = page_tree([answer], [anchor], ["stop"], lines=layer.lines)
    assert [b.type for b in tree.blocks] == ["heading", "paragraph", "code"]
    assert page_markdown(tree) == (
        "## 2 Methods\n\n" + " ".join(WRAPPED) + "\n\n```\ndef total(items):\n    return sum(items)\n```"
    )
    # without the text layer (the server) the answer's own types stand
    assert page_text([answer], [anchor]).startswith("2\n\nMethods\n\n# The committee")


def test_a_streamed_page_only_grows():
    # paragraphs joined back, a broken word held back, furniture left out: every prefix of the answer gives
    # a prefix of the final text (the word being written aside), as the server streams it
    from jocr.lines.references import without_open_reference

    runs = [
        (10, "Running head"),
        *((100 + 15 * i, f"line {i} of the paragraph that wraps on") for i in range(6)),
    ]
    runs += [(200, "a broken irretrie\u00ad"), (215, "vably long word ends it."), (260, "Next paragraph.")]
    anchor = "\n".join(["page 600x800", *(f"@{k} 100,{y} {t}" for k, (y, t) in enumerate(runs, 1))])
    answer = "# @1\n\n@2\n\n@3 @4\n\n@5\n\n@6 @7\n\n@8\n\n@9\n\n# @10"
    final = page_text([answer], [anchor], ["stop"])
    assert "Running head" not in final and "irretrievably" in final and final.endswith("# Next paragraph.")
    assert "wraps on line 1 of the paragraph that wraps on line 2" in final  # joined back
    for end in range(len(answer)):
        partial = page_text([without_open_reference(answer[:end])], [anchor], [None])
        cut = partial.rsplit(" ", 1)[0] if " " in partial else ""
        assert final.startswith(cut), (end, partial)


def test_with_the_text_layer_a_small_numbered_line_below_the_body_is_a_footnote():
    page = paragraph(72, 100, WRAPPED) + [Text(72, 700, "1 The figures exclude part-time staff.", 8)]
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    tree = page_tree(["@1 @2 @3 @4\n\n@5"], [anchor], ["stop"], lines=layer.lines)
    assert [b.type for b in tree.blocks] == ["paragraph", "footnote"]


def test_references_that_name_no_run_leave_no_block():
    """Blocks written only of malformed references ("@", "@@14@@55") have no text of the page and no box:
    they are dropped, so every block of an anchored tree can be drawn; text the model wrote stays."""
    anchor = "\n".join(["page 600x800", "@1 100,100 First paragraph", "@2 100,500 Second paragraph"])
    tree = anchored_tree(["@1\n\n@\n\n@@14@@55@66@77\n\n   @\n\n@9\n\n$$x^2$$\n\n@2"], [anchor])
    assert [b.text for b in tree.blocks] == ["First paragraph", "x^2", "Second paragraph"]
    assert [b.bbox is not None for b in tree.blocks] == [True, False, True]
    assert "@" not in page_text(["@1\n\n@\n\n@@14@@55@66@77\n\n@2"], [anchor])


def test_runs_the_answer_skipped_go_back_in_the_text_layers_order():
    layer = page_layer(paragraph(72, 100, WRAPPED + SECOND))
    anchor = "\n".join(anchor_lines(layer))
    # the model skipped the two middle lines of the first paragraph
    tree = page_tree(["@1 @2\n\n@5 @6"], [anchor], ["stop"], lines=layer.lines)
    assert [b.text for b in tree.blocks] == [" ".join(WRAPPED), " ".join(SECOND)]
    assert [ln.run for ln in tree.blocks[0].lines] == [1, 2, 3, 4]
    # ... and the opening lines of its second window: they go before that window's first block
    header, *numbered = anchor.split("\n")
    second = [header] + [ln.replace(f"@{k}", f"@{k - 3}", 1) for k, ln in enumerate(numbered[3:], 4)]
    windows = ["\n".join([header, *numbered[:3]]), "\n".join(second)]
    tree = page_tree(["@1 @2 @3", "@2 @3"], windows, ["stop", "stop"], lines=layer.lines)
    assert [b.text for b in tree.blocks] == [" ".join(WRAPPED), " ".join(SECOND)]


def test_runs_skipped_above_or_below_every_named_run_stay_out():
    # a running head and a page number the furniture rules do not take for furniture (set in the body's
    # size, close to the text): the answer left them out, and they are not put back
    page = [Text(72, 56, "Chapter notes")] + paragraph(72, 74, WRAPPED)
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    tree = page_tree(["@2 @3 @4 @5"], [anchor], ["stop"], lines=layer.lines)
    assert [(b.type, b.text) for b in tree.blocks] == [("paragraph", " ".join(WRAPPED))]
    # the same line further down the page, where the body goes on, is the page's text: it goes back
    page = [Text(72, 120, "Chapter notes")] + paragraph(72, 138, WRAPPED)
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    tree = page_tree(["@2 @3 @4 @5"], [anchor], ["stop"], lines=layer.lines)
    assert tree.blocks[0].text.startswith("Chapter notes")
    # a chapter's title in the top band, set twice the body's size, is no running head: it goes back
    page = [Text(72, 50, "Preface", size=20)] + paragraph(72, 90, WRAPPED)
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    tree = page_tree(["@2 @3 @4 @5"], [anchor], ["stop"], lines=layer.lines)
    assert [b.text for b in tree.blocks] == ["Preface", " ".join(WRAPPED)]


def test_a_broken_answer_gives_way_to_its_windows_runs():
    layer = page_layer(paragraph(72, 100, WRAPPED + SECOND))
    anchor = "\n".join(anchor_lines(layer))
    # garbage up to the token limit, naming no run: the window's runs stand for it
    tree = page_tree(["同比增长\ufffd\ufffd同比增长"], [anchor], ["length"], lines=layer.lines)
    assert [b.text for b in tree.blocks] == [" ".join(WRAPPED), " ".join(SECOND)]


def test_characters_the_runs_never_give_are_taken_out_of_the_answer():
    layer = page_layer(paragraph(72, 100, WRAPPED + SECOND))
    anchor = "\n".join(anchor_lines(layer))
    # bold tags, a prime, CJK and U+FFFD typed around the references of an English page, beside words
    # of the page (so the block is no made-up block, `made_up`)
    answer = "<b>@1</b> @2 @3\n\n@4 committee 同\u2032 @5 met\ufffd @6"
    tree = page_tree([answer], [anchor], ["stop"], lines=layer.lines)
    assert tree.blocks[0].text.startswith(" ".join(WRAPPED))
    assert not re.search("[<>同\u2032\ufffd]", page_text([answer], [anchor], ["stop"], lines=layer.lines))
    # streamed (not yet checked), the answer stands as written
    assert "同\u2032" in page_text([answer], [anchor], [None], lines=layer.lines)


def test_a_block_the_answer_made_up_is_left_out():
    layer = page_layer(paragraph(72, 100, WRAPPED + SECOND))
    anchor = "\n".join(anchor_lines(layer))
    made_up = "<table><tr><td>@1</td><td>Beijing</td><td>1991</td><td>2,121.11</td></tr></table>"
    tree = page_tree([f"{made_up}\n\n@2 @3 @4\n\n@5 @6"], [anchor], ["stop"], lines=layer.lines)
    assert [b.type for b in tree.blocks] == ["paragraph", "paragraph"]
    assert [b.text for b in tree.blocks] == [" ".join(WRAPPED), " ".join(SECOND)]
    # a table whose cells are the runs' own words is the page's: it stays
    cells = "<table><tr><td>The committee met</td><td>on three occasions</td></tr></table>"
    tree = page_tree([f"{cells}\n\n@5 @6"], [anchor], ["stop"], lines=layer.lines)
    assert "table" in [b.type for b in tree.blocks]


def test_a_run_the_answer_typed_out_is_not_put_back_twice():
    layer = page_layer(paragraph(72, 100, WRAPPED + SECOND))
    anchor = "\n".join(anchor_lines(layer))
    answer = f"@1 @2 {WRAPPED[2]} @4\n\n@5 @6"
    tree = page_tree([answer], [anchor], ["stop"], lines=layer.lines)
    assert [b.text for b in tree.blocks] == [" ".join(WRAPPED), " ".join(SECOND)]


def test_skipped_runs_wait_for_a_finished_page_read_with_its_lines():
    layer = page_layer(paragraph(72, 100, WRAPPED + SECOND))
    anchor = "\n".join(anchor_lines(layer))
    # streamed (the window still being written) or without the text layer: the answer as is
    assert page_text(["@1 @2\n\n@5 @6"], [anchor], [None], lines=layer.lines).count("\n\n") == 1
    assert WRAPPED[2] not in page_text(["@1 @2\n\n@5 @6"], [anchor], [None], lines=layer.lines)
    assert WRAPPED[2] not in page_text(["@1 @2\n\n@5 @6"], [anchor], ["stop"])


def test_lines_of_chinese_split_by_the_answer_join_without_a_space():
    from jocr.lines.types import Line

    texts = ["它实现了客户端-服务器方法。服务器和客户端是相互交互的软件。当服务器安装",
             "在一台机器上，而它的客户端安装在另一台机器上时，通过这个概念的扩展。"]  # fmt: skip
    lines = [Line(t, (72, 100 + 14 * i, 72 + 10 * len(t), 110 + 14 * i), 10) for i, t in enumerate(texts)]
    anchor = "\n".join(["page 612x792", *(f"@{i} 100,{130 + 18 * i} {t}" for i, t in enumerate(texts, 1))])
    tree = page_tree(["@1\n\n@2"], [anchor], ["stop"], lines=lines)
    assert [b.text for b in tree.blocks] == ["".join(texts)]


def test_a_list_items_wrapped_line_joins_its_item():
    # the model wrote each line apart: the item's next line, at the hanging indent after its marker, goes on
    # the item; the next item and the paragraph after the list stay apart
    page = [
        Text(72, 100, "• A slightly different underscore character, which works as expected in text"),
        Text(81, 112, "and maths modes."),
        Text(72, 124, "• An abbreviated notation for verbatim text, similar to the shortvrb package."),
    ] + paragraph(60, 148, SECOND)
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    tree = page_tree(["@1\n\n@2\n\n@3\n\n@4\n\n@5"], [anchor], ["stop"], lines=layer.lines)
    assert [b.type for b in tree.blocks] == ["list_item", "list_item", "paragraph"]
    assert tree.blocks[0].text.endswith("as expected in text and maths modes.")
    assert [ln.run for ln in tree.blocks[0].lines] == [1, 2]


def test_a_table_the_model_ran_on_over_prose_lines_gives_them_back():
    # a three-row table, then a paragraph: the model wrote one grid over all their runs, five to a row
    page = [
        Text(100 + 90 * c, 100 + 14 * r, cell) for r, row in enumerate(TABLE) for c, cell in enumerate(row)
    ]
    page += paragraph(72, 160, WRAPPED)
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    assert len(layer.lines) == 13
    cells = [f"<td>@{k}</td>" for k in range(1, 14)]
    grid = "<table>" + "".join("<tr>" + "".join(cells[k : k + 5]) + "</tr>" for k in (0, 5, 10)) + "</table>"
    tree = page_tree([grid], [anchor], ["stop"], lines=layer.lines)
    assert [b.type for b in tree.blocks] == ["table", "paragraph"]
    assert tree.blocks[0].html.startswith("<table><tr><td>package</td><td>roman</td><td>math</td></tr>")
    assert tree.blocks[1].text == " ".join(WRAPPED)
    # without the text layer's boxes the answer's table stands
    assert page_text([grid], [anchor]).startswith("<table>")


def test_a_numbered_item_over_several_lines_prints_its_number_once():
    block = typed_block("155. Find the derivative of\nthe function below.", [])
    assert (block.type, block.marker) == ("list_item", "155.")
    assert block.text == "Find the derivative of\nthe function below."
    assert block_markdown(block) == "155. Find the derivative of\nthe function below."


def test_a_lone_list_marker_and_the_line_beside_it_are_one_item():
    page = [Text(72, 100, "•"), Text(90, 100, "The coprod symbol is missing.")] + paragraph(72, 130, SECOND)
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    assert [ln.text for ln in layer.lines[:2]] == ["•", "The coprod symbol is missing."]
    tree = page_tree(["@1\n\n@2\n\n@3 @4"], [anchor], ["stop"], lines=layer.lines)
    assert [(b.type, b.text) for b in tree.blocks][0] == ("list_item", "The coprod symbol is missing.")
    assert page_markdown(tree).startswith("- The coprod symbol is missing.\n\nMost departments")


def test_a_compound_broken_at_its_hyphen_keeps_it_within_a_block_and_across_blocks():
    anchor = "\n".join(
        ["page 600x800", "@1 10,10 运行 debian\u00ad", "@2 10,20 edu-profile-udeb 的时间",
         "@3 10,30 the human\u00ad", "@4 10,40 readable form", "@5 10,50 a human-readable name"]
    )  # fmt: skip
    assert page_text(["@1 @2"], [anchor]) == "运行 debian-edu-profile-udeb 的时间"
    assert page_text(["@1\n\n@2"], [anchor]) == "运行 debian-edu-profile-udeb 的时间"
    # the page prints "human-readable" whole elsewhere: the broken one keeps its hyphen too
    assert page_text(["@3 @4 @5"], [anchor]).startswith("the human-readable form")
    assert page_text(["@3\n\n@4 @5"], [anchor]).startswith("the human-readable form")


def _table_texts():
    """`TABLE` set at 100 pt from the top, its columns 90 pt apart."""
    return [
        Text(100 + 90 * c, 100 + 14 * r, cell) for r, row in enumerate(TABLE) for c, cell in enumerate(row)
    ]


def test_a_caption_the_model_wrote_as_its_tables_first_row_stands_before_the_table():
    # the caption's two runs on their own row above a three-row table; the model's first row holds them and
    # the first header cell
    page = [Text(100, 80, "Table 1"), Text(190, 80, "Packages and fonts")]
    page += _table_texts()
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    assert [ln.text for ln in layer.lines[:3]] == ["Table 1", "Packages and fonts", "package"]
    cells = [f"<td>@{k}</td>" for k in range(1, 12)]
    rows = ["<tr>" + "".join(cells[k : k + 3]) + "</tr>" for k in (0, 3, 6, 9)]
    tree = page_tree(["<table>" + "".join(rows) + "</table>"], [anchor], ["stop"], lines=layer.lines)
    assert [b.type for b in tree.blocks] == ["caption", "table"]
    assert tree.blocks[0].text == "Table 1 Packages and fonts"
    assert "Table 1" not in tree.blocks[1].html and "package" in tree.blocks[1].html
