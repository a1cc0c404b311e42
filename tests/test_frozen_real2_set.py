"""The second frozen real-page set (data/frozen-real2) is well formed: every test names an existing page,
every page has tests, a source and a licence, half the pages are Chinese and carry the CJK baseline test,
and the tests can fail (an answer that says nothing of the page passes only the absent and baseline
tests)."""

import json
from pathlib import Path

from frozen_set_checks import (
    assert_an_unrelated_answer_passes_only_absent_and_baseline_tests,
    assert_every_test_names_an_existing_page,
    records,
    sources,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-real2"


def _sources() -> list[dict]:
    return sources(ROOT)


def _records() -> list[dict]:
    return records(ROOT)


def test_every_test_names_an_existing_page():
    assert_every_test_names_an_existing_page(ROOT)


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
    assert_an_unrelated_answer_passes_only_absent_and_baseline_tests(ROOT)
