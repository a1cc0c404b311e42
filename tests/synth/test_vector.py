"""Vector synthetic pages: real PDFs typeset by Chromium, read back through the user's text-layer path."""

from __future__ import annotations

import json
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from jocr.checks import load_tests, run_tests
from jocr.documents.pages import LoadOptions, open_source
from jocr.lines.anchor import build_anchor
from jocr.lines.textlayer import read_page
from jocr.tokenizer import Tokenizer

FROZEN = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "vector"


def _layer(data):
    with open_source(data, LoadOptions()) as source:
        assert source.num_pages == 1
        return source.text_layer(0)


def test_frozen_vector_set_reads_like_a_users_pdf():
    manifest = json.loads((FROZEN / "manifest.json").read_text())
    tests = load_tests(FROZEN / "vector_test.jsonl")
    assert manifest["pages"] == 8 and len(tests) == manifest["tests"] == 225
    by_pdf: dict[str, list] = {}
    for test in tests:
        by_pdf.setdefault(test.pdf, []).append(test)
    tok = Tokenizer.byte_level()
    present_in_layer = present = 0
    for pdf in sorted((FROZEN / "pdfs").iterdir()):
        layer = _layer(str(pdf))
        assert layer.verdict == "ok", (pdf.name, layer.note)
        markdown = (FROZEN / "gt" / f"{pdf.stem}_pg1_repeat1.md").read_text(encoding="utf-8")
        for result in run_tests(by_pdf[pdf.name], markdown):
            assert result.passed, (pdf.name, result.reason)
        text = " ".join(layer.text.split())
        for test in by_pdf[pdf.name]:
            if test.type == "present":
                present += 1
                present_in_layer += " ".join(test.text.split()) in text
        anchor = build_anchor(layer, tok, max_tokens=100_000)
        assert anchor.lines == anchor.lines_total > 10
    # Present-test snippets found verbatim in the text layer (with whitespace collapsed): measured 62 of 64;
    # the others break across a column or page edge.
    assert present_in_layer >= 62 and present == 64


@pytest.mark.browser
def test_vector_page_generation(tmp_path):
    # Debian chromium and playwright come from scripts/setup.sh (a skip would fail the suite: conftest.py).
    from jocr.synth.vector import VectorRenderer, vector_page

    with VectorRenderer() as renderer:
        page = vector_page(4, renderer)
    doc = pdfium.PdfDocument(page.pdf)
    assert len(doc) == 1
    width, height = doc[0].get_size()
    assert any(abs(width - w) <= 1 and abs(height - h) <= 1 for w, h in ((612, 792), (595, 842)))
    layer = read_page(doc[0])
    assert layer.verdict == "ok"
    headings = [line[2:] for line in page.markdown.splitlines() if line.startswith("# ")]
    assert headings and headings[0] in layer.text
    assert page.tests and all(t["pdf"] == "vector_0000000004.pdf" for t in page.tests)
    assert {t["type"] for t in page.tests} >= {"present", "absent"}
    # Furniture is printed but never written: its text is in the layer and absent from the Markdown.
    for text in page.meta["furniture"].values():
        assert text in layer.text and text not in page.markdown.splitlines()


def test_cli_refuses_vector_options_that_do_not_apply(tmp_path, capsys):
    from jocr.cli import main

    assert main(["synth", str(tmp_path / "v"), "--profile", "vector", "--degrade"]) == 2
    assert "does not apply" in capsys.readouterr().err


def test_furniture_comes_and_goes_and_moves_in_content_order():
    # An anchored model must not learn that the first runs are furniture (the first anchored run restarted
    # every window at `@4`, past a header, footer and page number printed first on every training page).
    import random

    from jocr.synth.vector import _running_items

    pages = [_running_items(random.Random(seed), cjk=False) for seed in range(400)]
    kinds = [{item.kind for item in page} for page in pages]
    for kind, share in (("header", 0.75), ("footer", 0.5), ("page_number", 0.8)):
        assert abs(sum(kind in k for k in kinds) / len(pages) - share) < 0.07, kind
    assert any(not page for page in pages)
    firsts = [item.first for page in pages for item in page]
    assert 0.3 < sum(firsts) / len(firsts) < 0.7
    for page in pages:
        top = [item for item in page if item.edge == "top"]
        assert len({item.align for item in top}) == len(top), "two top items share a corner"
        assert all(item.kind != "footer" or item.edge == "bottom" for item in page)
