"""Reading an asked page's answer (`jocr.pipeline.ask_answers`): the one cut rule shared with the training
targets, references resolved, and the answer's box from the runs it references."""

from __future__ import annotations

from jocr.lines.types import OK, Line, PageLines
from jocr.pipeline.ask import FieldSpec, read_fields_answer
from jocr.pipeline.ask_answers import answer_runs, answer_text, answer_value, runs_box

ANCHOR = "page 100x100\n@1 0,0 Store: Orion Tools Inc\n@2 0,100 Total $136.50\n@3 0,200 10:30 start"


def test_answer_value_drops_a_colon_label():
    assert answer_value("Store: Orion Tools Inc") == "Orion Tools Inc"
    assert answer_value("合计：¥7,196.07") == "¥7,196.07"
    assert answer_value("Receipt No.: R-2019-12799") == "R-2019-12799"
    # not labels: a time, a URL, a colon that ends the text
    assert answer_value("10:30 start") == "10:30 start"
    assert answer_value("see http://example.org") == "see http://example.org"
    assert answer_value("Note:") == "Note:"


def test_answer_value_drops_the_words_the_question_names():
    assert answer_value("Total $136.50", "What is the total amount?") == "$136.50"
    assert answer_value("Total $136.50", "How much is due?") == "Total $136.50"
    assert answer_value("Receipt number R-7", "receipt_number") == "R-7"  # a field's name
    assert answer_value("Total", "What is the total?") == "Total"  # something always remains
    # stop words and short words are never a label
    assert answer_value("The R Core Team", "Who is the author of the R manual?") == "The R Core Team"


def test_answer_text_resolves_references_then_cuts_the_value():
    assert answer_text("@1", ANCHOR) == "Orion Tools Inc"
    assert answer_text(" @2 ", ANCHOR, "What is the total amount?") == "$136.50"
    assert answer_text("@3", ANCHOR) == "10:30 start"
    # a typed answer is the model's text as it stands (no cut)
    assert answer_text(" Total: 4 ", ANCHOR) == "Total: 4" and answer_text("4", None) == "4"
    assert answer_runs("@3 @4") == [3, 4] and answer_runs("@3@4") == [3, 4] and answer_runs("4") == []


def test_extracted_values_are_read_like_answers():
    fields = [FieldSpec("store"), FieldSpec("total", "number"), FieldSpec("city")]
    values = read_fields_answer('{"store":"@1","total":"@2","city":null}', fields, ANCHOR)
    assert values == {"store": "Orion Tools Inc", "total": 136.5, "city": None}


def _lines() -> PageLines:
    boxes = [(10, 10, 60, 20), (10, 30, 50, 40), (0, 0, 0, 0), (20, 50, 90, 60)]
    texts = ["Store: Orion Tools Inc", "Total $136.50", "  ", "10:30 start"]
    return PageLines(100, 100, [Line(text=t, box=b) for t, b in zip(texts, boxes)], verdict=OK)


def test_the_box_is_the_referenced_runs_lines():
    lines = _lines()
    assert runs_box("@1", 1, lines, (200, 200)) == [20, 20, 120, 40]
    # a blank line writes no run: run 3 is the fourth line; two runs give their union
    assert runs_box("@2 @3", 1, lines, (100, 100)) == [10, 30, 90, 60]
    # a later window numbers its runs from 1: its run 1 is the page's run `first`
    assert runs_box("@1", 3, lines, (100, 100)) == [20, 50, 90, 60]
    assert runs_box("4", 1, lines, (100, 100)) is None and runs_box("@9", 1, lines, (100, 100)) is None
    assert runs_box("@1", 1, None, (100, 100)) is None
