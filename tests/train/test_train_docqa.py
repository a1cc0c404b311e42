"""Training data for asking a page: samples from `jocr.synth.docqa` documents built on the `jocr ask`
prompt path, and a 2-step SFT smoke run on them (the targets themselves: tests/train/test_docqa_data.py)."""

from __future__ import annotations

import json
from pathlib import Path

from jocr.lines.anchor import ANCHOR_VERSION
from jocr.tokenizer import ANCHOR_OPEN, Tokenizer
from jocr.train.config import TrainConfig
from jocr.train.data import DataConfig, SampleMaker
from jocr.train.docqa_data import read_records
from jocr.train.sft import build_model, train_sft

DOCQA_DIR = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa"


def _data(dropout: float) -> DataConfig:
    return DataConfig(
        stages=[{"samples": 100, "profiles": {"docqa": 1.0}}],
        docqa_dir=str(DOCQA_DIR),
        anchor_dropout=dropout,
        anchor_max_tokens=4000,
        max_target_tokens=2000,
        dedup=False,
    )


def test_docqa_samples_put_the_question_then_the_anchor(tiny_model_cfg, byte_tokenizer_path):
    tok = Tokenizer.from_file(byte_tokenizer_path)
    cfg = TrainConfig.from_dict({"model": tiny_model_cfg, "tokenizer": {"path": str(byte_tokenizer_path)}})
    vision = build_model(cfg, tok).config.vision
    questions = {q["question"] for _, r in read_records(str(DOCQA_DIR)) for q in r["questions"]}
    sample = SampleMaker(_data(0.0), tok, vision).make(0)
    prompt = tok.decode([t for t, label in zip(sample.input_ids, sample.labels) if label == -100])
    question = prompt[1 : prompt.index(ANCHOR_OPEN)]
    assert sample.anchored and sample.profile == "docqa" and prompt.startswith("\n")
    assert question in questions or question.startswith("Extract these fields")
    assert prompt.endswith("</anchor>") and tok.decode([x for x in sample.labels if x != -100])
    plain = SampleMaker(_data(1.0), tok, vision).make(0)
    assert not plain.anchored and ANCHOR_OPEN not in tok.decode(plain.input_ids)


def test_docqa_sft_smoke_run(tmp_path, tiny_model_cfg, byte_tokenizer_path):
    cfg = TrainConfig.from_dict(
        {
            "kind": "sft",
            "run_dir": str(tmp_path / "run"),
            "model": tiny_model_cfg,
            "tokenizer": {"path": str(byte_tokenizer_path)},
            "data": {
                "stages": [{"samples": 1000, "profiles": {"docqa": 1.0}}],
                "docqa_dir": str(DOCQA_DIR),
                "anchor_dropout": 0.3,
                "anchor_max_tokens": 64,
                "max_target_tokens": 2000,
                "dedup": False,
            },
            "batch_size": 1,
            "max_steps": 2,
            "log_every": 1,
            "workers": 0,
            "threads": 1,
        }
    )
    out = train_sft(cfg, log=lambda *a: None)
    config = json.loads((out / "config.json").read_text())
    assert config["anchor"] == {"version": ANCHOR_VERSION, "max_tokens": 64, "ocr": False}
