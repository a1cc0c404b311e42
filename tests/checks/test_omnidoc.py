"""OmniDocBench-style metrics on the demo slice against the official v1.5 numbers (tests/data/README.md)."""

from __future__ import annotations

from pathlib import Path

from jocr.checks.omnidoc import assign, evaluate_dir

DEMO = Path(__file__).resolve().parents[1] / "data" / "omnidocbench-demo"
OFFICIAL = {
    "text_edit": 0.351,
    "formula_edit": 0.319,
    "table_teds": 0.784,
    "table_teds_s": 0.912,
    "table_edit": 0.203,
    "reading_order_edit": 0.161,
}


def test_demo_metrics_within_0_02_of_official():
    scores = evaluate_dir(DEMO / "OmniDocBench_demo.json", DEMO / "predictions-end2end").as_dict()
    assert scores["pages"] == 18
    for key, value in OFFICIAL.items():
        assert abs(scores[key] - value) <= 0.02, (key, scores[key], value)


def test_ground_truth_markdown_scores_near_perfect():
    scores = evaluate_dir(DEMO / "OmniDocBench_demo.json", DEMO / "mds").as_dict()
    assert scores["table_teds"] > 0.9 and scores["text_edit"] < 0.15


def test_assignment_is_optimal():
    assert assign([[1, 0], [0, 1]]) == [(0, 1), (1, 0)]
    assert assign([[5, 1, 9]]) == [(0, 1)]
    assert assign([[3], [1], [2]]) == [(1, 0)]
