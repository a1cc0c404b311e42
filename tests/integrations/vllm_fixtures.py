"""Tiny jocr checkpoints and synthetic pages for the vLLM tests (shared by the tests and vllm_runner.py).

`build_checkpoint` writes a `tiny`-preset OCRModel in the published layout (config.json, model.safetensors,
tokenizer.json). Its decoder is close to a bigram model: greedy output follows a random permutation of the
vocabulary, with attention and MLP weights scaled up so the image and the context often override it. Its
FastMTP head is set to draft the permutation's next step (eh_proj passes the token embedding through, the
block's output projections are small), so drafts are accepted often but not always: acceptance rates
strictly between 0 and 1, different at each draft position.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

from jocr.config import OCRConfig
from jocr.model.ocr import OCRModel
from jocr.tokenizer import PROMPTS, Tokenizer

NUM_SPECIAL = 11  # byte-level test tokenizer: special tokens are ids 0..10


def build_model(
    seed: int = 0,
    noise: float = 60.0,
    vision_gain: float = 50.0,
    mtp_noise: float = 0.3,
    feedback: str = "pre_norm",
    config: OCRConfig | None = None,
):
    """`config` defaults to the `tiny` preset; its image id, like the special tokens, is never emitted."""
    config = OCRConfig.preset("tiny") if config is None else config
    config.mtp.feedback = feedback
    model = OCRModel(config).init_weights(seed=seed).eval()
    vocab, d = config.decoder.vocab_size, config.decoder.hidden_size
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        emb = torch.randn(vocab, d, generator=g)
        emb = emb / emb.norm(dim=-1, keepdim=True) * d**0.5  # unit RMS: RMSNorm leaves it unchanged
        model.model.embed_tokens.weight.copy_(emb)
        perm = torch.randperm(vocab, generator=g)
        perm[perm < NUM_SPECIAL] += NUM_SPECIAL  # never emit EOS, `<image>` or other special tokens
        # (the engine bans generating `<image>`, vLLM does not: an image id above the specials moves too)
        perm[perm == config.image_token_id] = NUM_SPECIAL
        head = torch.zeros(vocab, d)
        head[perm] = emb  # argmax of lm_head(embed(t)) is perm[t]
        model.lm_head.weight.copy_(head * 0.5)
        # Larger vision embeddings so that the pages, not just the prompt, steer the output.
        for p in model.model.projector.parameters():
            p.mul_(vision_gain)
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.mul_(noise)
            for name, p in layer.mlp.named_parameters():
                if "down_proj" in name:
                    p.mul_(noise)
        mtp = model.mtp_module.heads[0]
        mtp.eh_proj.weight.copy_(torch.cat([torch.eye(d), torch.zeros(d, d)], dim=1))
        mtp.mtp_block.self_attn.o_proj.weight.mul_(mtp_noise)
        mtp.mtp_block.mlp.down_proj.weight.mul_(mtp_noise)
    return model


def build_checkpoint(path: str | Path, **kwargs) -> Path:
    path = Path(path)
    model = build_model(**kwargs)
    model.save_pretrained(path)
    Tokenizer.byte_level().save(path / "tokenizer.json")
    return path


def page(seed: int, size: tuple[int, int] = (200, 150)) -> Image.Image:
    """A synthetic page: lines of random capitals at random offsets (sizes > 64 px are tiled by `tiny`)."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    for i in range(int(rng.integers(3, 8))):
        text = "".join(chr(65 + int(c)) for c in rng.integers(0, 26, int(rng.integers(4, 16))))
        draw.text((int(rng.integers(0, 40)), 4 + 18 * i), text, fill=(0, 0, 0))
    return img


# Page sizes cover the untiled case (<= 64 px) and several tile grids of the tiny preset.
PAGE_SIZES = [(200, 150), (60, 60), (120, 300), (330, 90)]


# One task prompt per page, so that outputs differ between pages even where the image barely steers them.
PAGE_PROMPTS = [PROMPTS[name] for name in ("ocr", "free", "table", "formula")]


def pages(count: int = 4) -> list[Image.Image]:
    return [page(i, PAGE_SIZES[i % len(PAGE_SIZES)]) for i in range(count)]


def prompts(count: int = 4) -> list[str]:
    return [PAGE_PROMPTS[i % len(PAGE_PROMPTS)] for i in range(count)]
