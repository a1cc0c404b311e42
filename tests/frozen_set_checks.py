"""What every frozen real-page set (data/frozen-real*) is read with and checked for, shared by the tests of
each set: its sources (`sources.json`) and test records (`pdf.jsonl`), and that every test names an
existing page of the set; and for the reading-order sets (data/frozen-order*), their copies and ground
truth."""

import json
from pathlib import Path

from jocr.checks import load_tests


def sources(root: Path) -> list[dict]:
    return json.loads((root / "sources.json").read_text())["pages"]


def records(root: Path) -> list[dict]:
    lines = (root / "pdf.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def assert_every_test_names_an_existing_page(root: Path) -> None:
    tests = records(root)
    assert len(tests) == len({r["id"] for r in tests})
    for rec in tests:
        assert rec["pdf"].startswith("pdf/") and (root / "pdfs" / rec["pdf"]).is_file(), rec["id"]
        assert rec["page"] == 1
    assert len(load_tests(root / "pdf.jsonl")) == len(tests)


def assert_an_unrelated_answer_passes_only_absent_and_baseline_tests(root: Path) -> None:
    """The tests can fail: an answer that says nothing of the page passes only the absent and baseline
    tests."""
    for test in load_tests(root / "pdf.jsonl"):
        passed, _, _ = test.run("Nothing of the page.")
        assert passed == (test.type in ("absent", "baseline")), test.id


def assert_the_copies_carry_the_pdf_tests(root: Path) -> None:
    """The scanned and photographed copies (`scan.jsonl`, `photo.jsonl`) hold each PDF test, pointed at the
    copy's image, and nothing else changed."""
    pdf = {r["id"]: r for r in records(root)}
    for variant in ("scan", "photo"):
        lines = (root / f"{variant}.jsonl").read_text(encoding="utf-8").splitlines()
        copies = [json.loads(line) for line in lines if line.strip()]
        assert len(copies) == len(pdf)
        for rec in copies:
            original = pdf[rec["id"].removesuffix(f"_{variant}")]
            stem = Path(original["pdf"]).stem
            assert rec["pdf"] == f"{variant}/{stem}.jpg" and (root / "pdfs" / rec["pdf"]).is_file()
            assert {k: v for k, v in rec.items() if k not in ("pdf", "id")} == {
                k: v for k, v in original.items() if k not in ("pdf", "id")
            }


def assert_every_page_has_tests_a_source_and_a_licence(root: Path, pages: range) -> None:
    """`len(pages)` in `pages`, ids unique, every page tested (at least 8 tests) and from a Debian package's
    documentation, its package and id named in the set's README."""
    found = sources(root)
    assert len(found) in pages and len(found) == len({s["id"] for s in found})
    readme = (root / "README.md").read_text(encoding="utf-8")
    tested = {Path(r["pdf"]).stem for r in records(root)}
    assert tested == {s["id"] for s in found}
    for src in found:
        assert src["package"] and src["licence"] and src["file"].startswith("/usr/share/doc/"), src["id"]
        assert src["package"] in readme and f"`{src['id']}`" in readme
    per_page = [sum(Path(r["pdf"]).stem == s["id"] for r in records(root)) for s in found]
    assert min(per_page) >= 8


def assert_no_source_file_shared_with_another_set(root: Path, other_sets: int) -> set[str]:
    """No page of another frozen set (at least `other_sets` of them) comes from a file this set cuts;
    returns this set's files, for the README checks each set words its own way."""
    files = {s["file"] for s in sources(root)}
    others = [p for p in root.parent.glob("frozen-*/**/sources.json") if root not in p.parents]
    assert len(others) >= other_sets
    for path in others:
        pages = json.loads(path.read_text())
        pages = pages["pages"] if isinstance(pages, dict) else pages
        assert files.isdisjoint({s.get("file") for s in pages}), path
    return files


def assert_every_order_page_has_its_copies_and_blocks(root: Path, name: str, accuracy_order) -> None:
    """A reading-order set (`benchmarks/accuracy_order.py` set `name`, the module passed in): every page
    listed in `sources.json` is one the benchmark reads, has its PDF, scan and photo, and a ground truth of
    three blocks at least."""
    listed = {s["id"] for s in sources(root)}
    assert {stem for _, stem, _ in accuracy_order.pages((name,))} == listed
    for stem in listed:
        for variant, ext in (("pdf", "pdf"), ("scan", "jpg"), ("photo", "jpg")):
            assert (root / "pdfs" / variant / f"{stem}.{ext}").is_file(), (stem, variant)
        truth = accuracy_order.gt_page((root / "gt" / f"{stem}.md").read_text(encoding="utf-8"))
        assert len(truth["layout_dets"]) >= 3, stem
