"""Greedy reading of formula strips (`jocr.engine.formula`)."""

from __future__ import annotations

import numpy as np
import torch

from jocr.engine.formula import DecoderCache, read_strips, strips_batch
from jocr.model.formula_reader import LatexVocab


def _strips(widths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (64, w), dtype=np.uint8) for w in widths]


def test_strips_are_padded_with_paper_to_a_multiple_of_eight():
    images, widths = strips_batch(_strips([20, 33]))
    assert images.shape == (2, 1, 64, 40) and widths.tolist() == [20, 33]
    assert images[0, 0, :, 20:].abs().sum() == 0 and float(images.max()) <= 1.0


def test_a_batch_reads_as_each_strip_alone_and_in_the_order_given(tiny_formula_reader):
    model = tiny_formula_reader()
    vocab = LatexVocab(model.config.vocab)
    strips = _strips([48, 48, 48])
    together = read_strips(model, vocab, strips, max_tokens=12)
    alone = [read_strips(model, vocab, [s], max_tokens=12)[0] for s in strips]
    assert [r.latex for r in together] == [r.latex for r in alone]


def test_the_greedy_reading_is_the_argmax_token_after_token(tiny_formula_reader):
    model = tiny_formula_reader(seed=3)
    vocab = LatexVocab(model.config.vocab)
    (strip,) = _strips([56], seed=1)
    (reading,) = read_strips(model, vocab, [strip], max_tokens=10)
    images, widths = strips_batch([strip])
    memory, pad = model.encode(images, widths)
    ids, logprobs = [vocab.bos], []
    with torch.no_grad():
        for _ in range(10):
            scores = model.decode(torch.tensor([ids]), memory, pad)[0, -1].log_softmax(-1)
            ids.append(int(scores.argmax()))
            logprobs.append(float(scores.max()))
            if ids[-1] == vocab.eos:
                break
    assert reading.latex == vocab.decode(ids[1:]) and reading.finished == (vocab.eos in ids)
    assert abs(reading.mean_logprob - sum(logprobs) / len(logprobs)) < 1e-5


def test_a_reading_that_runs_out_of_tokens_is_not_finished(tiny_formula_reader, monkeypatch):
    model = tiny_formula_reader()
    vocab = LatexVocab(model.config.vocab)
    step = DecoderCache.step

    def never_eos(self, ids):  # a reader that would write for ever: it must stop at its budget
        logits = step(self, ids)
        logits[..., vocab.eos] = float("-inf")
        return logits

    monkeypatch.setattr(DecoderCache, "step", never_eos)
    (reading,) = read_strips(model, vocab, _strips([40]), max_tokens=5)
    assert not reading.finished and len(vocab.encode(reading.latex)) <= 5 + 2


def test_the_cache_gives_the_whole_prefix_decoders_logits_step_by_step():
    from jocr.model.formula_reader import SPECIALS, FormulaReader, FormulaReaderConfig

    torch.manual_seed(5)
    vocab = [*SPECIALS, *(chr(c) for c in range(32, 127))]
    cfg = FormulaReaderConfig(dim=48, heads=4, ffn=96, encoder_layers=1, decoder_layers=3, max_tokens=40,
                              dropout=0.0, vocab=vocab)  # fmt: skip
    model = FormulaReader(cfg).eval()
    images, widths = strips_batch(_strips([24, 70, 45], seed=2))  # padded memory for two of the three
    ids = torch.randint(4, len(vocab), (3, 12))
    with torch.no_grad():
        memory, pad = model.encode(images, widths)
        whole = model.decode(ids, memory, pad)  # (3, 12, V)
        cache = DecoderCache(model, memory, pad)
        steps = torch.stack([cache.step(ids[:, t]) for t in range(12)], dim=1)  # (3, 12, V)
    assert torch.allclose(steps, whole, atol=1e-4)
