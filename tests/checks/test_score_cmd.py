"""`jocr score`: the olmOCR sample gives 94.3% with the official layout; JSON output; OmniDocBench JSON keys;
one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jocr.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = DATA / "olmocr-bench-sample"
DEMO = DATA / "omnidocbench-demo"


def test_score_sample_json(capsys):
    assert (
        main(["score", "--tests", str(SAMPLE), "--outputs", str(SAMPLE / "olmocr_pipeline"), "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    summary = out.pop("_summary")
    assert len(out) == 120 and summary["overall"] == pytest.approx(0.943, abs=5e-4)
    lo, hi = summary["ci95"]
    assert lo < summary["overall"] < hi
    assert out["mathfuncs_06"] is False and out["multi_column_miss_00"] is True
    assert summary["per_jsonl"]["baseline"] == pytest.approx(0.95)


def test_score_single_jsonl_table(capsys):
    assert (
        main(["score", "--tests", str(SAMPLE / "blanks.jsonl"), "--outputs", str(SAMPLE / "olmocr_pipeline")])
        == 0
    )
    text = capsys.readouterr().out
    assert "Overall: 100.0%" in text and "| baseline |" in text


def test_score_omnidocbench_json(capsys):
    args = [
        "score",
        "--omnidocbench",
        str(DEMO / "OmniDocBench_demo.json"),
        "--predictions",
        str(DEMO / "predictions-end2end"),
        "--json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {
        "text_edit",
        "formula_edit",
        "table_teds",
        "table_teds_s",
        "reading_order_edit",
        "overall",
    }


def test_errors_are_one_line(tmp_path, capsys):
    assert main(["score", "--tests", str(tmp_path / "missing"), "--outputs", str(tmp_path)]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pdf": "a.pdf", "page": 1, "id": "x", "type": "present"}\n')
    assert main(["score", "--tests", str(bad), "--outputs", str(tmp_path)]) == 2
    assert main(["score"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("jocr score: error:") for line in err)
