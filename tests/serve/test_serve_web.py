"""The Reader on web pages: HTML from a loopback site (allowed like `jocr serve --allow-fetch-host
127.0.0.1:PORT`) is rendered in Chromium, printed to PDF and read like any PDF; hostile pages are refused or
bounded with a clear status, and `/health` stays green with no browser context left open after each test.
Needs `playwright` and Debian's `chromium` (make setup installs both)."""

from __future__ import annotations

import argparse
import base64
import io
import logging
import re

import httpx
import pytest
from loopback_site import LoopbackSite
from PIL import Image
from serve_helpers import MAX_TOKENS, LiveServer, make_service

from jocr.cli import CliError, serve_cmd
from jocr.documents.browser import BrowserConfig
from jocr.documents.fetch import FetchLimits
from jocr.pipeline import LoadedModel, parse
from jocr.serve.app import create_app

pytestmark = pytest.mark.browser

ARTICLE = b"""<!doctype html><html><head><title>Quarterly report</title></head><body>
<h1>Quarterly report</h1><p>Revenue grew in every region.</p>
<table border="1"><tr><th>Region</th><th>Revenue</th></tr><tr><td>North</td><td>4217</td></tr></table>
</body></html>"""
LONG = b"<title>Long</title>" + b"".join(b"<p>Paragraph %d of a long page.</p>" % i for i in range(100))
GROWING = b"""<title>Growing</title><p>start</p><script>
setInterval(() => { for (let i = 0; i < 50; i++) document.body.append(Object.assign(
  document.createElement("p"), {textContent: "more"})); fetch("/tick").catch(() => 0); }, 50);</script>"""
HANG = b"<title>Hang</title><p>x</p><script>setTimeout(() => { while (true) {} }, 50)</script>"
HUGE = b'<title>Huge</title><img src="/huge.png"><p>x</p>'


def _hostile(canary: str) -> bytes:
    return f"""<title>Hostile</title><h1>Still here</h1>
    <img src="{canary}/img.png"><img src="http://169.254.169.254/latest/meta-data/">
    <iframe src="{canary}/frame.html"></iframe>
    <script>fetch("{canary}/xhr").catch(() => 0);
      try {{ new WebSocket("{canary.replace("http", "ws")}/ws"); }} catch (e) {{}}
      fetch("http://169.254.169.254/latest/meta-data/iam/").catch(() => 0);</script>""".encode()


@pytest.fixture(scope="module")
def site():
    canary = LoopbackSite()
    pages = {
        "/article.html": ARTICLE,
        "/long.html": LONG,
        "/growing.html": GROWING,
        "/hang.html": HANG,
        "/huge.html": HUGE,
        "/hostile.html": _hostile(canary.url),
    }
    site = LoopbackSite({path: (body, "text/html") for path, body in pages.items()})
    yield {"url": site.url, "port": site.port, "canary_hits": canary.hits}
    site.close()
    canary.close()


@pytest.fixture(scope="module")
def web_live(tiny_model, tokenizer, site, files):
    fetch = FetchLimits(
        allowed_endpoints=frozenset({("127.0.0.1", site["port"]), ("127.0.0.1", files["port"])}), timeout_s=10
    )
    # Generous time: the shared CPU may be busy; the tests that time out send a shorter X-Timeout.
    browser = BrowserConfig(timeout_s=60, settle_s=1, max_bytes=2 * 1024 * 1024, max_print_pages=5)
    service = make_service(tiny_model, tokenizer, fetch=fetch, browser=browser)
    service.web.render(b"<p>warm-up</p>", f"http://127.0.0.1:{site['port']}/warm-up.html")  # starts Chromium
    server = LiveServer(create_app(service.config, service))
    server.service = service
    yield server
    server.stop()


@pytest.fixture
def web(web_live):
    with httpx.Client(base_url=web_live.url, timeout=60) as client:
        yield client
    health = httpx.get(web_live.url + "/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert health.json()["in_flight"] == 0
    assert web_live.service.web.open_contexts() == 0


def test_article_is_read_like_its_printed_pdf(web, web_live, site, tiny_model, tokenizer):
    url = site["url"] + "/article.html"
    response = web.post("/", json={"url": url}, headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["title"] == "Quarterly report" and answer["url"] == url and answer["usage"]["pages"] == 1
    # The same pipeline as for a PDF: what jocr.parse reads from the page Chromium prints.
    printed = web_live.service.web.render(ARTICLE, url)
    loaded = LoadedModel(model=tiny_model, tokenizer=tokenizer)
    assert answer["content"] == parse(printed.data, model=loaded, max_tokens=MAX_TOKENS).markdown


def test_demo_page_image_of_a_web_page(web, site):
    response = web.post("/v1/pages", json={"url": site["url"] + "/long.html", "page": 2})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["title"] == "Long" and answer["page"] == 2 and answer["num_pages"] >= 2
    assert answer["image"].startswith("data:image/png;base64,")


def test_long_page_x_page(web, site):
    url = site["url"] + "/long.html"
    response = web.get("/" + url, headers={"X-Page": "2", "Accept": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["pages"] == 1 and response.json()["title"] == "Long"
    response = web.get("/" + url, headers={"X-Page": "9"})
    assert response.status_code == 400
    printed = re.search(r"out of range: the document has (\d+) page", response.json()["error"]["message"])
    assert printed and 2 <= int(printed.group(1)) < 5  # several pages, all of them (the cap is 5)


def test_screenshot_and_pageshot(web, site, files):
    shot = web.get("/" + site["url"] + "/article.html", headers={"X-Respond-With": "screenshot"})
    assert shot.status_code == 200 and shot.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(shot.content)).size == (1280, 1024)
    pageshot = web.get(
        "/" + site["url"] + "/long.html",
        headers={"X-Respond-With": "pageshot", "Accept": "application/json"},
    ).json()
    assert pageshot["title"] == "Long" and pageshot["pageshotUrl"].startswith("data:image/png;base64,")
    png = base64.b64decode(pageshot["pageshotUrl"].split(",", 1)[1])
    width, height = Image.open(io.BytesIO(png)).size
    assert width == 1280 and height > 2000
    # A PDF's "screenshot" is the page image the model reads (X-Page selects it).
    pdf_shot = web.get(
        "/" + files["url"] + "/doc.pdf", headers={"X-Respond-With": "screenshot", "X-Page": "2"}
    )
    assert pdf_shot.status_code == 200
    width, height = files["pages"][1].size
    assert Image.open(io.BytesIO(pdf_shot.content)).size == (2 * width, 2 * height)  # 144 dpi


def test_hostile_page_requests_are_refused(web, site):
    response = web.get("/" + site["url"] + "/hostile.html", headers={"Accept": "application/json"})
    assert response.status_code == 200 and response.json()["title"] == "Hostile"
    assert site["canary_hits"] == []  # loopback on another port: never reached


@pytest.mark.parametrize(
    "path, headers, status, message",
    [
        ("/loop", {}, 400, "too many redirects"),
        ("/endless.html", {"X-Timeout": "3"}, 504, "timed out"),
        ("/hang.html", {"X-Timeout": "4"}, 504, "the page did not settle within"),
        ("/huge.html", {"X-Timeout": "20"}, 413, "over the 2097152-byte budget"),
        ("/growing.html", {"X-Page": "6", "X-Timeout": "20"}, 400, "the document has 5 page(s)"),
    ],
    ids=["redirect-loop", "endless-html", "hanging-script", "huge-image", "growing-page"],
)
def test_hostile_pages_bounded(web, site, path, headers, status, message):
    """Each answered within its X-Timeout (the growing page too: its settle wait is bounded)."""
    response = web.get("/" + site["url"] + path, headers=headers)
    assert response.status_code == status, response.text[:300]
    error = response.json()["error"]["message"]
    assert message in error and "\n" not in error


def test_allow_fetch_host_flag(caplog):
    parser = argparse.ArgumentParser()
    serve_cmd.add_arguments(parser)
    config = serve_cmd.build_config(parser.parse_args([]))
    assert config.fetch.allowed_endpoints == frozenset() and not caplog.records
    args = parser.parse_args(["--allow-fetch-host", "127.0.0.1", "--allow-fetch-host", "[::1]:8080"])
    with caplog.at_level(logging.WARNING, logger="jocr.serve"):
        config = serve_cmd.build_config(args)
    assert config.fetch.allowed_endpoints == frozenset({("127.0.0.1", 0), ("::1", 8080)})
    assert "--allow-fetch-host" in caplog.text and "127.0.0.1:*" in caplog.text
    with pytest.raises(CliError, match="not an IP address"):
        serve_cmd.build_config(parser.parse_args(["--allow-fetch-host", "localhost"]))
