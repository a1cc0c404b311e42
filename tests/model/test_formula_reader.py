"""The formula reader (`jocr.model.formula_reader`): LaTeX tokens, vocabulary, shapes, its saved format."""

from __future__ import annotations

import json

import pytest
import torch

from jocr.model.formula_reader import (
    MODEL_TYPE,
    SPECIALS,
    FormulaReaderConfig,
    LatexVocab,
    is_formula_reader,
    latex_tokens,
    load_formula_reader,
    save_formula_reader,
)


def test_latex_splits_into_commands_escapes_and_characters_and_joins_back():
    latex = r"\frac{a}{b}+\alpha_{1} \, x\{"
    tokens = latex_tokens(latex)
    assert tokens[:3] == ["\\frac", "{", "a"]
    assert "\\," in tokens and "\\{" in tokens and " " in tokens and "\\alpha" in tokens
    assert "".join(tokens) == latex


def test_the_vocabulary_frames_a_formula_and_marks_what_it_lacks():
    vocab = LatexVocab([*SPECIALS, "x", "+", "\\frac"])
    ids = vocab.encode("x+\\beta")
    assert ids[0] == vocab.bos and ids[-1] == vocab.eos and ids[3] == vocab.unk
    assert vocab.decode(vocab.encode("x+\\frac")) == "x+\\frac"
    assert vocab.decode([vocab.ids["x"], vocab.eos, vocab.ids["+"]]) == "x"  # stops at EOS


def test_logits_have_one_row_per_input_token_and_the_vocabulary_width(tiny_formula_reader):
    model = tiny_formula_reader()
    strips, widths = torch.rand(3, 1, 64, 96), torch.tensor([96, 80, 40])
    ids = torch.randint(0, len(model.config.vocab), (3, 7))
    assert model(strips, widths, ids).shape == (3, 7, len(model.config.vocab))
    memory, pad = model.encode(strips, widths)
    assert memory.shape == (3, 4 * 12, 32) and pad.shape == (3, 48)
    assert pad[2].sum() == 4 * (12 - 5) and not pad[0].any()  # 40 px -> 5 of 12 columns are the strip's


def test_the_decoder_is_causal(tiny_formula_reader):
    model = tiny_formula_reader()
    memory, pad = model.encode(torch.rand(1, 1, 64, 64), torch.tensor([64]))
    ids = torch.randint(0, len(model.config.vocab), (1, 6))
    changed = ids.clone()
    changed[0, 5] = (ids[0, 5] + 1) % len(model.config.vocab)
    a, b = model.decode(ids, memory, pad), model.decode(changed, memory, pad)
    assert torch.allclose(a[:, :5], b[:, :5], atol=1e-6) and not torch.allclose(a[:, 5], b[:, 5])


def test_a_saved_reader_loads_with_its_vocabulary_and_reads_the_same(tmp_path, tiny_formula_reader):
    model = tiny_formula_reader()
    save_formula_reader(model, tmp_path / "formula")
    assert is_formula_reader(tmp_path / "formula") and not is_formula_reader(tmp_path)
    assert json.loads((tmp_path / "formula" / "config.json").read_text())["model_type"] == MODEL_TYPE
    loaded, vocab = load_formula_reader(tmp_path / "formula")
    assert vocab.tokens == model.config.vocab and loaded.config == model.config
    strips, widths = torch.rand(2, 1, 64, 64), torch.tensor([64, 64])
    ids = torch.randint(0, len(vocab.tokens), (2, 5))
    # stored as weight-only int8: the same logits to int8's precision
    assert torch.allclose(loaded(strips, widths, ids), model(strips, widths, ids), atol=0.05)


def test_another_models_config_is_refused():
    with pytest.raises(ValueError, match="not a formula reader"):
        FormulaReaderConfig.from_dict({"model_type": "jocr"})
