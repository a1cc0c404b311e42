"""`jocr model info`: parameter counts of the published preset, JSON output, one-line errors."""

from __future__ import annotations

import json

from jocr.cli import main
from jocr.config import OCRConfig
from jocr.model import OCRModel


def test_published_preset_counts(capsys):
    assert main(["model", "info", "--preset", "deepseek-ocr", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert 3.3e9 <= info["total_params"] <= 3.5e9  # "3.4B parameters in total"
    assert 0.55e9 <= info["active_params"] <= 0.60e9  # "about 570M active per decoded token"
    # active = decoder layers without routed experts + 6/64 of the routed experts + lm_head
    assert info["active_params"] == (
        info["decoder_layer_params"] + info["routed_expert_params"] * 6 // 64 + info["lm_head_params"]
    )
    assert info["mtp_params"] == 1280 * 2560 + 4 * 1280 * 1280 + 3 * 1280 * 6848 + 4 * 1280


def test_counts_match_a_real_model_directory(tmp_path, capsys):
    model = OCRModel(OCRConfig.preset("tiny"))
    model.save_pretrained(tmp_path)
    assert main(["model", "info", "--model", str(tmp_path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["total_params"] == sum(p.numel() for p in model.parameters())
    assert main(["model", "info", "--model", str(tmp_path)]) == 0
    assert "active per decoded token" in capsys.readouterr().out


def test_errors_are_one_line(tmp_path, capsys):
    assert main(["model", "info", "--preset", "nope"]) == 2
    assert main(["model", "info", "--model", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("jocr model: error:") for line in err)
