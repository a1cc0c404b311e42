"""The tile limit as a setting: VisionConfig.max_tiles, `--max-tiles` on parse and serve, load_model."""

from __future__ import annotations

from pathlib import Path

import pytest

from jocr.cli import main
from jocr.config import OCRConfig
from jocr.documents.preprocess import page_grid
from jocr.pipeline import load_model
from jocr.serve.backend import EngineBackend

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_deepseek_and_vllm_limits_tile_a_1920x1080_page_differently():
    vision = OCRConfig.preset("deepseek-ocr").vision
    assert vision.max_tiles == 9
    assert page_grid(1920, 1080, vision) == ((4, 2), True)  # DeepSeek-OCR's Transformers code: 2-9 tiles
    vision.max_tiles = 6
    assert page_grid(1920, 1080, vision) == ((2, 1), True)  # its vLLM config and vLLM: 2-6


def test_load_model_and_serve_backend_take_max_tiles():
    loaded = load_model(MODELS, max_tiles=6, cache=False)
    assert loaded.vision.max_tiles == 6
    assert EngineBackend.from_dir(MODELS, max_tiles=4).vision.max_tiles == 4
    with pytest.raises(ValueError, match="max_tiles"):
        load_model(MODELS, max_tiles=1, cache=False)  # below min_tiles (2)


def test_parse_cli_rejects_a_bad_max_tiles_in_one_line(tmp_path, capsys):
    image = tmp_path / "page.png"
    from PIL import Image

    Image.new("RGB", (64, 64), "white").save(image)
    assert (
        main(["parse", str(image), "-o", str(tmp_path), "--model", str(MODELS), "--max-tiles", "0", "-q"])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_tiles" in err[0]
