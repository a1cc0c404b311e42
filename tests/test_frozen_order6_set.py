"""The sixth frozen reading-order set (data/frozen-order6) is well formed: every page has a source, a
licence and the README's word on it, is held out, and comes from a document (and a Debian package) that no
other frozen set draws on; the pages are the kinds the README promises (four of them Chinese); every page has
its three copies and a ground truth of several blocks that the order benchmark reads, with its tables as
tables; and a page read in the wrong order scores worse than the ground truth itself."""

import json
import sys
from collections import Counter
from pathlib import Path

from frozen_set_checks import (
    assert_every_order_page_has_its_copies_and_blocks,
    assert_no_source_file_shared_with_another_set,
    sources,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-order6"
sys.path.insert(0, str(ROOT.parents[1] / "benchmarks"))

import accuracy_order  # noqa: E402


def test_every_page_has_a_source_a_licence_and_the_readme_names_it():
    found = sources(ROOT)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(found) == 16 == len({s["id"] for s in found})
    for src in found:
        assert src["licence"] and src["file"].startswith("/usr/share/doc/"), src["id"]
        assert src["package"] in readme and f"`{src['id']}`" in readme
        assert src["split"] == "heldout"
        assert isinstance(src["page"], int) and src["page"] >= 1


def test_the_pages_are_the_promised_mix_of_kinds_and_languages():
    found = sources(ROOT)
    kinds = Counter(s["kind"] for s in found)
    assert kinds["slide"] == 2 and kinds["two-column-title"] == 2 and kinds["newsletter"] == 1
    assert kinds["title-page"] == 1 and kinds["table-between-paragraphs"] == 1
    assert Counter(s["lang"] for s in found)["zh"] == 4


def test_no_document_or_package_is_shared_with_another_frozen_set():
    assert_no_source_file_shared_with_another_set(ROOT, 9)
    mine = {s["package"] for s in sources(ROOT)}
    for path in ROOT.parent.glob("frozen-*/**/sources.json"):
        if ROOT not in path.parents:
            pages = json.loads(path.read_text())
            pages = pages["pages"] if isinstance(pages, dict) else pages
            assert mine.isdisjoint({p.get("package") for p in pages}), path
    others = "\n".join(
        p.read_text(encoding="utf-8") for p in ROOT.parent.glob("frozen-*/README.md") if p.parent != ROOT
    )
    for package in mine:
        assert package not in others, package


def test_every_page_has_its_copies_and_a_ground_truth_of_blocks():
    assert_every_order_page_has_its_copies_and_blocks(ROOT, "frozen-order6", accuracy_order)


def test_the_tables_between_paragraphs_are_read_as_tables():
    for stem in ("biblatexext-p32", "oegatb-p1"):
        truth = accuracy_order.gt_page((ROOT / "gt" / f"{stem}.md").read_text(encoding="utf-8"))
        kinds = [d["category_type"] for d in truth["layout_dets"]]
        assert kinds.count("table") == 1 and kinds[-1] != "table" and kinds[0] != "table", stem


def test_the_ground_truth_scores_itself_perfectly_and_a_reversed_page_worse():
    from jocr.checks.omnidoc import evaluate_pages

    markdown = (ROOT / "gt" / "newssamp-p1.md").read_text(encoding="utf-8")
    truth = accuracy_order.gt_page(markdown)
    reversed_blocks = "\n\n".join(reversed(markdown.strip().split("\n\n")))
    assert evaluate_pages([(truth, markdown)]).reading_order_edit == 0.0
    assert evaluate_pages([(truth, reversed_blocks)]).reading_order_edit > 0.5
