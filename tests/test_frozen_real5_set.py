"""The fifth frozen real-page set (data/frozen-real5) is well formed: every test names an existing page,
every page has tests, a source and a licence, no page comes from a document another frozen set takes pages
from (their sources.json files and READMEs), every page is Chinese and carries the CJK baseline test, the
tests can fail, and the scanned and photographed copies carry the PDF's tests."""

import re
from pathlib import Path

from frozen_set_checks import (
    assert_an_unrelated_answer_passes_only_absent_and_baseline_tests,
    assert_every_page_has_tests_a_source_and_a_licence,
    assert_every_test_names_an_existing_page,
    assert_no_source_file_shared_with_another_set,
    assert_the_copies_carry_the_pdf_tests,
    records,
    sources,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-real5"


def test_every_test_names_an_existing_page():
    assert_every_test_names_an_existing_page(ROOT)


def test_every_page_has_tests_a_source_and_a_licence():
    assert_every_page_has_tests_a_source_and_a_licence(ROOT, range(10, 15))


def test_no_document_is_shared_with_another_frozen_set():
    files = assert_no_source_file_shared_with_another_set(ROOT, 9)
    # a file name counts as named where no other name runs into it ("example.pdf" is not in
    # "beamerswitch-example.pdf")
    names = [re.compile(rf"(?<![\w.-]){re.escape(Path(f).name)}") for f in files]
    for readme in ROOT.parent.glob("frozen-*/README.md"):
        if readme.parent != ROOT:
            text = readme.read_text(encoding="utf-8")
            assert not [f for f in files if f in text], readme
            assert not [n.pattern for n in names if n.search(text)], readme


def test_every_page_is_chinese_and_carries_the_cjk_baseline():
    pages = sources(ROOT)
    assert {s["lang"] for s in pages} == {"zh"}
    baselines = {Path(r["pdf"]).stem for r in records(ROOT) if r["type"] == "baseline"}
    assert baselines == {s["id"] for s in pages}


def test_an_unrelated_answer_passes_only_absent_and_baseline_tests():
    assert_an_unrelated_answer_passes_only_absent_and_baseline_tests(ROOT)


def test_the_scanned_and_photographed_copies_carry_the_pdf_tests():
    assert_the_copies_carry_the_pdf_tests(ROOT)
