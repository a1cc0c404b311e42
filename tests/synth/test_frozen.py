"""The frozen test sets: regeneration reproduces the recorded bytes, and the ground truth scores 100%."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jocr.checks import load_tests, run_tests
from jocr.synth import FROZEN_TEST_SETS, GENERATOR_VERSION, generate_page, global_seed, write_dataset
from jocr.synth.dataset import library_versions, page_digests, page_files

FROZEN_DIR = Path(__file__).resolve().parents[2] / "data" / "frozen-test"


def _record(name: str) -> dict:
    return json.loads((FROZEN_DIR / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name,count", [("cpu-small", 12), ("page", 2)])
def test_frozen_set_regenerates_identically(name, count):
    record = _record(name)
    recipe = FROZEN_TEST_SETS[name]
    assert record["generator_version"] == GENERATOR_VERSION, "generator changed: rewrite data/frozen-test"
    assert (record["profile"], record["split"], record["pages"]) == (
        recipe["profile"],
        "test",
        recipe["pages"],
    )
    assert len(record["digests"]) == recipe["pages"]
    # Font metrics decide which blocks fit on a page, so even the text can differ with other FreeType or
    # DejaVu builds: byte identity is promised for the recorded library versions, which setup installs.
    assert record["libraries"] == library_versions(), "library versions differ from the recorded ones"
    for offset in range(recipe["seed"], recipe["seed"] + count):
        page = generate_page(global_seed("test", offset), recipe["profile"], degrade=recipe["degrade"])
        expected = record["digests"][page.meta["name"]]
        assert page_digests(page_files(page)) == expected, page.meta["name"]


def _score(tmp_path, capsys) -> dict:
    from jocr.cli import main

    assert main(["score", "--tests", str(tmp_path), "--outputs", str(tmp_path / "gt"), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["_summary"]


@pytest.mark.parametrize("page_format", ["pdf", "png"])
def test_frozen_ground_truth_scores_100_percent(tmp_path, capsys, page_format):
    """The first 25 frozen cpu-small pages, written as `jocr synth` writes them, scored as outputs."""
    recipe = FROZEN_TEST_SETS["cpu-small"]
    summary = write_dataset(
        tmp_path,
        pages=25,
        seed=recipe["seed"],
        split="test",
        profile=recipe["profile"],
        page_format=page_format,
    )
    tests = load_tests(summary.jsonl)
    assert len(tests) == summary.tests > 75
    for test in tests:
        stem = test.pdf.removesuffix(f".{page_format}")
        markdown = (tmp_path / "gt" / f"{stem}_pg1_repeat1.md").read_text(encoding="utf-8")
        assert (tmp_path / "pdfs" / test.pdf).exists()
        (result,) = run_tests([test], markdown)
        assert result.passed, (test.id, result.reason)
    scored = _score(tmp_path, capsys)
    assert scored["missing_outputs"] == 0
    assert scored["overall"] == 1.0 and scored["tests"] == len(tests)
