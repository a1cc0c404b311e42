"""The third frozen real-page set (data/frozen-real3) is well formed: every test names an existing page,
every page has tests, a source and a licence, no page comes from a document another frozen set takes pages
from, the Chinese pages (and only they) carry the CJK baseline test, and the tests can fail (an answer
that says nothing of the page passes only the absent and baseline tests)."""

import json
from pathlib import Path

from frozen_set_checks import (
    assert_an_unrelated_answer_passes_only_absent_and_baseline_tests,
    assert_every_test_names_an_existing_page,
    assert_the_copies_carry_the_pdf_tests,
    records,
    sources,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-real3"
OTHER_SETS = ("frozen-real", "frozen-real2", "frozen-order", "frozen-order2", "frozen-real-math")
# The QA sets have no sources.json: their READMEs name the files they cut.
QA_SETS = ("frozen-real-qa", "frozen-real-qa2")


def _sources() -> list[dict]:
    return sources(ROOT)


def _records() -> list[dict]:
    return records(ROOT)


def test_every_test_names_an_existing_page():
    assert_every_test_names_an_existing_page(ROOT)


def test_every_page_has_tests_a_source_and_a_licence():
    sources = _sources()
    assert 14 <= len(sources) == len({s["id"] for s in sources}) <= 16
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tested = {Path(r["pdf"]).stem for r in _records()}
    assert tested == {s["id"] for s in sources}
    for src in sources:
        assert src["package"] and src["licence"] and src["file"].startswith("/usr/share/doc/"), src["id"]
        assert src["package"] in readme and f"`{src['id']}`" in readme
    per_page = [sum(Path(r["pdf"]).stem == s["id"] for r in _records()) for s in sources]
    assert min(per_page) >= 8


def test_no_document_is_shared_with_another_frozen_set():
    files = {s["file"] for s in _sources()}
    for name in OTHER_SETS:
        other = json.loads((ROOT.parent / name / "sources.json").read_text())["pages"]
        assert files.isdisjoint({s["file"] for s in other}), name
    for name in QA_SETS:
        readme = (ROOT.parent / name / "README.md").read_text(encoding="utf-8")
        assert not [f for f in files if f in readme], name


def test_mostly_english_and_the_chinese_pages_carry_the_cjk_baseline():
    sources = _sources()
    zh = {s["id"] for s in sources if s["lang"] == "zh"}
    assert 3 <= len(zh) <= 4 and {s["lang"] for s in sources} == {"en", "zh"}
    baselines = {Path(r["pdf"]).stem for r in _records() if r["type"] == "baseline"}
    assert baselines == zh


def test_an_unrelated_answer_passes_only_absent_and_baseline_tests():
    assert_an_unrelated_answer_passes_only_absent_and_baseline_tests(ROOT)


def test_the_scanned_and_photographed_copies_carry_the_pdf_tests():
    assert_the_copies_carry_the_pdf_tests(ROOT)
