"""Formula crops in training (profile "formula-crop"): asked with the formula prompt, as `jocr parse --task
formula` asks an image, the formula task's form as the target."""

from __future__ import annotations

from jocr.tokenizer import PROMPTS, Tokenizer
from jocr.train.config import TrainConfig
from jocr.train.data import FORMULA_CROP, DataConfig, SampleMaker
from jocr.train.sft import build_model


def test_formula_crops_are_asked_with_the_formula_prompt(tiny_model_cfg, byte_tokenizer_path):
    tok = Tokenizer.from_file(byte_tokenizer_path)
    cfg = TrainConfig.from_dict({"model": tiny_model_cfg, "tokenizer": {"path": str(byte_tokenizer_path)}})
    vision = build_model(cfg, tok).config.vision
    data = DataConfig(stages=[{"samples": 10, "profiles": {FORMULA_CROP: 1.0}}], max_target_tokens=10_000)
    sample = SampleMaker(data, tok, vision).make(0)
    prompt = tok.decode([t for t, label in zip(sample.input_ids, sample.labels) if label == -100])
    target = tok.decode([x for x in sample.labels if x != -100])
    assert sample.profile == FORMULA_CROP and not sample.anchored
    assert prompt.endswith(PROMPTS["formula"]) and target.startswith("$$\n") and target.endswith("\n$$")
