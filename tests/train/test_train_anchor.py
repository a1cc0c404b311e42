"""Anchored training data: vector pages read through the user's path, anchor dropout, and a short SFT run
whose model comes out marked as trained with anchors (config `anchor.version`)."""

from __future__ import annotations

import json
from pathlib import Path

from jocr.lines.anchor import ANCHOR_VERSION
from jocr.lines.references import resolve_references
from jocr.tokenizer import ANCHOR_CLOSE, ANCHOR_OPEN, Tokenizer
from jocr.train.config import TrainConfig
from jocr.train.data import DataConfig, SampleMaker
from jocr.train.sft import build_model, train_sft

VECTOR_DIR = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "vector"


def _data(dropout: float, budget: int = 200) -> DataConfig:
    return DataConfig(
        stages=[{"samples": 100, "profiles": {"vector": 1.0}}],
        vector_dir=str(VECTOR_DIR),
        anchor_dropout=dropout,
        anchor_max_tokens=budget,
        max_target_tokens=20_000,
        dedup=False,
    )


def test_vector_samples_carry_the_anchor_unless_dropped(tiny_model_cfg, byte_tokenizer_path):
    tok = Tokenizer.from_file(byte_tokenizer_path)
    cfg = TrainConfig.from_dict({"model": tiny_model_cfg, "tokenizer": {"path": str(byte_tokenizer_path)}})
    vision = build_model(cfg, tok).config.vision
    anchored = SampleMaker(_data(0.0), tok, vision).make(0)
    plain = SampleMaker(_data(1.0), tok, vision).make(0)
    assert anchored.anchored and not plain.anchored and anchored.profile == "vector"
    prompt = tok.decode([t for t, label in zip(anchored.input_ids, anchored.labels) if label == -100])
    assert ANCHOR_OPEN + "page " in prompt and prompt.endswith("</anchor>")
    assert ANCHOR_OPEN not in tok.decode(plain.input_ids)
    # Same page: the anchored target is the plain one with the anchor's runs as references (one window).
    whole = SampleMaker(_data(0.0, budget=100_000), tok, vision).make(0)
    prompt = tok.decode([t for t, label in zip(whole.input_ids, whole.labels) if label == -100])
    anchor = prompt[prompt.index(ANCHOR_OPEN) + len(ANCHOR_OPEN) : prompt.rindex(ANCHOR_CLOSE)]
    target, plain_target = (tok.decode([x for x in s.labels if x != -100]) for s in (whole, plain))
    assert "@" in target and len(target) < len(plain_target)
    assert resolve_references(target, anchor) == plain_target
    half = SampleMaker(_data(0.5), tok, vision)
    flags = [half.make(i).anchored for i in range(8)]
    assert any(flags) and not all(flags)


def test_anchored_sft_smoke_run_marks_the_model(tmp_path, tiny_model_cfg, byte_tokenizer_path):
    cfg = TrainConfig.from_dict(
        {
            "kind": "sft",
            "run_dir": str(tmp_path / "run"),
            "model": tiny_model_cfg,
            "tokenizer": {"path": str(byte_tokenizer_path)},
            "data": {
                "stages": [{"samples": 1000, "profiles": {"vector": 1.0}}],
                "vector_dir": str(VECTOR_DIR),
                "anchor_dropout": 0.3,
                "anchor_max_tokens": 64,
                "max_target_tokens": 20_000,
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


def test_vector_pages_from_several_folders(tiny_model_cfg, byte_tokenizer_path, tmp_path):
    # The second anchored stage reads two synth folders (configs/sft-anchor-pages.yaml): every page of both
    # is drawn, each with its own ground truth.
    import shutil

    tok = Tokenizer.from_file(byte_tokenizer_path)
    cfg = TrainConfig.from_dict({"model": tiny_model_cfg, "tokenizer": {"path": str(byte_tokenizer_path)}})
    vision = build_model(cfg, tok).config.vision
    second = tmp_path / "second"
    pdf = sorted((VECTOR_DIR / "pdfs").glob("*.pdf"))[0]
    (second / "pdfs").mkdir(parents=True)
    (second / "gt").mkdir()
    shutil.copy(pdf, second / "pdfs" / "other.pdf")
    (second / "gt" / "other_pg1_repeat1.md").write_text("# Only here\n", encoding="utf-8")
    data = _data(1.0)
    data.vector_dir = [str(VECTOR_DIR), str(second)]
    maker = SampleMaker(data, tok, vision)
    targets = set()
    for i in range(40):
        sample = maker.make(i)
        if sample is not None:
            targets.add(tok.decode([x for x in sample.labels if x != -100]))
    assert "# Only here" in {t.strip() for t in targets}
    assert len(maker._vector_pdfs) == len(list((VECTOR_DIR / "pdfs").glob("*.pdf"))) + 1


def test_a_stage_of_ocr_copies_marks_the_model_as_reading_ocr_anchors():
    from jocr.train.data import DataConfig

    def data(*stages):
        return DataConfig(stages=[{"samples": 10, "profiles": p} for p in stages], vector_dir="v")

    assert not data({"vector": 1.0}).ocr_anchored
    assert not data({"vector": 1.0, "vector-ocr": 0.0}).ocr_anchored
    assert data({"vector": 1.0}, {"vector-ocr": 0.5}).ocr_anchored
