"""The one request builder: page -> views + prompt ids, generated ids -> Markdown."""

from __future__ import annotations

import torch
from PIL import Image, ImageDraw

from jocr.config import tiny_config
from jocr.layout.request import PageRequestBuilder, prompt_text
from jocr.tokenizer import DEFAULT_PROMPT, PROMPTS, Tokenizer


def _page() -> Image.Image:
    image = Image.new("RGB", (300, 420), "white")
    ImageDraw.Draw(image).text((20, 20), "Hello", fill="black")
    return image


def test_page_is_views_then_image_placeholders_then_prompt():
    tok = Tokenizer.byte_level()
    vision = tiny_config().vision
    builder = PageRequestBuilder(tok, vision)
    page = builder.page(_page())
    n = page.image_tokens
    assert n > 0 and page.size == (300, 420)
    assert page.prompt_ids == [tok.bos_id] + [tok.image_id] * n + tok.encode("\n" + DEFAULT_PROMPT)
    views, count = builder.views(_page())
    assert count == n and torch.equal(views.global_view, page.views.global_view)


def test_prompt_names_resolve_and_request_text_is_verbatim():
    tok = Tokenizer.byte_level()
    assert prompt_text(None) == DEFAULT_PROMPT and prompt_text("free") == PROMPTS["free"]
    assert prompt_text("Read it.") == "Read it."
    builder = PageRequestBuilder(tok, tiny_config().vision, prompt="free")
    assert builder.prompt_ids(2)[-len(tok.encode("\nFree OCR.")) :] == tok.encode("\nFree OCR.")
    assert builder.prompt_ids(2, "free") == tok.build_prompt("free", 2)  # a request's own words


def test_markdown_from_ids_drops_control_tokens_and_maps_boxes():
    tok = Tokenizer.byte_level()
    builder = PageRequestBuilder(tok, tiny_config().vision)
    raw = "<|ref|>title<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\n# Hi"
    ids = tok.encode(raw) + [tok.eos_id]
    assert builder.text(ids) == raw
    markdown, boxes = builder.markdown(ids, (100, 50), "stop")
    assert markdown == "# Hi"
    assert [(b.label, b.x2, b.y2) for b in boxes] == [("title", 100, 50)]
