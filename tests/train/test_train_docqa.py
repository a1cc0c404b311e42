"""Training data for asking a page: examples from `jocr.synth.docqa` documents built on the `jocr ask`
prompt path, extractive targets copied from the anchor (and read back to the answer exactly), and a
2-step SFT smoke run on them."""

from __future__ import annotations

import json
from pathlib import Path

from jocr.documents.pages import open_source
from jocr.lines.anchor import ANCHOR_VERSION, page_anchor
from jocr.lines.references import anchor_runs
from jocr.pipeline.ask import answer_text, read_fields_answer
from jocr.tokenizer import ANCHOR_OPEN, Tokenizer
from jocr.train.config import TrainConfig
from jocr.train.data import DataConfig, SampleMaker
from jocr.train.docqa_data import EXTRACT_KIND, copied_answer, docqa_examples, read_records
from jocr.train.sft import build_model, train_sft

DOCQA_DIR = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa"


def test_extractive_targets_are_copied_from_the_anchor_and_read_back_exactly():
    tok = Tokenizer.byte_level()
    records = read_records(str(DOCQA_DIR))
    extractive = 0
    for root, record in records[:6]:
        with open_source(str(root / record["files"]["pdf"])) as source:
            anchor = page_anchor(source, 0, "on", ANCHOR_VERSION, tok, 100_000).texts[0]
        runs = list(anchor_runs(anchor).values())
        examples = docqa_examples(record, anchor)
        assert len(examples) == len(record["questions"]) + 1
        for example in examples:
            if example.kind == "extractive":
                extractive += 1
                assert any(example.target in run for run in runs)  # copied from the prompt
                assert answer_text(example.target, anchor) in example.answers  # the inverse, exactly
            elif example.kind == EXTRACT_KIND:
                from jocr.pipeline.ask import parse_schema

                fields = parse_schema(list(record["fields"]))
                assert read_fields_answer(example.target, fields, anchor) == record["fields"]
    assert extractive >= 20


def test_copied_answer_takes_the_runs_characters():
    anchor = "page 612x792\n@1 10,10 Invoice No.:  INV-7\n@2 10,20 TOTAL DUE $5.00"
    assert copied_answer("INV-7", anchor) == "INV-7"
    assert copied_answer("total due", anchor) == "TOTAL DUE"
    assert copied_answer("absent", anchor) == "absent" and copied_answer("x", None) == "x"


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
    assert config["anchor"] == {"version": ANCHOR_VERSION, "max_tokens": 64}
