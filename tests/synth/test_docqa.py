"""Documents to ask (jocr.synth.docqa): answers are spans of the printed page or computed from it, the
committed frozen set is what its recipe writes, and photographed copies are reproducible."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image

from jocr.checks.qa import anls_one, normalise_value
from jocr.lines.textlayer import read_page
from jocr.synth.dataset import FROZEN_TEST_SETS, global_seed
from jocr.synth.degrade import photograph
from jocr.synth.docqa import KINDS, LANGS, make_document

FROZEN = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa"


def _records() -> list[dict]:
    return [
        json.loads(line) for line in (FROZEN / "docqa_test.jsonl").read_text(encoding="utf-8").splitlines()
    ]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lang", LANGS)
def test_extractive_answers_are_printed_and_computed_answers_hold(kind, lang):
    for seed in range(5):
        doc = make_document(seed, kind, lang)
        assert doc == make_document(seed, kind, lang)  # a pure function of its arguments
        for q in doc.questions:
            if q.kind == "extractive":
                assert q.answers[0] in doc.markdown and doc.fields[q.field] == q.answers[0]
        if not doc.items:
            continue
        rows = re.findall(r"<tr>(.*?)</tr>", doc.markdown)[1:]  # the head row is not an item
        assert len(rows) == len(doc.items)
        amounts = [normalise_value(item["amount"]) for item in doc.items]
        by_question = {q.question: q.answers[0] for q in doc.questions if q.kind == "computed"}
        assert str(len(doc.items)) in by_question.values()
        priciest = max(doc.items, key=lambda it: float(normalise_value(it["amount"])))["description"]
        assert priciest in by_question.values() and len(set(amounts)) == len(amounts)
        total = sum(float(a) for a in amounts)
        printed = float(normalise_value(doc.fields["subtotal" if kind == "invoice" else "total"]))
        assert printed == pytest.approx(total)


def test_unknown_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown document kind"):
        make_document(0, "passport")


def test_frozen_set_is_what_its_recipe_writes():
    recipe = FROZEN_TEST_SETS["docqa"]
    records = _records()
    assert len(records) == recipe["pages"]
    for offset, record in enumerate(records):
        seed = global_seed(recipe["split"], recipe["seed"] + offset)
        assert record["seed"] == seed
        assert {k: v for k, v in record.items() if k not in ("name", "seed", "files")} == make_document(
            seed
        ).to_record()
        assert all((FROZEN / path).is_file() for path in record["files"].values())
    assert {r["lang"] for r in records} == set(LANGS) and len({r["kind"] for r in records}) >= 3


def test_frozen_pdfs_carry_every_extractive_answer_in_their_text_layer():
    questions = 0
    for record in _records():
        doc = pdfium.PdfDocument(str(FROZEN / record["files"]["pdf"]))
        try:
            layer = read_page(doc[0])
        finally:
            doc.close()
        assert layer.usable, layer.note
        text = "\n".join(line.text for line in layer.lines)
        for q in record["questions"]:
            if q["kind"] == "extractive":
                questions += 1
                assert q["answers"][0] in text or anls_one(q["answers"][0], [text]) == 1.0, q
    assert questions >= 60


def test_photograph_is_reproducible_and_keeps_the_page_inside_the_frame():
    page = Image.new("RGB", (300, 400), "white")
    a, log_a = photograph(page, 0.7, random.Random(3))
    b, log_b = photograph(page, 0.7, random.Random(3))
    assert a.tobytes() == b.tobytes() and log_a == log_b
    assert a.size[0] > page.size[0] and a.size[1] > page.size[1]
    for x, y in log_a["corners"]:
        assert 0 <= x <= a.size[0] and 0 <= y <= a.size[1]


@pytest.mark.browser
def test_synth_cli_writes_documents_with_copies(tmp_path):
    from jocr.cli import main

    out = tmp_path / "qa"
    assert main(["synth", str(out), "--profile", "docqa", "--pages", "2", "--split", "val"]) == 0
    records = [
        json.loads(line) for line in (out / "docqa_val.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(records) == 2
    for record in records:
        assert Image.open(out / record["files"]["photo"]).size[0] > 1000
        assert (out / record["files"]["pdf"]).read_bytes().startswith(b"%PDF")


def test_no_copies_writes_the_same_documents_without_their_scans_and_photos(tmp_path, capsys):
    """`jocr synth --no-copies` (training data: only the PDFs are read) writes the same PDFs (their text;
    the bytes differ by the creation date) and records, the files naming the PDF alone."""
    from jocr.cli import main

    runs = {}
    for name, extra in (("with", []), ("without", ["--no-copies"])):
        out = tmp_path / name
        assert main(["synth", str(out), "--profile", "docqa-charts", "--pages", "2", *extra]) == 0, (
            capsys.readouterr()
        )
        lines = (out / "docqa_train.jsonl").read_text(encoding="utf-8").splitlines()
        runs[name] = (out, [json.loads(line) for line in lines])
    (with_dir, with_records), (without_dir, without_records) = runs["with"], runs["without"]
    assert [{k: v for k, v in r.items() if k != "files"} for r in with_records] == [
        {k: v for k, v in r.items() if k != "files"} for r in without_records
    ]
    assert all(set(r["files"]) == {"pdf", "scan", "photo"} for r in with_records)
    assert all(set(r["files"]) == {"pdf"} for r in without_records)
    assert not (without_dir / "scan").exists() and not (without_dir / "photo").exists()
    assert json.loads((without_dir / "manifest.json").read_text())["copies"] is False
    for a, b in zip(with_records, without_records):
        texts = []
        for root, record in ((with_dir, a), (without_dir, b)):
            doc = pdfium.PdfDocument(str(root / record["files"]["pdf"]))
            texts.append(doc[0].get_textpage().get_text_range())
            doc.close()
        assert texts[0] == texts[1] and texts[0].strip()
    assert main(["synth", str(tmp_path / "x"), "--no-copies", "--pages", "1"]) == 2
    assert "--no-copies is for the docqa" in capsys.readouterr().err


def test_the_benchmark_scores_field_f1_per_language():
    """benchmarks/qa.py reports field F1 for each language of a mixed set beside the overall figure (the
    goal is per language): true fields for the English documents, none for the Chinese ones."""
    import sys

    sys.path.insert(0, str(FROZEN.parents[2] / "benchmarks"))
    import qa

    docs = qa.load_set(FROZEN, "pdf")
    fields = [dict(doc["fields"]) if doc["lang"] == "en" else {} for doc in docs]
    result = qa.scores(docs, [[""] * len(doc["questions"]) for doc in docs], fields)
    assert result["fields:en"]["f1"] == 1.0 and result["fields:zh"]["recall"] == 0.0
    assert 0.0 < result["fields"]["f1"] < 1.0
    assert result["fields:en"]["documents"] + result["fields:zh"]["documents"] == len(docs)
