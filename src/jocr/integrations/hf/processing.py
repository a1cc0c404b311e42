"""Page image + DeepSeek-OCR-style prompt -> model inputs, and model output -> Markdown (Transformers path).

Exported as `processing_jocr.py`. It is jocr's own pipeline, not a copy: views, prompt ids and Markdown come
from `jocr.layout.request.PageRequestBuilder`, the request builder `jocr parse` runs.

Prompts are written as DeepSeek-OCR's users write them: `"<image>\\n" + instruction`. The text around the one
`<image>` marker is tokenized as is and the marker becomes the page's placeholder run, so `"<image>\\n" + p`
gives the ids of `Tokenizer.build_prompt(p, [n])` (BOS, n placeholders, "\\n" + p). A prompt without the
marker puts the image first, as `jocr parse` does.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch
from PIL import Image

from jocr.config import OCRConfig, VisionConfig
from jocr.layout.request import PageRequestBuilder
from jocr.tokenizer import IMAGE_TOKEN, Tokenizer
from jocr.types import PageViews


def jocr_tokenizer(tokenizer: Any) -> Tokenizer:
    """jocr's tokenizer over whatever the caller holds: a jocr `Tokenizer`, a Transformers fast tokenizer
    (its `backend_tokenizer` is the `tokenizers` object jocr loads from tokenizer.json) or a
    `tokenizers.Tokenizer`."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return Tokenizer(backend)
    if hasattr(tokenizer, "token_to_id") and hasattr(tokenizer, "encode"):
        return Tokenizer(tokenizer)
    raise TypeError(
        f"expected a tokenizer loaded from the model's tokenizer.json, not {type(tokenizer).__name__}"
    )


def vision_settings(
    vision: VisionConfig,
    base_size: int | None = None,
    image_size: int | None = None,
    crop_mode: bool | None = None,
    max_tiles: int | None = None,
) -> VisionConfig:
    """The model's preprocessing settings with DeepSeek-OCR's `infer` arguments applied (None keeps the
    model's own: base_size is the global view, image_size the tile size, crop_mode tiling on or off)."""
    changes = {
        "base_size": base_size,
        "tile_size": image_size,
        "crop_mode": None if crop_mode is None else bool(crop_mode),
        "max_tiles": max_tiles,
    }
    vision = dataclasses.replace(vision, **{k: v for k, v in changes.items() if v is not None})
    vision.validate()
    return vision


def load_image(image: Any) -> Image.Image:
    """A PIL image, or a path to one (EXIF orientation applied, as DeepSeek-OCR's `load_image` does)."""
    if isinstance(image, Image.Image):
        return image
    from PIL import ImageOps

    with Image.open(Path(image)) as opened:
        return ImageOps.exif_transpose(opened).copy()


class JocrProcessor:
    """Prepares one page per batch row: (prompt ids, PageViews), and turns generated ids into Markdown."""

    def __init__(self, tokenizer: Any, vision: VisionConfig) -> None:
        self.tokenizer = jocr_tokenizer(tokenizer)
        self.vision = vision
        self.builder = PageRequestBuilder(self.tokenizer, vision)

    @classmethod
    def from_pretrained(cls, path: str | Path, **settings: Any) -> JocrProcessor:
        """From a model directory (config.json and tokenizer.json); `settings` as in `vision_settings`."""
        config = OCRConfig.load(path)
        return cls(Tokenizer.from_dir(path), vision_settings(config.vision, **settings))

    def prompt_ids(self, prompt: str | None, image_tokens: int, anchor: str | None = None) -> list[int]:
        """BOS, the text before `<image>`, the placeholders, the text after it; then the anchor, if given
        (`Tokenizer.build_prompt`'s layout, the one anchored models are trained on: the prompt must then be
        the instruction alone or `"<image>\\n" + instruction`)."""
        tok = self.tokenizer
        if not prompt or IMAGE_TOKEN not in prompt:
            return self.builder.prompt_ids([image_tokens], prompt or None, anchor=anchor)
        if prompt.count(IMAGE_TOKEN) > 1:
            raise ValueError("one page per prompt: the prompt has more than one <image> marker")
        before, after = prompt.split(IMAGE_TOKEN)
        if anchor is not None:
            if before or not after.startswith("\n"):
                raise ValueError('an anchored prompt is "<image>\\n" + instruction, or the instruction alone')
            return self.builder.prompt_ids([image_tokens], after[1:], anchor=anchor)
        ids = [tok.bos_id]
        if before:
            ids.extend(tok.encode(before))
        ids.extend([tok.image_id] * image_tokens)
        return ids + tok.encode(after)

    def page(self, image: Any, prompt: str | None = None) -> tuple[list[int], PageViews, tuple[int, int]]:
        """(prompt ids, views, (width, height)) for one page."""
        image = load_image(image)
        views, n = self.builder.views(image)
        return self.prompt_ids(prompt, n), views, image.size

    def __call__(self, images: Any, text: str | list[str] | None = None) -> dict[str, Any]:
        """Batch inputs for `model.generate(**inputs)`: `input_ids` and `attention_mask` (B, T), left-padded,
        and `images` (one [PageViews] per row)."""
        images = list(images) if isinstance(images, (list, tuple)) else [images]
        texts = text if isinstance(text, (list, tuple)) else [text] * len(images)
        if len(texts) != len(images):
            raise ValueError(f"{len(texts)} prompts for {len(images)} images")
        rows = [self.page(image, prompt)[:2] for image, prompt in zip(images, texts)]
        width = max(len(ids) for ids, _ in rows)
        pad = self.tokenizer.pad_id
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)  # (B, T)
        attention_mask = torch.zeros((len(rows), width), dtype=torch.long)  # (B, T)
        for b, (ids, _) in enumerate(rows):
            input_ids[b, width - len(ids) :] = torch.tensor(ids)
            attention_mask[b, width - len(ids) :] = 1
        return {"input_ids": input_ids, "attention_mask": attention_mask, "images": [[v] for _, v in rows]}

    def decode(self, token_ids: Any) -> str:
        """Raw text of generated ids, as jocr decodes it (control tokens out; `<td>`, grounding tags kept)."""
        ids = token_ids.tolist() if isinstance(token_ids, torch.Tensor) else list(token_ids)
        return self.builder.text(ids)

    def postprocess(self, token_ids: Any, size: tuple[int, int], finish_reason: str | None = None):
        """(Markdown, boxes in pixels) of generated ids, as `jocr parse` writes a page."""
        return self.builder.markdown(self.decode(token_ids), size, finish_reason)
