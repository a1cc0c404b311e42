"""Tiny real models for the engine tests (jocr.model.OCRModel, `tiny` preset); fixtures in conftest.py.

- `random_model`: random weights with the lm_head scaled up so logits are far from ties (batched and
  unbatched float sums then pick the same argmax).
- `cycle_model`: an (almost) bigram model whose greedy output follows a fixed permutation of the vocabulary,
  with small random attention/MLP weights so the context sometimes overrides it; its FastMTP head is set to
  predict the permutation's next step, so drafts are often, but not always, accepted.
- `tied_model`: the cycle model with its output rows paired and each pair's two logits nearly tied (apart by
  about 1e-7 to 1e-6, near float32's resolution at logits of order 1), in the `float32` format (the
  row-invariant kernels): which of a pair wins is decided by the last bits of the computation.
"""

from __future__ import annotations

import torch

from jocr.config import OCRConfig
from jocr.model.formats import apply_format
from jocr.model.ocr import OCRModel

IMAGE_ID = 3


def _base(seed: int) -> OCRModel:
    return OCRModel(OCRConfig.preset("tiny")).init_weights(seed=seed).eval()


def build_random_model(seed: int = 0) -> OCRModel:
    model = _base(seed)
    with torch.no_grad():
        model.lm_head.weight.mul_(30.0)
    return model


def build_cycle_model(seed: int = 0, period: int = 0, noise: float = 30.0) -> OCRModel:
    """Greedy next token ~ perm[current]; `period` > 0 makes perm a single cycle over that many tokens."""
    model = _base(seed)
    g = torch.Generator().manual_seed(seed + 1)
    vocab = model.config.decoder.vocab_size
    with torch.no_grad():
        emb = torch.randn(vocab, model.config.decoder.hidden_size, generator=g)
        emb = emb / emb.norm(dim=-1, keepdim=True) * emb.shape[-1] ** 0.5  # RMS 1: unchanged by RMSNorm
        model.model.embed_tokens.weight.copy_(emb)
        if period:
            cycle = torch.randperm(vocab - 11, generator=g)[:period] + 11
            perm = torch.randint(11, vocab, (vocab,), generator=g)
            perm[cycle] = cycle.roll(-1)
            others = torch.ones(vocab, dtype=torch.bool)
            others[cycle] = False
            perm[others] = cycle[torch.randint(0, period, (int(others.sum()),), generator=g)]
        else:
            perm = torch.randperm(vocab, generator=g)
        perm[perm < 11] = 11 + perm[perm < 11]  # never emit special tokens (EOS, image, ...)
        head = torch.zeros(vocab, emb.shape[-1])
        head[perm] = emb  # row perm[t] matches token t's embedding: argmax = perm[t]
        model.lm_head.weight.copy_(head * 0.5)
        for layer in model.model.layers:  # context-dependent deviations from the permutation
            layer.self_attn.o_proj.weight.mul_(noise)
            for name, p in layer.mlp.named_parameters():
                if "down_proj" in name:
                    p.mul_(noise)
        # FastMTP head: block output ~ enorm(embed(next)), so the draft is perm[next].
        head_mod = model.mtp_module.heads[0]
        d = emb.shape[-1]
        head_mod.eh_proj.weight.copy_(torch.cat([torch.eye(d), torch.zeros(d, d)], dim=1))
        head_mod.mtp_block.self_attn.o_proj.weight.zero_()
        head_mod.mtp_block.mlp.down_proj.weight.zero_()
    model.perm = perm
    return model


def random_prompt(g: torch.Generator, low: int = 2, high: int = 12) -> list[int]:
    n = int(torch.randint(low, high, (1,), generator=g))
    return torch.randint(11, 500, (n,), generator=g).tolist()


def build_tied_model(seed: int = 0, gap: float = 3e-8) -> OCRModel:
    """The cycle model, its lm_head scaled to logits of order 1 and row 2i + 1 set to row 2i plus noise of
    std `gap` (so the pair's logits differ by about gap x |h| ~ 1e-7..1e-6), packed for the kernels."""
    model = build_cycle_model(seed, noise=30.0)
    g = torch.Generator().manual_seed(seed + 7)
    with torch.no_grad():
        head = model.lm_head.weight
        head.mul_(1.0 / 32.0)
        head[1::2] = head[0::2] + torch.randn(head[0::2].shape, generator=g) * gap
        head[:11] = 0.0  # never emit special tokens
    return apply_format(model, "float32")


class RefTokens:
    """What the reference drafter asks of a tokenizer (`ReferenceLookup.from_tokenizer`), over the test
    models' vocabulary: `@` and the digits are ids 11..21, which random prompts and outputs contain."""

    ids = {c: 11 + i for i, c in enumerate("@0123456789")}

    def token_to_id(self, token: str) -> int | None:
        return self.ids.get(token)

    def encode(self, text: str) -> list[int]:
        return [self.ids.get(c, 30 + ord(c) % 200) for c in text]
