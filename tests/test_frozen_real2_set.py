"""The second frozen real-page set (data/frozen-real2) is well formed: every test names an existing page,
every page has tests, a source and a licence, half the pages are Chinese and carry the CJK baseline test,
and the tests can fail (an answer that says nothing of the page passes only the absent and baseline
tests)."""

import json
from pathlib import Path

from jocr.checks import load_tests

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-real2"


def _sources() -> list[dict]:
    return json.loads((ROOT / "sources.json").read_text())["pages"]


def _records() -> list[dict]:
    lines = (ROOT / "pdf.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_every_test_names_an_existing_page():
    records = _records()
    assert len(records) == len({r["id"] for r in records})
    for rec in records:
        assert rec["pdf"].startswith("pdf/") and (ROOT / "pdfs" / rec["pdf"]).is_file(), rec["id"]
        assert rec["page"] == 1
    assert len(load_tests(ROOT / "pdf.jsonl")) == len(records)


def test_every_page_has_tests_a_source_and_a_licence():
    sources = _sources()
    assert len(sources) == len({s["id"] for s in sources}) >= 12
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tested = {Path(r["pdf"]).stem for r in _records()}
    assert tested == {s["id"] for s in sources}
    for src in sources:
        assert src["package"] and src["licence"] and src["file"].startswith("/usr/share/doc/"), src["id"]
        assert src["package"] in readme and src["id"].split("-")[0] in readme


def test_pages_differ_from_the_first_frozen_set():
    first = json.loads((ROOT.parent / "frozen-real" / "sources.json").read_text())["pages"]
    assert {(s["file"], s["page"]) for s in _sources()}.isdisjoint({(s["file"], s["page"]) for s in first})


def test_half_the_pages_are_chinese_with_the_cjk_baseline():
    sources = _sources()
    zh = {s["id"] for s in sources if s["lang"] == "zh"}
    assert 2 * len(zh) == len(sources)
    baselines = {Path(r["pdf"]).stem for r in _records() if r["type"] == "baseline"}
    assert baselines == zh


def test_an_unrelated_answer_passes_only_absent_and_baseline_tests():
    for test in load_tests(ROOT / "pdf.jsonl"):
        passed, _, _ = test.run("Nothing of the page.")
        assert passed == (test.type in ("absent", "baseline")), test.id
