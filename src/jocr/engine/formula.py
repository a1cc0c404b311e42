"""Greedy reading of formula strips by the formula reader (`jocr.model.formula_reader`).

Decoding keeps a cache (`DecoderCache`): each decoder layer's cross-attention keys and values of the strip's
memory, projected once per strip, and its self-attention keys and values of the tokens so far, so a step runs
the decoder for the new token alone. Without it every step ran the whole prefix and projected the memory again
in each layer, and a long formula (a paper's, 100 tokens and more over a strip of 500 memory positions) cost
seconds. Strips are read in batches of similar width (less padding); a reading stops at EOS or at `max_tokens`
(then it is not finished: the caller drops it, as it drops a page reading that ran out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

READ_BATCH = 16


@dataclass
class FormulaReading:
    latex: str
    finished: bool  # ended with EOS within the token budget
    mean_logprob: float = (
        0.0  # the mean log-probability of its tokens (EOS included): how sure the reader was
    )


def strips_batch(strips: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """(H, W_i) uint8 strips -> (B, 1, H, W) floats in [0, 1] padded with 0 (paper) on the right, and
    widths (B,)."""
    height, width = strips[0].shape[0], max(s.shape[1] for s in strips)
    width = -(-width // 8) * 8  # the stem pools by 8
    out = torch.zeros(len(strips), 1, height, width)
    for k, strip in enumerate(strips):
        out[k, 0, :, : strip.shape[1]] = torch.from_numpy(strip).float() / 255.0
    return out, torch.tensor([s.shape[1] for s in strips])


class DecoderCache:
    """The formula reader's decoder run one token at a time over one batch's memory (the model's
    `nn.TransformerDecoder` layers, pre-norm, in eval mode: the same sums as `FormulaReader.decode` over
    the whole prefix, up to float rounding).

        cache = DecoderCache(model, memory, pad)      # memory (B, S, D), pad (B, S) True at padding
        logits = cache.step(ids)                      # ids (B,) the newest tokens -> (B, V)
    """

    def __init__(self, model, memory: torch.Tensor, pad: torch.Tensor):
        self.model = model
        self.layers = list(model.decoder.layers)
        self.heads = model.config.heads
        b, s, _ = memory.shape
        self.bias = torch.zeros(b, 1, 1, s).masked_fill(pad[:, None, None, :], float("-inf"))  # (B, 1, 1, S)
        # per layer: the cross-attention's keys and values of the memory, (B, H, S, D/H) each, projected once
        self.cross = [self._keys_values(layer.multihead_attn, memory) for layer in self.layers]
        # per layer: the self-attention's keys and values of the tokens so far, (B, H, t, D/H) each
        self.past: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(self.layers)
        self.t = 0

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        return x.view(b, n, self.heads, d // self.heads).transpose(1, 2)  # (B, H, n, D/H)

    def _keys_values(self, attn, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, n, D) -> the attention's keys and values of it, (B, H, n, D/H) each."""
        _, wk, wv = attn.in_proj_weight.chunk(3)
        _, bk, bv = attn.in_proj_bias.chunk(3)
        return self._split(F.linear(x, wk, bk)), self._split(F.linear(x, wv, bv))

    def _attend(self, attn, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias=None) -> torch.Tensor:
        """q (B, 1, D) projected here; k, v (B, H, n, D/H) already projected -> (B, 1, D)."""
        wq = attn.in_proj_weight.chunk(3)[0]
        bq = attn.in_proj_bias.chunk(3)[0]
        out = F.scaled_dot_product_attention(
            self._split(F.linear(q, wq, bq)), k, v, attn_mask=bias
        )  # (B, H, 1, D/H)
        b, h, _, e = out.shape
        return attn.out_proj(out.transpose(1, 2).reshape(b, 1, h * e))

    def step(self, ids: torch.Tensor) -> torch.Tensor:
        """The next token's logits (B, V) after `ids` (B,), the tokens at position `t`."""
        model = self.model
        x = model.embed(ids)[:, None, :] + model.positions[self.t]  # (B, 1, D)
        for k, layer in enumerate(self.layers):
            h = layer.norm1(x)
            keys, values = self._keys_values(layer.self_attn, h)  # the new token's, (B, H, 1, D/H)
            if self.past[k] is not None:
                old_keys, old_values = self.past[k]
                keys, values = torch.cat([old_keys, keys], dim=2), torch.cat([old_values, values], dim=2)
            self.past[k] = (keys, values)  # (B, H, t+1, D/H)
            x = x + self._attend(layer.self_attn, h, keys, values)
            x = x + self._attend(layer.multihead_attn, layer.norm2(x), *self.cross[k], self.bias)
            x = x + layer.linear2(layer.activation(layer.linear1(layer.norm3(x))))
        self.t += 1
        return (model.norm(x) @ model.embed.weight.T)[:, 0]  # (B, V)


@torch.inference_mode()
def read_strips(
    model, vocab, strips: list[np.ndarray], max_tokens: int, batch: int = READ_BATCH
) -> list[FormulaReading]:
    """Each strip's greedy reading, in the order given."""
    model.eval()
    max_tokens = min(max_tokens, model.config.max_tokens - 1)
    order = sorted(range(len(strips)), key=lambda k: strips[k].shape[1])
    out: list[FormulaReading | None] = [None] * len(strips)
    for start in range(0, len(order), batch):
        chunk = order[start : start + batch]
        images, widths = strips_batch([strips[k] for k in chunk])
        memory, pad = model.encode(images, widths)  # (b, S, D), (b, S)
        ids = torch.full((len(chunk), 1), vocab.bos, dtype=torch.long)  # (b, 1)
        done = torch.zeros(len(chunk), dtype=torch.bool)
        logprob, counted = torch.zeros(len(chunk)), torch.zeros(len(chunk))
        cache = DecoderCache(model, memory, pad)
        for _ in range(max_tokens):
            best = cache.step(ids[:, -1]).log_softmax(-1).max(-1)  # (b,) each
            live = (~done).float()
            logprob, counted = logprob + best.values * live, counted + live
            step = torch.where(done, torch.full_like(best.indices, vocab.eos), best.indices)
            ids = torch.cat([ids, step[:, None]], dim=1)  # (b, t+1)
            done |= step == vocab.eos
            if bool(done.all()):
                break
        for row, k in enumerate(chunk):
            tokens = ids[row, 1:].tolist()
            mean = float(logprob[row] / counted[row].clamp(min=1))
            out[k] = FormulaReading(vocab.decode(tokens), vocab.eos in tokens, mean)
    return out  # type: ignore[return-value]
