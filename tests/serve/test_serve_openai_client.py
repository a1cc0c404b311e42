"""The official `openai` client against a real uvicorn server on loopback: the transcription it gets, streamed
or not, is exactly what the pipeline gives for the same page and settings."""

from __future__ import annotations

import base64

import openai
import pytest
from serve_helpers import MAX_TOKENS, page_image, pipeline_markdown, png_bytes


def _image_part(image) -> dict:
    data = base64.b64encode(png_bytes(image)).decode()
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


@pytest.fixture(scope="module")
def client(live):
    return openai.OpenAI(base_url=live.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def test_models(client):
    assert [m.id for m in client.models.list().data] == ["jocr-tiny"]


def test_transcription_matches_pipeline(client, tiny_model, tokenizer):
    image = page_image(1)
    expected, prompt_tokens, completion_tokens, _finish = pipeline_markdown(tiny_model, tokenizer, image)
    assert expected  # the tiny model writes something for this page
    reply = client.chat.completions.create(
        model="jocr-tiny", messages=[{"role": "user", "content": [_image_part(image)]}], max_tokens=MAX_TOKENS
    )
    assert reply.choices[0].message.content == expected
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert reply.usage.prompt_tokens == prompt_tokens
    assert reply.usage.completion_tokens == completion_tokens
    assert reply.usage.total_tokens == prompt_tokens + completion_tokens


def test_streaming_matches_pipeline(client, tiny_model, tokenizer):
    image = page_image(2)
    expected, prompt_tokens, completion_tokens, _finish = pipeline_markdown(tiny_model, tokenizer, image)
    stream = client.chat.completions.create(
        model="jocr-tiny",
        messages=[{"role": "user", "content": [_image_part(image)]}],
        max_tokens=MAX_TOKENS,
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces, finishes, usage = [], [], None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                finishes.append(choice.finish_reason)
    assert "".join(pieces) == expected
    assert len(finishes) == 1
    assert usage is not None and usage.completion_tokens == completion_tokens
    assert usage.prompt_tokens == prompt_tokens


def test_task_prompt_from_text_part(client, tiny_model, tokenizer):
    """The text part selects the task: "table" maps to the table prompt, so the answer is the pipeline's
    answer for that prompt."""
    image = page_image(3)
    expected = pipeline_markdown(tiny_model, tokenizer, image, prompt="table")[0]
    reply = client.chat.completions.create(
        model="jocr-tiny",
        messages=[{"role": "user", "content": [_image_part(image), {"type": "text", "text": "table"}]}],
        max_tokens=MAX_TOKENS,
    )
    assert reply.choices[0].message.content == expected


def test_unsupported_option_is_a_clear_400(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="jocr-tiny",
            messages=[{"role": "user", "content": [_image_part(page_image(0))]}],
            tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
        )
    assert "unsupported parameter: tools" in str(info.value)
