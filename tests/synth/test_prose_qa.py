"""Prose documents to ask (jocr.synth.prose_qa): facts written inside sentences, every answer printed on the
page (and in the PDF's text layer), a pure function of the seed."""

from __future__ import annotations

import json

import pypdfium2 as pdfium
import pytest

from jocr.synth.prose_qa import LANGS, PROSE_KINDS, PROSE_VERSION, make_prose_document


@pytest.mark.parametrize("kind", PROSE_KINDS)
@pytest.mark.parametrize("lang", LANGS)
def test_every_answer_is_printed_inside_the_page(kind, lang):
    for seed in range(20):
        doc = make_prose_document(seed, kind, lang)
        assert doc == make_prose_document(seed, kind, lang)  # a pure function of its arguments
        assert doc.kind == f"prose-{kind}" and doc.lang == lang
        assert len(doc.questions) >= 3
        for q in doc.questions:
            assert q.answers[0] in doc.markdown, (seed, q)
        for name, value in doc.fields.items():
            assert value in doc.markdown, (seed, name)
        if kind == "manual":
            assert {"author", "version", "date"} <= set(doc.fields)


def test_facts_sit_inside_sentences_not_on_labelled_lines():
    doc = make_prose_document(3, "notes", "en")
    paragraphs = [p for p in doc.markdown.split("\n\n") if not p.startswith("#")]
    for q in doc.questions:
        holder = next(p for p in paragraphs if q.answers[0] in p)
        assert holder != q.answers[0] and len(holder) > 2 * len(q.answers[0])


@pytest.mark.parametrize("lang", LANGS)
def test_title_pages_vary_as_real_ones_do(lang):
    """Real title pages print a bare name, a contact line under it, authors side by side and the version and
    date in a column beside them: every one of these layouts occurs, with the author answer as printed."""
    seen = set()
    for seed in range(80):
        doc = make_prose_document(seed, "manual", lang)
        meta = doc.markdown.split("\n\n")[1:3]
        lines = [line for block in meta for line in block.split("\n")]
        author = doc.questions[0].answers[0]
        row = next(line for line in lines if author in line)
        if "@" in doc.markdown.split("\n\n## ")[0]:
            seen.add("contact")
        if doc.fields["version"] in row or doc.questions[1].answers[0] in row:
            seen.add("column")
        if " and " not in author and " 和 " not in author and len(author.split()) >= 2 and row == author:
            seen.add("bare")
        if author.startswith("Dr. "):
            seen.add("doctor")
        if author in row and not row.startswith("by ") and (" and " in author or " 和 " in author):
            seen.add("joined")
    expected = {"contact", "column", "joined"} | ({"doctor", "bare"} if lang == "en" else set())
    assert expected <= seen


def test_unknown_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown prose document"):
        make_prose_document(0, "passport")


@pytest.mark.browser
def test_synth_cli_writes_prose_documents_whose_text_layer_holds_the_answers(tmp_path):
    from jocr.cli import main

    out = tmp_path / "prose"
    assert main(["synth", str(out), "--profile", "docqa-prose", "--pages", "3", "--split", "val"]) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["profile"] == "docqa-prose" and manifest["prose_version"] == PROSE_VERSION
    for line in (out / "docqa_val.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        pdf = pdfium.PdfDocument(out / record["files"]["pdf"])
        # PDFium gives a hyphen where the line breaks as U+FFFE ("Latin-1" wrapped after "Latin-")
        text = "".join(pdf[0].get_textpage().get_text_range().replace("\ufffe", "-").split())
        pdf.close()
        for q in record["questions"]:
            assert "".join(q["answers"][0].split()) in text, q


def test_frozen_set_is_what_its_recipe_writes():
    from pathlib import Path

    from jocr.synth.dataset import FROZEN_TEST_SETS, global_seed

    frozen = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa-prose"
    recipe = FROZEN_TEST_SETS["docqa-prose"]
    lines = (frozen / "docqa_test.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == recipe["pages"]
    for offset, record in enumerate(records):
        seed = global_seed(recipe["split"], recipe["seed"] + offset)
        assert record["seed"] == seed
        made = make_prose_document(seed).to_record()
        assert {k: v for k, v in record.items() if k not in ("name", "seed", "files")} == made
        assert all((frozen / path).is_file() for path in record["files"].values())
    assert {r["lang"] for r in records} == set(LANGS)
    assert {r["kind"] for r in records} == {f"prose-{k}" for k in PROSE_KINDS}
