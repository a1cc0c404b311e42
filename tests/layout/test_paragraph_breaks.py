"""A paragraph the answer ran over several of the page's paragraphs is cut where the text layer shows a
break (`jocr.layout.paragraph_breaks`): an indented first line, a gap, a short line ending a sentence; a
list's hanging lines and lines of one paragraph stay together."""

from __future__ import annotations

from page_fixtures import SECOND, WRAPPED, Text, page_layer, paragraph

from jocr.layout.request import page_tree
from jocr.lines.anchor import anchor_lines


def _blocks(page, answer):
    layer = page_layer(page)
    anchor = "\n".join(anchor_lines(layer))
    tree = page_tree([answer(len(layer.lines))], [anchor], ["stop"], lines=layer.lines)
    return [(b.type, b.text) for b in tree.blocks]


def _all(count):
    return " ".join(f"@{k}" for k in range(1, count + 1))


def test_a_paragraph_over_two_of_the_pages_is_cut_where_the_next_one_starts():
    # the next paragraph starts after a gap of a line and a half
    gap = paragraph(72, 100, WRAPPED) + paragraph(72, 100 + 12 * len(WRAPPED) + 8, SECOND)
    assert [t for _, t in _blocks(gap, _all)] == [" ".join(WRAPPED), " ".join(SECOND)]
    # the next paragraph's first line is indented after a full line ending a sentence (no other sign)
    full = "who wrote a short report on its cost, its schedule and the risks it carried then."
    lines = WRAPPED[:2] + [full] + SECOND
    indent = paragraph(72, 100, lines[:3]) + [Text(84, 136, lines[3])] + paragraph(72, 148, lines[4:])
    assert [t for _, t in _blocks(indent, _all)] == [" ".join(lines[:3]), " ".join(lines[3:])]
    # a short last line ending a sentence, the next paragraph flush left a pitch down
    short = paragraph(72, 100, WRAPPED + SECOND)
    assert [t for _, t in _blocks(short, _all)] == [" ".join(WRAPPED), " ".join(SECOND)]


def test_one_paragraph_of_the_page_stays_whole():
    assert [t for _, t in _blocks(paragraph(72, 100, WRAPPED), _all)] == [" ".join(WRAPPED)]


def test_a_lists_hanging_lines_do_not_cut_it():
    page = [
        Text(72, 100, "• A slightly different underscore character, which works as expected in"),
        Text(81, 112, "text and maths modes, and in the margins of the page."),
    ]
    assert len(_blocks(page, _all)) == 1


def test_runs_the_answer_joined_with_text_between_them_stay_as_written():
    page = paragraph(72, 100, WRAPPED) + paragraph(72, 160, SECOND)
    # the answer typed a word between the two paragraphs' runs: its paragraph is not cut there
    assert len(_blocks(page, lambda n: "@1 @2 @3 @4 and @5 @6")) == 1


def test_a_footnotes_hanging_line_and_code_lines_do_not_cut_it():
    note = [
        Text(96, 700, "1 With other than vector types of argument, such as list mode arguments, the", 9),
        Text(105, 711, "action of c() is rather different. See Section 6.2.1, page 30.", 9),
    ]
    assert len(_blocks(note, _all)) == 1
    code = [Text(72, 100, "x <- c(1, 2)", font="mono"), Text(72, 130, "y <- x + 1", font="mono")]
    assert len(_blocks(code, _all)) == 1


def test_a_line_going_on_in_lower_case_is_never_cut_off():
    # a description list's term and its hanging text; a gap under a line ending "color C," (a display)
    terms = [
        Text(72, 100, "plain This is the float style that LaTeX normally applies to its floats, i.e.,"),
        Text(100, 112, "in particular. The caption comes out below the body of the float."),
    ]
    assert len(_blocks(terms, _all)) == 1
    gap = [Text(100, 100, "a color C,"), Text(72, 130, "knowing that there are other concepts of colors.")]
    assert len(_blocks(gap, _all)) == 1
