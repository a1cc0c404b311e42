"""A chat request whose one image is a PDF page, and a Reader request for a PDF, are anchored as `jocr parse`
anchors them: the page's text layer in the prompt when the server's anchor setting and the model say so,
the same Markdown back."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest
from PIL import Image
from serve_helpers import make_service
from starlette.testclient import TestClient

from jocr.config import AnchorConfig, OCRConfig
from jocr.lines.anchor import ANCHOR_VERSION
from jocr.model import OCRModel
from jocr.pipeline import LoadedModel, parse
from jocr.serve.app import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "documents"))
from layer_fixtures import layer_pdf, lines_content  # noqa: E402
from pdf_fixtures import text_pdf  # noqa: E402

MAX_TOKENS = 8


def _anchored_model(max_tokens: int) -> OCRModel:
    config = OCRConfig.preset("tiny")
    config.anchor = AnchorConfig(version=ANCHOR_VERSION, max_tokens=max_tokens)
    return OCRModel(config).init_weights(seed=0).eval()


@pytest.fixture(scope="module")
def anchored_model():
    return _anchored_model(256)


def _chat(client: TestClient, pdf: bytes, prompt: str, images: int = 1) -> dict:
    url = "data:application/pdf;base64," + base64.b64encode(pdf).decode()
    parts = [{"type": "text", "text": prompt}] + [{"type": "image_url", "image_url": {"url": url}}] * images
    body = {"messages": [{"role": "user", "content": parts}], "max_tokens": MAX_TOKENS, "temperature": 0}
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("mode", ["auto", "on", "off"])
def test_a_pdf_page_is_anchored_like_jocr_parse(anchored_model, tokenizer, mode):
    pdf = text_pdf(["Quarterly results rose"])
    service = make_service(anchored_model, tokenizer, anchor=mode)
    prompt = service.generator.builder.prompt
    try:
        with TestClient(create_app(service.config, service)) as client:
            served = _chat(client, pdf, prompt)
            two_images = _chat(client, pdf, prompt, images=2)
            body = {"pdf": base64.b64encode(pdf).decode()}
            reader = client.post("/", json=body, headers={"X-Return-Format": "markdown"})
    finally:
        service.close()
    loaded = LoadedModel(model=anchored_model, tokenizer=tokenizer)
    parsed = parse(pdf, model=loaded, max_tokens=MAX_TOKENS, anchor=mode, spec="auto")
    page = parsed.pages[0]
    assert page.anchor.anchored is (mode != "off")
    assert served["choices"][0]["message"]["content"] == page.markdown
    assert reader.status_code == 200, reader.text
    assert reader.text == parsed.markdown
    plain = len(service.generator.builder.prompt_ids([page.image_tokens], prompt))
    anchored_tokens = served["usage"]["prompt_tokens"] - plain
    if mode == "off":
        assert anchored_tokens == 0
    else:  # the anchor's tokens and its two tag lines
        assert anchored_tokens > page.anchor.windows[0].tokens
    # Two images: no anchor (an anchor is one page's); each image costs the same tokens as alone.
    assert two_images["usage"]["prompt_tokens"] == plain + page.image_tokens


@pytest.mark.parametrize("stream", [False, True])
def test_a_long_page_is_read_in_windows_like_jocr_parse(tokenizer, stream):
    # A 100-token budget cuts this page's anchor into several windows: one engine request each, the outputs
    # joined in order, the runs' references resolved; the chat answer (streamed or not) equals `jocr parse`.
    model = _anchored_model(100)
    pdf = layer_pdf(lines_content([f"Line {i} of the quarterly report" for i in range(6)]))
    service = make_service(model, tokenizer, anchor="on")
    prompt = service.generator.builder.prompt
    url = "data:application/pdf;base64," + base64.b64encode(pdf).decode()
    parts = [{"type": "text", "text": prompt}, {"type": "image_url", "image_url": {"url": url}}]
    body = {"messages": [{"role": "user", "content": parts}], "max_tokens": MAX_TOKENS, "temperature": 0}
    try:
        with TestClient(create_app(service.config, service)) as client:
            if stream:
                with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
                    assert response.status_code == 200
                    content = "".join(_sse_contents(response.iter_lines()))
            else:
                response = client.post("/v1/chat/completions", json=body)
                assert response.status_code == 200, response.text
                content = response.json()["choices"][0]["message"]["content"]
    finally:
        service.close()
    parsed = parse(
        pdf, model=LoadedModel(model=model, tokenizer=tokenizer), max_tokens=MAX_TOKENS, anchor="on"
    )
    page = parsed.pages[0]
    assert page.anchor.anchored and len(page.anchor.windows) >= 3
    assert page.to_dict()["anchor"]["windows"] == len(page.anchor.windows)
    assert sum(w.lines for w in page.anchor.windows) == page.anchor.windows[0].lines_total == 6
    assert content == page.markdown


def _sse_contents(lines):
    import json

    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            choice = json.loads(line[6:])["choices"]
            if choice and choice[0].get("delta", {}).get("content"):
                yield choice[0]["delta"]["content"]


def test_a_bundle_serves_anchored_pages_with_its_member_and_images_with_its_image_model(tmp_path, tokenizer):
    # The OpenAI route and the Reader over a bundle (docs/parsing.md): a PDF page with a usable layer is read
    # by the `anchored/` member, a PNG by the image model, each as `jocr parse` reads it with that model
    # alone.
    import shutil

    from serve_helpers import page_image, png_bytes

    from jocr.pipeline import load_model
    from jocr.serve.backend import EngineBackend
    from jocr.serve.config import ServeConfig
    from jocr.serve.service import OCRService

    def save(directory: Path, seed: int, version: int) -> Path:
        config = OCRConfig.preset("tiny")
        config.anchor = AnchorConfig(version=version, max_tokens=256)
        OCRModel(config).init_weights(seed=seed).save_pretrained(directory)
        tokenizer.save(directory / "tokenizer.json")
        return directory

    image, member = save(tmp_path / "image", 1, 0), save(tmp_path / "member", 2, ANCHOR_VERSION)
    bundle = tmp_path / "bundle"
    shutil.copytree(image, bundle)
    shutil.copytree(member, bundle / "anchored")
    pdf, png = text_pdf(["Quarterly results rose"]), png_bytes(page_image(0))
    config = ServeConfig(
        max_batch=4, max_queue=8, default_max_tokens=MAX_TOKENS, max_tokens=256, allowed_hosts=("testserver",)
    )
    service = OCRService(
        EngineBackend.from_loaded(load_model(bundle), config.max_batch, config.max_queue), config
    )
    prompt = service.generator.builder.prompt
    try:
        with TestClient(create_app(service.config, service)) as client:
            chat_pdf = _chat(client, pdf, prompt)
            url = "data:image/png;base64," + base64.b64encode(png).decode()
            parts = [{"type": "text", "text": prompt}, {"type": "image_url", "image_url": {"url": url}}]
            body = {
                "messages": [{"role": "user", "content": parts}],
                "max_tokens": MAX_TOKENS,
                "temperature": 0,
            }
            served_png = client.post("/v1/chat/completions", json=body).json()["choices"][0]["message"][
                "content"
            ]
            reader = client.post(
                "/", json={"pdf": base64.b64encode(pdf).decode()}, headers={"X-Return-Format": "markdown"}
            )
    finally:
        service.close()

    def alone(directory: Path, data: bytes, anchor: str) -> str:
        return parse(data, model=load_model(directory), max_tokens=MAX_TOKENS, anchor=anchor).markdown

    # The PDF page's answer is checked against its text layer: both tiny models' answers are broken (they
    # name no run), so each gives way to the page's one run and their Markdown is the same. What the member
    # wrote shows in the page's raw answer, which the chat answer does not carry. That the member read it
    # shows in the prompt: the anchor went in (the image model reads no anchor under the server's "auto"),
    # and a bundle reads anchored prompts with its member.
    served_pdf = chat_pdf["choices"][0]["message"]["content"]
    member_page = parse(pdf, model=load_model(member), max_tokens=MAX_TOKENS, anchor="on").pages[0]
    image_page = parse(pdf, model=load_model(image), max_tokens=MAX_TOKENS, anchor="auto").pages[0]
    assert served_pdf == member_page.markdown
    assert chat_pdf["usage"]["prompt_tokens"] == member_page.prompt_tokens > image_page.prompt_tokens
    assert served_png == alone(image, png, "auto") != alone(member, png, "auto")
    assert reader.status_code == 200 and reader.text == alone(member, pdf, "on")


def test_a_page_read_in_windows_counts_one_request_in_flight_per_window(tokenizer):
    """Each anchor window is an engine request with the full max_tokens: a chat request whose page splits
    into three or more windows is refused (429) by a server that admits two requests in flight, and leaves
    nothing counted; one that fits is admitted."""
    model = _anchored_model(100)
    pdf = layer_pdf(lines_content([f"Line {i} of the quarterly report" for i in range(6)]))
    service = make_service(model, tokenizer, anchor="on", max_batch=1, max_queue=1)
    url = "data:application/pdf;base64," + base64.b64encode(pdf).decode()
    body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]}
    try:
        with TestClient(create_app(service.config, service)) as client:
            response = client.post("/v1/chat/completions", json={**body, "max_tokens": MAX_TOKENS})
            assert response.status_code == 429, response.text
            assert "capacity 2" in response.json()["error"]["message"]
            assert service.admission.in_flight == 0 and service.admission.pixels == 0
    finally:
        service.close()
    wide = make_service(model, tokenizer, anchor="on", max_batch=4, max_queue=4)
    try:
        with TestClient(create_app(wide.config, wide)) as client:
            response = client.post("/v1/chat/completions", json={**body, "max_tokens": MAX_TOKENS})
            assert response.status_code == 200, response.text
            assert wide.admission.in_flight == 0
    finally:
        wide.close()


class _AnsweringGenerator:
    """A generator whose every request answers `raw` (finish reason "stop"), one token at a time."""

    model_id = "scripted"

    def __init__(self, tokenizer, raw: str):
        self.tokenizer, self.ids = tokenizer, tokenizer.encode(raw)

    def prepare(self, image):
        return None, 0

    def prompt_ids(self, prompt, counts, anchor=None):
        return [0]

    def submit(self, prompt_ids, views, params, on_token, on_done):
        class Result:
            token_ids, finish_reason, stats = self.ids, "stop", None

        for token in self.ids:
            on_token([token])
        on_done(Result(), None)
        return object()

    def cancel(self, handle):
        pass

    def decode(self, ids):
        return self.tokenizer.decode(ids)

    def finish(self, raw, size, finish_reason):
        return raw


@pytest.mark.parametrize("with_lines", [True, False])
def test_a_streamed_page_checked_against_its_lines_is_the_non_streamed_answer(
    tokenizer, monkeypatch, with_lines
):
    # The answer skips two runs: checked against the text layer they come back in the middle of the page, so
    # a page read with its lines is sent once its windows have finished; one read from its anchor alone
    # (no lines: nothing to check against) streams as it is written.
    import asyncio

    from jocr.layout.request import page_text
    from jocr.lines.anchor import anchor_lines
    from jocr.serve import service as service_mod
    from jocr.serve.config import ServeConfig
    from jocr.serve.service import OCRService, SamplingParams, Transcription

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layout"))
    from page_fixtures import SECOND, WRAPPED, page_layer, paragraph

    monkeypatch.setattr(service_mod, "STREAM_INTERVAL_S", 0.0)
    layer = page_layer(paragraph(72, 100, WRAPPED + SECOND))
    anchor, raw = "\n".join(anchor_lines(layer)), "@1 @2\n\n@5 @6"
    lines = layer.lines if with_lines else None
    service = OCRService(_AnsweringGenerator(tokenizer, raw), ServeConfig())
    service.admission.acquire()

    async def collect() -> list:
        submitted = await service.submit(
            [Image.new("RGB", (64, 64))], "ocr", SamplingParams(8), [anchor], None, lines
        )
        return [item async for item in service.transcribe(submitted)]

    try:
        *deltas, final = asyncio.run(collect())
    finally:
        service.close()
    assert isinstance(final, Transcription)
    assert final.text == page_text([raw], [anchor], ["stop"], lines) == "".join(deltas)
    assert (WRAPPED[2] in final.text) is with_lines
    assert len(deltas) == 1 if with_lines else len(deltas) > 1
