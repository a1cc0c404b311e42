"""The frozen real-page set (data/frozen-real) is well formed: every test's page exists, the three variants
carry the same tests, every page has a source and a licence, the tests pass on the hand-checked Markdown."""

import json
from pathlib import Path

import pytest
from PIL import Image

from jocr.checks import load_tests
from jocr.checks.markdown_edit import markdown_edit_distance

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-real"
VARIANTS = ("pdf", "scan", "photo")


def _sources() -> list[dict]:
    return json.loads((ROOT / "sources.json").read_text())["pages"]


def _records(variant: str) -> list[dict]:
    lines = (ROOT / f"{variant}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_test_names_an_existing_page_of_its_variant(variant):
    records = _records(variant)
    assert len(records) == len({r["id"] for r in records})
    for rec in records:
        assert rec["pdf"].startswith(f"{variant}/"), rec["id"]
        assert (ROOT / "pdfs" / rec["pdf"]).is_file(), rec["pdf"]
        assert rec["page"] == 1
    assert len(load_tests(ROOT / f"{variant}.jsonl")) == len(records)  # all valid, math renders


def test_variants_carry_the_same_tests():
    base = {r["id"]: r for r in _records("pdf")}
    for variant in ("scan", "photo"):
        for rec in _records(variant):
            original = base[rec["id"].removesuffix(f"_{variant}")]
            stem = Path(original["pdf"]).stem
            assert rec == {**original, "id": rec["id"], "pdf": f"{variant}/{stem}.jpg"}
        assert len(_records(variant)) == len(base)


def test_every_page_has_its_variants_tests_source_and_licence():
    sources = _sources()
    assert len(sources) == len({s["id"] for s in sources}) >= 24
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tested = {Path(r["pdf"]).stem for r in _records("pdf")}
    for src in sources:
        assert src["package"] and src["licence"] and src["file"].startswith("/usr/share/doc/"), src["id"]
        assert src["package"] in readme and src["id"].split("-")[0] in readme
        assert (ROOT / "pdfs" / "pdf" / f"{src['id']}.pdf").is_file()
        for variant in ("scan", "photo"):
            with Image.open(ROOT / "pdfs" / variant / f"{src['id']}.jpg") as image:
                assert image.format == "JPEG" and 1000 <= max(image.size) <= 2200, (variant, src["id"])
        assert src["id"] in tested
    assert tested == {s["id"] for s in sources}


def test_tests_pass_on_the_hand_checked_markdown():
    gt = {p.stem: p.read_text(encoding="utf-8") for p in (ROOT / "gt").glob("*.md")}
    assert len(gt) >= 12
    checked = 0
    for test in load_tests(ROOT / "pdf.jsonl"):
        stem = Path(test.pdf).stem
        if stem in gt:
            passed, _, reason = test.run(gt[stem])
            assert passed, f"{test.id}: {reason}"
            checked += 1
    assert checked >= 100
    for (
        stem,
        markdown,
    ) in gt.items():  # a hand-checked page is at distance 0 from itself, and not from nothing
        assert markdown_edit_distance(markdown, markdown) == 0.0
        assert markdown_edit_distance("", markdown) == 1.0, stem


def test_chinese_pages_carry_a_baseline_test_that_allows_cjk():
    zh = {s["id"] for s in _sources() if s["lang"] == "zh"}
    assert zh
    baselines = {Path(r["pdf"]).stem: r for r in _records("pdf") if r["type"] == "baseline"}
    for page in zh:
        assert baselines[page].get("check_disallowed_characters") is False, page
