"""data/frozen-real-table-pages2 (held out): every page image is there, each record's tables and truth agree,
the truth is well-formed HTML that scores 1 against itself, and an answer without its table scores 0."""

import json
from pathlib import Path

from jocr.checks.table_pages import html_tables, score_page

ROOT = Path(__file__).resolve().parents[1] / "data/frozen-real-table-pages2"


def _manifest() -> list[dict]:
    return [json.loads(line) for line in (ROOT / "manifest.jsonl").read_text().splitlines() if line.strip()]


def test_every_page_image_is_there_with_its_tables():
    rows = _manifest()
    assert len(rows) == 10 and len({r["id"] for r in rows}) == 10
    assert sorted(r["kind"] for r in rows) == ["photo"] * 5 + ["scan"] * 5
    pages = [json.loads(line) for line in (ROOT / "pages.jsonl").read_text().splitlines() if line.strip()]
    assert [p["id"] for p in pages] == [r["id"] for r in rows]
    for row in rows:
        assert (ROOT / row["image"]).is_file(), row["id"]
        assert len(row["tables"]) == len(row["html"]) == 1


def test_the_truth_scores_one_against_itself_and_a_page_without_it_zero():
    for row in _manifest():
        (truth,) = row["html"]
        assert html_tables(truth) == [truth], row["id"]
        result = score_page(row["html"], f"Some text.\n\n{truth}\n")
        assert result.scores == [(1.0, 1.0)] and result.found == 1, row["id"]
        empty = score_page(row["html"], "Some text, no table.")
        assert empty.missed == 1 and empty.found == 0, row["id"]
