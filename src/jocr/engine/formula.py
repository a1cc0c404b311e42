"""Greedy reading of formula strips by the formula reader (`jocr.model.formula_reader`).

The reader's answers are short (a formula of 110 characters is about 60 tokens) and its decoder small, so
each step runs the decoder over the whole prefix: no cache to keep. Strips are read in batches of similar
width (less padding); a reading stops at EOS or at `max_tokens` (then it is not finished: the caller drops
it, as it drops a page reading that ran out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

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
        for _ in range(max_tokens):
            best = model.decode(ids, memory, pad)[:, -1].log_softmax(-1).max(-1)  # (b,) each
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
