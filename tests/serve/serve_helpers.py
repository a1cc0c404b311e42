"""Helpers shared by the server tests (imported by module name; fixtures live in conftest.py)."""

from __future__ import annotations

import io
import socket
import threading
import time

import uvicorn
from PIL import Image, ImageDraw

from jocr.documents.fetch import FetchLimits
from jocr.pipeline import LoadedModel, parse
from jocr.serve.backend import EngineBackend
from jocr.serve.config import ServeConfig
from jocr.serve.service import OCRService
from jocr.tokenizer import DEFAULT_PROMPT, PROMPTS

MAX_TOKENS = 48


def page_image(seed: int = 0, size=(320, 240)) -> Image.Image:
    """A small synthetic page: a few dark lines whose placement depends on `seed`."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    for i in range(4):
        y = 20 + i * 45 + (seed * 7) % 20
        draw.rectangle((20 + seed % 30, y, size[0] - 30 - (i * 13 + seed) % 60, y + 12), fill=(30, 30, 30))
    return image


def png_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def pdf_bytes(images: list[Image.Image]) -> bytes:
    buf = io.BytesIO()
    images[0].save(buf, format="PDF", save_all=True, append_images=images[1:], resolution=72.0)
    return buf.getvalue()


def pipeline_markdown(model, tokenizer, image, prompt: str | None = None, max_tokens: int = MAX_TOKENS):
    """What the pipeline (`jocr.parse`) gives for one page image with the same settings.

    Returns (markdown, prompt_tokens, completion_tokens, finish_reason)."""
    loaded = LoadedModel(model=model, tokenizer=tokenizer)
    doc = parse(png_bytes(image), model=loaded, max_tokens=max_tokens, prompt=prompt)
    page = doc.pages[0]
    prompt_text = DEFAULT_PROMPT if prompt is None else PROMPTS.get(prompt, prompt)
    prompt_tokens = len(tokenizer.build_prompt(prompt_text, [page.image_tokens]))
    return page.markdown, prompt_tokens, page.num_tokens, page.finish_reason


def make_service(model, tokenizer, **overrides) -> OCRService:
    # Starlette's TestClient sends `Host: testserver`, a name the server accepts only when told to.
    settings = dict(
        max_batch=4, max_queue=8, default_max_tokens=MAX_TOKENS, max_tokens=256, allowed_hosts=("testserver",)
    )
    settings.update(overrides)
    config = ServeConfig(**settings)
    backend = EngineBackend.create(model, tokenizer, config.max_batch, config.max_queue, model_id="jocr-tiny")
    config.model_id = backend.model_id
    return OCRService(backend, config)


def files_fetch_limits(files: dict) -> FetchLimits:
    """Private addresses refused except the test file server's exact endpoint."""
    return FetchLimits(allowed_endpoints=frozenset({("127.0.0.1", files["port"])}), timeout_s=10)


class LiveServer:
    """uvicorn in a background thread on 127.0.0.1 with an ephemeral port."""

    def __init__(self, app):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class GatedBackend(EngineBackend):
    """The real backend, but no request's tokens are handed over until the test opens the gate (the decode
    thread waits at the first one: the whole engine stands still meanwhile)."""

    gate: threading.Event

    def submit(self, prompt_ids, views, params, on_token=None, on_done=None):
        def held(ids):
            self.gate.wait(30)
            on_token(ids)

        return super().submit(prompt_ids, views, params, held, on_done)


def gated_service(tiny_model, tokenizer, **overrides) -> tuple[OCRService, threading.Event]:
    """A service over `GatedBackend` (one decoding, one waiting unless `overrides` say otherwise) and its
    gate, closed."""
    settings = dict(max_batch=1, max_queue=1, default_max_tokens=16, allowed_hosts=("testserver",))
    settings.update(overrides)
    config = ServeConfig(**settings)
    backend = GatedBackend.create(tiny_model, tokenizer, config.max_batch, config.max_queue, "jocr-tiny")
    backend.gate = threading.Event()
    return OCRService(backend, config), backend.gate


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)
