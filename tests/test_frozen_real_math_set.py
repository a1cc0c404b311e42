"""The real math sets (data/frozen-real-math, its heldout/ and heldout2/) are well formed: every test names an
existing one-page PDF, every test's LaTeX renders, every page has a source, a licence and a test."""

import json
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from jocr.checks import load_tests

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-real-math"
SETS = (ROOT, ROOT / "heldout", ROOT / "heldout2")


def _records(folder: Path) -> list[dict]:
    lines = (folder / "math.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("folder", SETS, ids=lambda p: p.name)
def test_every_test_names_a_one_page_pdf_and_renders(folder):
    records = _records(folder)
    assert len(records) == len({r["id"] for r in records})
    for rec in records:
        assert rec["type"] == "math" and rec["page"] == 1, rec["id"]
        with pdfium.PdfDocument(str(folder / "pdfs" / rec["pdf"])) as doc:
            assert len(doc) == 1, rec["pdf"]
    assert len(load_tests(folder / "math.jsonl")) == len(records)  # all valid: each reference renders


@pytest.mark.parametrize("folder", SETS, ids=lambda p: p.name)
def test_every_page_has_a_source_a_licence_and_tests(folder):
    sources = json.loads((folder / "sources.json").read_text())["pages"]
    assert (folder / "README.md").is_file()
    tested = {Path(r["pdf"]).stem for r in _records(folder)}
    for src in sources:
        assert src["package"] and src["licence"], src["id"]
        assert src["file"].startswith("/usr/share/doc/") and src["page"] >= 1, src["id"]
    assert tested == {s["id"] for s in sources}


@pytest.mark.parametrize("folder", SETS, ids=lambda p: p.name)
def test_the_scanned_and_photographed_copies_carry_the_same_tests(folder):
    records = _records(folder)
    for variant in ("scan", "photo"):
        lines = (folder / f"{variant}.jsonl").read_text(encoding="utf-8").splitlines()
        copies = [json.loads(line) for line in lines if line.strip()]
        assert [c["id"] for c in copies] == [f"{r['id']}_{variant}" for r in records]
        assert [c["math"] for c in copies] == [r["math"] for r in records]
        for copy in copies:
            assert copy["pdf"] == f"{variant}/{Path(copy['pdf']).stem}.jpg"
            assert (folder / "pdfs" / copy["pdf"]).is_file(), copy["pdf"]
