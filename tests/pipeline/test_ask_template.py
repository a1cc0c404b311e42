"""A question's prompt ids for a checkpoint in the published DeepSeek-OCR layout follow that model's own
conversation template, rebuilt here from its rules rather than from jocr's prompt builder.

DeepSeek-OCR (deepseek-ai/DeepSeek-OCR, DeepSeek-OCR-vllm/process/image_process.py and config.py; the HF
`infer` uses the same processor rules) documents free-form prompts as `"<image>\\n" + text` in the `plain`
format (no roles, no system prompt) and tokenizes a conversation by:

- splitting it at `<image>`; each text piece encoded without special tokens;
- in place of each `<image>`, the image's placeholders: the global view (base 1024, patch 16, 4x4
  compression -> q = 16 queries a side) as q rows of (q + 1) tokens, plus one separator; and, when the image
  is larger than 640 x 640, the tiles of the grid (w, h) chosen by `dynamic_preprocess` (among grids of
  MIN_CROPS..MAX_CROPS tiles, the aspect ratio closest to the image's; a tie goes to the larger grid when
  the image covers more than half of it) as 10h rows of (10w + 1) tokens (640-pixel tiles: 10 queries);
- BOS first; at inference nothing after the text (the answer follows).

The checkpoint is a tiny random model in the published layout (its vision geometry and a tokenizer whose
specials follow the byte vocabulary, as the published one's follow its BPE vocabulary), saved and loaded
through `load_model`; the ids are those `jocr.ask` hands the engine.
"""

from __future__ import annotations

import math

import pytest
import torch
from PIL import Image
from test_ask import published_layout_tokenizer

from jocr.config import DecoderConfig, OCRConfig, VisionConfig
from jocr.engine.requests import GenerationResult
from jocr.engine.stats import RequestStats
from jocr.model import OCRModel
from jocr.pipeline import ask, load_model

QUESTIONS = ["What is the total amount?", "这张发票的总金额是多少？"]


def template_grid(
    width: int, height: int, min_crops: int, max_crops: int, tile: int = 640
) -> tuple[int, int]:
    """DeepSeek-OCR's tile grid for an image (count_tiles / dynamic_preprocess), (1, 1) up to 640 x 640."""
    if width <= tile and height <= tile:
        return (1, 1)
    ratios = sorted(
        {
            (i, j)
            for n in range(min_crops, max_crops + 1)
            for i in range(1, n + 1)
            for j in range(1, n + 1)
            if min_crops <= i * j <= max_crops
        },
        key=lambda r: r[0] * r[1],
    )
    aspect, best, best_diff = width / height, (1, 1), float("inf")
    for w, h in ratios:
        diff = abs(aspect - w / h)
        if diff < best_diff:
            best, best_diff = (w, h), diff
        elif diff == best_diff and width * height > 0.5 * tile * tile * w * h:
            best = (w, h)
    return best


def template_image_tokens(grid: tuple[int, int], base: int = 1024, tile: int = 640, patch: int = 16) -> int:
    q_base, q = math.ceil(base // patch / 4), math.ceil(tile // patch / 4)
    count = (q_base + 1) * q_base + 1
    if grid != (1, 1):
        count += (q * grid[0] + 1) * (q * grid[1])
    return count


def template_ids(tokenizer, question: str, image_tokens: int) -> list[int]:
    """The conversation `"<image>\\n" + question` tokenized by the template's rules."""
    before, after = ("<image>\n" + question).split("<image>")
    encode = tokenizer.hf.encode
    ids = encode(before, add_special_tokens=False).ids + [tokenizer.image_id] * image_tokens
    return [tokenizer.bos_id] + ids + encode(after, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def published_checkpoint(tmp_path_factory):
    """A tiny random model with the published view geometry and token layout, saved as a checkpoint."""
    tokenizer = published_layout_tokenizer()
    vision = VisionConfig(
        sam_width=32, sam_depth=1, sam_heads=1, sam_global_attn_indexes=(), sam_out_channels=16,
        compressor_channels=(16, 32), clip_width=32, clip_depth=1, clip_heads=1, clip_ffn=64,
        projector_dim=32,
    )  # fmt: skip
    decoder = DecoderConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=1,
        num_key_value_heads=1, head_dim=32, intermediate_size=64, n_routed_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=16, n_shared_experts=1,
    )  # fmt: skip
    config = OCRConfig(
        vision=vision,
        decoder=decoder,
        bos_token_id=tokenizer.bos_id,
        eos_token_id=tokenizer.eos_id,
        pad_token_id=tokenizer.pad_id,
        image_token_id=tokenizer.image_id,
    )
    assert config.anchor.version == 0  # the published checkpoints read images alone: no anchor
    directory = tmp_path_factory.mktemp("published-layout")
    torch.manual_seed(0)
    OCRModel(config).init_weights(seed=0).save_pretrained(directory)
    tokenizer.save(directory / "tokenizer.json")
    return directory


class RecordingEngine:
    """Records the prompt ids of every request and answers nothing (EOS)."""

    def __init__(self, eos: int):
        self.eos, self.prompts = eos, []

    def check(self, request) -> None:
        pass

    def generate(self, requests):
        self.prompts += [list(r.prompt_ids) for r in requests]
        return [
            GenerationResult(token_ids=[self.eos], finish_reason="stop", stats=RequestStats())
            for _ in requests
        ]


@pytest.mark.parametrize("size", [(600, 400), (1240, 1754), (2000, 700)])
def test_question_ids_follow_the_published_template(published_checkpoint, size):
    loaded = load_model(published_checkpoint, cache=False)
    tokenizer, vision = loaded.tokenizer, loaded.vision
    assert tokenizer.image_id > 255 and tokenizer.bos_id > 255  # not the byte ids: the layout is exercised
    engine = RecordingEngine(tokenizer.eos_id)
    loaded.engine = lambda spec="auto", batch_size=8: engine
    page = Image.new("RGB", size, "white")
    for x in range(40, size[0] - 40, 90):  # some ink, so the page is not blank
        page.paste((20, 20, 20), (x, 60, x + 50, 72))
    ask(page, QUESTIONS, model=loaded, anchor="auto", ocr="none")
    grid = template_grid(*size, vision.min_tiles, vision.max_tiles)
    n = template_image_tokens(grid)
    assert engine.prompts == [template_ids(tokenizer, q, n) for q in QUESTIONS]
