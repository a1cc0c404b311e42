"""Fixtures for the server tests: a tiny random model with the byte-level tokenizer (transcriptions are
garbage but deterministic), a real uvicorn server on an ephemeral loopback port, and a loopback file server
that only the tests' fetch limits allow."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
import pytest
import torch
from serve_helpers import LiveServer, files_fetch_limits, make_service, page_image, pdf_bytes, png_bytes

from jocr.config import OCRConfig
from jocr.model import OCRModel
from jocr.serve.app import create_app
from jocr.tokenizer import Tokenizer

# The loopback site (tests/documents/loopback_site.py) is shared with the documents tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "documents"))


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The tiny model gains nothing from a second thread, and on a busy shared CPU torch's spin-waiting
    threads can slow it down tenfold (docs/serving.md); restored for the tests of other folders."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_model():
    torch.manual_seed(0)
    return OCRModel(OCRConfig.preset("tiny")).init_weights(seed=0).eval()


@pytest.fixture(scope="session")
def tokenizer():
    return Tokenizer.byte_level()


@pytest.fixture(scope="module")
def files():
    """A loopback file server: /page.png, /doc.pdf (3 pages), /page.html, /redirect?to=URL."""
    from loopback_site import LoopbackSite

    pages = [page_image(i) for i in range(3)]
    site = LoopbackSite(
        {
            "/page.png": (png_bytes(pages[0]), "image/png"),
            "/doc.pdf": (pdf_bytes(pages), "application/pdf"),
            "/page.html": (b"<!doctype html><html><body>hi</body></html>", "text/html"),
        }
    )
    yield {"port": site.port, "url": site.url, "pages": pages, "pdf": site.routes["/doc.pdf"][0]}
    site.close()


@pytest.fixture(scope="module")
def live(tiny_model, tokenizer, files):
    service = make_service(
        tiny_model, tokenizer, fetch=files_fetch_limits(files), max_body_bytes=4 * 1024 * 1024
    )
    server = LiveServer(create_app(service.config, service))
    yield server
    server.stop()


@pytest.fixture
def api(live):
    with httpx.Client(base_url=live.url, timeout=60) as client:
        yield client


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright (the demo page's tests; skipped without either)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if shutil.which(CHROMIUM) is None:
        pytest.skip("Debian chromium is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield browser
        browser.close()
