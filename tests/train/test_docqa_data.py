"""Targets for asking a page (`jocr.train.docqa_data`): extractive answers and extracted values as
references to the anchor runs that hold them, read back to the answer by the same rule `jocr ask` uses."""

from __future__ import annotations

import json
from pathlib import Path

from jocr.checks.qa import normalise_answer
from jocr.documents.pages import open_source
from jocr.lines.anchor import ANCHOR_VERSION, page_anchor
from jocr.lines.references import REFERENCES
from jocr.pipeline.ask import answer_text, parse_schema, read_fields_answer
from jocr.tokenizer import Tokenizer
from jocr.train.docqa_data import (
    EXTRACT_KIND,
    copied_answer,
    docqa_examples,
    read_records,
    reference_answer,
)

DOCQA_DIR = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa"
ANCHOR = "\n".join(
    [
        "page 612x792",
        "@1 98,76 RECEIPT",
        "@2 98,123 Store: Orion Tools Inc",
        "@3 98,147 Receipt No.: R-2019-12799",
        "@4 107,228 Stapler",
        "@5 386,228 2",
        "@6 107,253 Printer toner",
        "@7 386,253 3",
        "@8 773,335 Total $136.50",
        "@9 98,360 Subject: Delivery schedule for",
        "@10 98,376 the spring order",
        "@11 98,400 销售方：蓝港供应",
        "@12 98,420 链公司",
    ]
)


def test_extractive_answers_reference_the_run_that_holds_them():
    assert reference_answer("Orion Tools Inc", ANCHOR, "Which store issued the receipt?") == "@2"
    assert reference_answer("R-2019-12799", ANCHOR, "What is the receipt number?") == "@3"
    # a label without a colon that the question names
    assert reference_answer("$136.50", ANCHOR, "What is the total amount?") == "@8"
    assert reference_answer("$136.50", ANCHOR, "How much is due?") is None
    # a value across two runs: each referenced, in order (a space between, as the page's words)
    subject = "Delivery schedule for the spring order"
    assert reference_answer(subject, ANCHOR, "What is the subject?") == "@9 @10"
    assert reference_answer("蓝港供应链公司", ANCHOR, "销售方是谁？") == "@11@12"  # no space in Chinese
    # case and spacing may differ from the run's characters
    assert reference_answer("orion tools  inc", ANCHOR, "Which store?") == "@2"
    assert reference_answer("absent", ANCHOR) is None and reference_answer("x", None) is None


def test_targets_read_back_to_the_answer_through_answer_text():
    for answer, question in [
        ("Orion Tools Inc", "Which store issued the receipt?"),
        ("$136.50", "What is the total amount?"),
        ("Delivery schedule for the spring order", "What is the subject?"),
        ("Printer toner", "Which item has the largest amount?"),
    ]:
        target = reference_answer(answer, ANCHOR, question)
        assert target is not None and answer_text(target, ANCHOR, question) == answer


def test_computed_answers_are_typed_unless_they_are_a_runs_text():
    record = {
        "questions": [
            {"question": "How many line items are listed?", "answers": ["2"], "kind": "computed"},
            {
                "question": "Which item has the largest amount?",
                "answers": ["Printer toner"],
                "kind": "computed",
            },
            {"question": "What is the total amount?", "answers": ["$136.50"], "kind": "extractive"},
            {"question": "What is the grand total?", "answers": ["$999.00"], "kind": "extractive"},
        ],
        "fields": {"store": "Orion Tools Inc", "total": "$136.50", "buyer": None},
    }
    examples = docqa_examples(record, ANCHOR)
    # the count equals run 5's text ("2", a quantity) but stays typed: it is not that cell
    assert [e.target for e in examples[:4]] == ["2", "@6", "@8", "$999.00"]
    extraction = examples[-1]
    assert extraction.kind == EXTRACT_KIND
    assert json.loads(extraction.target) == {"store": "@2", "total": "@8", "buyer": None}


def test_copied_answer_takes_the_runs_characters():
    anchor = "page 612x792\n@1 10,10 Invoice No.:  INV-7\n@2 10,20 TOTAL DUE $5.00"
    assert copied_answer("INV-7", anchor) == "INV-7"
    assert copied_answer("total due", anchor) == "TOTAL DUE"
    assert copied_answer("absent", anchor) == "absent" and copied_answer("x", None) == "x"


def test_frozen_set_targets_are_references_read_back_to_the_answers():
    tok = Tokenizer.byte_level()
    extractive = 0
    for root, record in read_records(str(DOCQA_DIR))[:6]:
        with open_source(str(root / record["files"]["pdf"])) as source:
            anchor = page_anchor(source, 0, "on", ANCHOR_VERSION, tok, 100_000).texts[0]
        examples = docqa_examples(record, anchor)
        assert len(examples) == len(record["questions"]) + 1
        for example in examples:
            if example.kind == EXTRACT_KIND:
                fields = parse_schema(list(record["fields"]))
                values = json.loads(example.target).values()
                assert all(REFERENCES.fullmatch(v) for v in values if v)
                assert read_fields_answer(example.target, fields, anchor) == record["fields"]
                continue
            answer = answer_text(example.target, anchor, example.question)
            assert normalise_answer(answer) in {normalise_answer(a) for a in example.answers}
            if example.kind == "extractive":
                extractive += 1
                assert REFERENCES.fullmatch(example.target)  # a choice among the runs, not typed
    assert extractive >= 20


def test_a_focused_question_sample_shows_its_focused_window_with_targets_for_it():
    from types import SimpleNamespace

    from jocr.lines.references import anchor_runs
    from jocr.train.data import DataConfig
    from jocr.train.docqa_data import docqa_sample_parts

    prose = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa-prose"
    stages = [{"samples": 10, "profiles": {"docqa": 1.0}}]
    tok = Tokenizer.byte_level()
    accepted: dict[str, set[str]] = {}  # question -> its answers on any page (some questions recur)
    for _, record in read_records(str(prose)):
        for q in record["questions"]:
            accepted.setdefault(q["question"], set()).update(normalise_answer(a) for a in q["answers"])
    for focus in (0.0, 1.0):
        cfg = DataConfig(docqa_dir=str(prose), docqa_focus=focus, anchor_max_tokens=4000, stages=stages)
        maker = SimpleNamespace(cfg=cfg, tokenizer=tok)
        shown = []
        for index in range(6):
            _, question, anchor, target = docqa_sample_parts(maker, index, 1000 + index)
            if question.startswith("Extract these fields"):
                continue
            shown.append(len(anchor_runs(anchor)))
            answer = answer_text(target, anchor, question) if REFERENCES.search(target) else target
            assert normalise_answer(answer) in accepted[question], (question, target)
        if focus:
            assert max(shown) <= 12  # FOCUS_RUNS
        else:
            assert max(shown) > 12  # whole pages
