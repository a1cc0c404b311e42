"""Training data for charts and captions: chart and table questions on the `jocr ask` path ("charts"), and
caption samples ("caption") built from a chart's crop, the crop's own anchor and the caption prompt, with the
reference caption as the target; the config that mixes them loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from jocr.tokenizer import ANCHOR_OPEN, PROMPTS, Tokenizer
from jocr.train.config import TrainConfig
from jocr.train.data import DataConfig, SampleMaker
from jocr.train.docqa_data import caption_sample_parts, figure_captions, read_records
from jocr.train.sft import build_model

ROOT = Path(__file__).resolve().parents[2]
CHARTS_DIR = ROOT / "data" / "frozen-test" / "docqa-charts"


def _data(profiles: dict[str, float], dropout: float = 0.0) -> DataConfig:
    return DataConfig(
        stages=[{"samples": 100, "profiles": profiles}],
        charts_dir=str(CHARTS_DIR),
        anchor_dropout=dropout,
        anchor_max_tokens=4000,
        max_target_tokens=2000,
        dedup=False,
    )


def _maker(profiles, tiny_model_cfg, byte_tokenizer_path, dropout: float = 0.0):
    tok = Tokenizer.from_file(byte_tokenizer_path)
    cfg = TrainConfig.from_dict({"model": tiny_model_cfg, "tokenizer": {"path": str(byte_tokenizer_path)}})
    vision = build_model(cfg, tok).config.vision
    return SampleMaker(_data(profiles, dropout), tok, vision), tok


def test_caption_samples_are_the_crop_its_anchor_and_the_caption(tiny_model_cfg, byte_tokenizer_path):
    maker, tok = _maker({"caption": 1.0}, tiny_model_cfg, byte_tokenizer_path)
    figures = figure_captions(read_records(str(CHARTS_DIR)))
    captions = {f["caption"]: f for _, _, f in figures}
    for index in range(3):
        image, prompt, anchor, target = caption_sample_parts(maker, index, 100 + index)
        figure = captions[target]
        x0, y0, x1, y1 = figure["box"]
        assert prompt == PROMPTS["caption"]
        assert abs(image.width / image.height - (x1 - x0) / (y1 - y0)) < 0.02  # the chart's box, cut out
        assert anchor.startswith(f"page {x1 - x0}x{y1 - y0}\n")  # the crop's own frame
        assert all(str(v) in anchor for v in figure["values"])
    sample = maker.make(0)
    prompt_text = tok.decode([t for t, label in zip(sample.input_ids, sample.labels) if label == -100])
    assert sample.profile == "caption" and sample.anchored
    assert prompt_text.startswith("\n" + PROMPTS["caption"]) and ANCHOR_OPEN in prompt_text
    assert tok.decode([x for x in sample.labels if x not in (-100, tok.eos_id)]) in captions


def test_chart_questions_go_through_the_question_path(tiny_model_cfg, byte_tokenizer_path):
    maker, tok = _maker({"charts": 1.0}, tiny_model_cfg, byte_tokenizer_path, dropout=1.0)
    questions = {q["question"] for _, r in read_records(str(CHARTS_DIR)) for q in r["questions"]}
    sample = maker.make(1)
    prompt = tok.decode([t for t, label in zip(sample.input_ids, sample.labels) if label == -100])
    assert sample.profile == "charts" and not sample.anchored
    assert prompt.strip() in questions or prompt.strip().startswith("Extract these fields")


def test_the_charts_profiles_need_their_folder_and_the_config_loads():
    with pytest.raises(ValueError, match="charts_dir"):
        DataConfig(stages=[{"samples": 1, "profiles": {"caption": 1.0}}])
    cfg = TrainConfig.load(ROOT / "configs" / "sft-ask-charts.yaml")
    assert set(cfg.data.stages[0].profiles) == {"docqa", "charts", "caption", "vector"}
    assert cfg.data.anchored and cfg.data.charts_dir == "runs/charts-train"
