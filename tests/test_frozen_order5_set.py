"""The fifth frozen reading-order set (data/frozen-order5) is well formed: every page has a source, a
licence and the README's word on it, no page comes from a document (or a Debian package) that another
frozen set draws on, every page has its three copies and a ground truth of several blocks that the order
benchmark reads, and a page read in the wrong order scores worse than the ground truth itself."""

import json
import sys
from pathlib import Path

from frozen_set_checks import (
    assert_every_order_page_has_its_copies_and_blocks,
    assert_no_source_file_shared_with_another_set,
    sources,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-order5"
sys.path.insert(0, str(ROOT.parents[1] / "benchmarks"))

import accuracy_order  # noqa: E402


def test_every_page_has_a_source_a_licence_and_the_readme_names_it():
    found = sources(ROOT)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 10 <= len(found) == len({s["id"] for s in found})
    for src in found:
        assert src["licence"] and src["file"].startswith("/usr/share/doc/"), src["id"]
        assert src["package"] in readme and f"`{src['id']}`" in readme
        assert src["split"] == "dev"


def test_no_document_or_package_is_shared_with_another_frozen_set():
    assert_no_source_file_shared_with_another_set(ROOT, 8)
    mine = {s["package"] for s in sources(ROOT)}
    for path in ROOT.parent.glob("frozen-*/sources.json"):
        if path.parent != ROOT:
            pages = json.loads(path.read_text())
            pages = pages["pages"] if isinstance(pages, dict) else pages
            assert mine.isdisjoint({p.get("package") for p in pages}), path


def test_every_page_has_its_copies_and_a_ground_truth_of_blocks():
    assert_every_order_page_has_its_copies_and_blocks(ROOT, "frozen-order5", accuracy_order)


def test_the_ground_truth_scores_itself_perfectly_and_a_reversed_page_worse():
    from jocr.checks.omnidoc import evaluate_pages

    markdown = (ROOT / "gt" / "gnuplot-p60.md").read_text(encoding="utf-8")
    truth = accuracy_order.gt_page(markdown)
    reversed_blocks = "\n\n".join(reversed(markdown.strip().split("\n\n")))
    assert evaluate_pages([(truth, markdown)]).reading_order_edit == 0.0
    assert evaluate_pages([(truth, reversed_blocks)]).reading_order_edit > 0.5
