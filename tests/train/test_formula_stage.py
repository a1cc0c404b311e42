"""The formula reader's training (`jocr.train.formula_stage`, `jocr.train.formula_data`): shards drawn once,
a run that learns, stops, resumes where it stopped and leaves a reader that loads."""

from __future__ import annotations

import pickle

import pytest

from jocr.model.formula_reader import load_formula_reader
from jocr.train.formula_data import load_shards, render_shard, render_shards
from jocr.train.formula_stage import FormulaTrainConfig, build_vocab, train_formula_reader

TINY = {"dim": 32, "heads": 2, "ffn": 64, "encoder_layers": 1, "decoder_layers": 1, "dropout": 0.0}


def test_a_shard_is_drawn_once_and_is_the_same_crops_wherever_drawn(tmp_path):
    path = render_shard(tmp_path / "a", 1, size=3)
    again = render_shards(tmp_path / "b", 6, workers=1, size=3)[1]
    first, second = load_shards([path]), load_shards([again])
    assert [t for _, t in first] == [t for _, t in second] and len(first) == 3
    assert all(s.shape[0] == 64 and not t.startswith("$$") for s, t in first)
    path.write_bytes(pickle.dumps([]))  # present: not drawn again
    assert load_shards([render_shard(tmp_path / "a", 1, size=3)]) == []


def test_the_vocabulary_holds_specials_ascii_and_the_commands_seen():
    vocab = build_vocab(["\\frac{a}{b}", "\\frac{1}{\\alpha}"])
    assert vocab[:4] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert vocab[-2:] == ["\\frac", "\\alpha"] and " " in vocab and "{" in vocab


def test_a_run_stops_resumes_where_it_stopped_and_leaves_a_reader(tmp_path):
    base = dict(run_dir=str(tmp_path / "run"), crops=6, shard_size=3, render_workers=1, batch=2, warmup=1,
                log_every=1, checkpoint_every=2, eval_every=100, eval_crops=2, model=TINY)  # fmt: skip
    train_formula_reader(FormulaTrainConfig(**base, max_steps=2))
    log = (tmp_path / "run" / "train.log").read_text()
    assert "step 2 loss" in log and "eval step 2" in log
    final = train_formula_reader(FormulaTrainConfig(**base, max_steps=4))
    log = (tmp_path / "run" / "train.log").read_text()
    assert "resumed at step 2" in log and "step 3 loss" in log and "step 1 loss" in log.split("resumed")[0]
    assert log.count("step 1 loss") == 1  # nothing trained twice
    model, vocab = load_formula_reader(final)
    assert vocab.tokens[:4] == ["<pad>", "<s>", "</s>", "<unk>"] and model.config.dim == 32


def test_a_config_with_an_unknown_entry_or_another_kind_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("kind: formula\nbatch_size: 3\n")
    with pytest.raises(ValueError, match="unknown entries: batch_size"):
        FormulaTrainConfig.load(path)
    path.write_text("kind: sft\n")
    with pytest.raises(ValueError, match="kind"):
        FormulaTrainConfig.load(path)
    path.write_text("kind: formula\nbatch: 3\n")
    assert FormulaTrainConfig.load(path, {"model.dim": 64}).model == {"dim": 64}


def test_katex_shards_hold_papers_formulas_and_an_unknown_source_is_refused(tmp_path):
    rows = load_shards([render_shard(tmp_path / "k", 0, size=3, source="katex")])
    assert len(rows) == 3 and all(s.shape[0] == 64 and s.max() >= 250 for s, _ in rows)
    with pytest.raises(ValueError, match="unknown formula crop source"):
        render_shard(tmp_path / "x", 0, size=3, source="tex")


def test_a_run_from_a_saved_reader_keeps_its_vocabulary_and_weights_and_adds_tokens(tmp_path):
    import torch

    base = dict(crops=4, shard_size=2, render_workers=1, batch=2, warmup=1, log_every=1, checkpoint_every=100,
                eval_every=100, eval_crops=2, model=TINY)  # fmt: skip
    first = train_formula_reader(FormulaTrainConfig(**base, run_dir=str(tmp_path / "a"), max_steps=1))
    saved, saved_vocab = load_formula_reader(first)
    cfg = FormulaTrainConfig(**base, run_dir=str(tmp_path / "b"), init=str(first), katex_crops=4, lr=0.0,
                             long_crops=2, faces_crops=2, max_steps=1)  # fmt: skip
    model, vocab = load_formula_reader(train_formula_reader(cfg))
    old = len(saved_vocab.tokens)
    assert vocab.tokens[:old] == saved_vocab.tokens and len(vocab.tokens) > old  # KaTeX's commands added
    assert torch.equal(model.embed.weight[:old], saved.embed.weight)  # lr 0: the saved weights, kept
    assert torch.equal(model.stem[0].weight, saved.stem[0].weight)
    log = (tmp_path / "b" / "train.log").read_text()
    assert "katex_exact" in log and "long_exact" in log and "faces_exact" in log
    assert len(load_shards(sorted((tmp_path / "b" / "katex-long-crops").glob("*.pkl")))) == 2
