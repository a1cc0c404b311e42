"""Charts and tables to ask (jocr.synth.charts): extractive answers are printed, computed answers follow from
the printed values, each chart's caption says what its data say, the existing docqa documents are untouched,
and the committed frozen set is what its recipe writes, with every chart's text inside its box."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from jocr.checks.qa import caption_similarity
from jocr.lines.textlayer import read_page
from jocr.synth.charts import CHART_KINDS, CHART_TYPES, LANGS, PAGE_SIZE, make_chart_document
from jocr.synth.dataset import FROZEN_TEST_SETS, global_seed
from jocr.synth.docqa import make_document

FROZEN = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa-charts"


def _records() -> list[dict]:
    text = (FROZEN / "docqa_test.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _by_kind(doc, kind: str) -> list[str]:
    return [q.answers[0] for q in doc.questions if q.kind == kind]


@pytest.mark.parametrize("lang", LANGS)
def test_chart_answers_follow_from_the_printed_values(lang):
    seen = set()
    for seed in range(60):
        doc = make_chart_document(seed, "chart", lang)
        assert doc == make_chart_document(seed, "chart", lang)  # a pure function of its arguments
        (figure,) = doc.figures
        seen.add(figure["type"])
        values, names = figure["values"], figure["categories"]
        assert len(set(values)) == len(values) >= 3
        for q in doc.questions:
            if q.kind == "extractive":
                assert q.answers[0] in doc.markdown
        computed = _by_kind(doc, "computed")
        top, low = names[values.index(max(values))], names[values.index(min(values))]
        assert computed[:3] == [top, low, str(len(values))]
        yes, no = ("Yes", "No") if lang == "en" else ("是", "否")
        assert computed[3] in (yes, no)
        difference = int(computed[4].rstrip("%"))
        assert difference in {abs(a - b) for a in values for b in values if a != b}
        if figure["type"] == "pie":
            assert sum(values) == 100
        # the caption names the largest and smallest categories with their values
        caption = figure["caption"]
        assert top in caption and low in caption and str(max(values)) in caption
        assert str(min(values)) in caption and 1 <= len(re.findall(r"[.。]", caption)) <= 2
        x0, y0, x1, y1 = figure["box"]
        assert 0 <= x0 < x1 <= PAGE_SIZE[0] and 0 <= y0 < y1 <= PAGE_SIZE[1]
    assert seen == set(CHART_TYPES)


@pytest.mark.parametrize("lang", LANGS)
def test_table_answers_follow_from_the_printed_cells(lang):
    for seed in range(30):
        doc = make_chart_document(seed, "table", lang)
        assert not doc.figures and doc.items
        rows = re.findall(r"<tr>(.*?)</tr>", doc.markdown)[1:]
        assert len(rows) == len(doc.items) == int(_by_kind(doc, "computed")[2])
        for q in doc.questions:
            if q.kind == "extractive":
                assert q.answers[0] in doc.markdown
        column = next(h for h in list(doc.items[0])[1:] if h in doc.questions[-1].question)
        cells = [int(item[column]) for item in doc.items]
        assert doc.questions[-1].answers == [str(sum(cells))]  # the column's total


def test_chart_documents_leave_the_docqa_documents_alone():
    assert make_document(3).to_record() == make_document(3).to_record()
    assert "figures" not in make_document(3).to_record()
    assert {make_chart_document(s).kind for s in range(40)} == set(CHART_KINDS)
    with pytest.raises(ValueError, match="unknown chart document kind"):
        make_chart_document(0, "invoice")


def test_caption_similarity_ranks_a_chart_caption_above_another_charts():
    a = make_chart_document(0, "chart", "en").figures[0]["caption"]
    b = make_chart_document(1, "chart", "en").figures[0]["caption"]
    assert caption_similarity(a, a) == 1.0 and caption_similarity(b, a) < 1.0


def test_frozen_set_is_what_its_recipe_writes():
    recipe = FROZEN_TEST_SETS["docqa-charts"]
    records = _records()
    assert len(records) == recipe["pages"]
    for offset, record in enumerate(records):
        seed = global_seed(recipe["split"], recipe["seed"] + offset)
        assert record["seed"] == seed
        rest = {k: v for k, v in record.items() if k not in ("name", "seed", "files")}
        assert rest == make_chart_document(seed).to_record()
        assert all((FROZEN / path).is_file() for path in record["files"].values())
    assert {r["lang"] for r in records} == set(LANGS) and {r["kind"] for r in records} == set(CHART_KINDS)


def test_frozen_pdfs_print_every_extractive_answer_and_each_chart_inside_its_box():
    charts = 0
    for record in _records():
        doc = pdfium.PdfDocument(str(FROZEN / record["files"]["pdf"]))
        try:
            layer = read_page(doc[0])
        finally:
            doc.close()
        assert layer.usable, layer.note
        text = "".join(line.text for line in layer.lines)
        for q in record["questions"]:
            if q["kind"] == "extractive":
                assert q["answers"][0] in text, q
        for figure in record.get("figures", []):
            charts += 1
            x0, y0, x1, y1 = figure["box"]
            region = layer.crop((x0, y0, x1, y1))
            inside = "".join(line.text for line in region.lines)
            for name, value in zip(figure["categories"], figure["values"]):
                assert str(value) in inside and name in inside
            assert len(layer.lines) - len(region.lines) == 1  # only the page heading, above the chart
    assert charts >= 8
