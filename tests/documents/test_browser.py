"""The web page renderer (documents/browser.py) in Debian's Chromium: a page printed to PDF keeps its text
and table in the text layer; every request the page makes goes through the safe fetcher (a canary server on
another loopback port and the metadata address are never reached); budgets end a page with a clear error;
contexts are closed after each page. Needs `playwright` and `chromium` (make setup installs both)."""

from __future__ import annotations

import asyncio
import time

import pypdfium2
import pytest
from loopback_site import LoopbackSite

from jocr.documents.browser import BrowserConfig, BrowserError, WebRenderer, chromium_processes, is_html
from jocr.documents.fetch import FetchLimits

pytestmark = pytest.mark.browser

ARTICLE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Quarterly report</title></head>
<body><h1>Quarterly report</h1><p>Revenue grew in every region of the caf\xc3\xa9 chain.</p>
<table border="1"><tr><th>Region</th><th>Revenue</th></tr><tr><td>North</td><td>4217</td></tr>
<tr><td>South</td><td>3390</td></tr></table></body></html>"""


@pytest.fixture(scope="module")
def site():
    site = LoopbackSite({"/style.css": (b"h1 { font-size: 30px }", "text/css")})
    canary = LoopbackSite()
    yield {
        "url": site.url,
        "port": site.port,
        "canary": canary.url,
        "site_hits": site.hits,
        "canary_hits": canary.hits,
    }
    site.close()
    canary.close()


@pytest.fixture(scope="module")
def renderer(site):
    limits = FetchLimits(allowed_endpoints=frozenset({("127.0.0.1", site["port"])}), timeout_s=5)
    # Generous time: the shared CPU may be busy; the tests that time out set their own, shorter budget.
    config = BrowserConfig(timeout_s=60, settle_s=1, max_bytes=1024 * 1024, max_contexts=1, max_print_pages=3)
    web = WebRenderer(config, limits)
    web.render(b"<p>warm-up</p>", site["url"] + "/warm-up.html")  # starts Chromium
    yield web
    web.close()


def _pdf_text(pdf: bytes) -> list[str]:
    doc = pypdfium2.PdfDocument(pdf)
    try:
        return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
    finally:
        doc.close()


def test_is_html():
    assert is_html(b"<p>x</p>", "text/html")
    assert is_html(b"\xef\xbb\xbf\n<!DOCTYPE html><p>x", "")
    assert not is_html(b"%PDF-1.7 ...", "text/html")
    assert not is_html(b"plain words", "text/plain")


def test_article_prints_text_and_table(renderer, site):
    page = renderer.render(ARTICLE, site["url"] + "/article.html")
    assert page.mode == "pdf" and page.title == "Quarterly report"
    (text,) = _pdf_text(page.data)  # one printed page, with its text layer
    words = text.split()
    assert "café" in words and "Revenue" in words
    # Table cells in reading order: each row's cells together.
    assert " ".join(words).count("North 4217 South 3390") == 1
    assert renderer.open_contexts() == 0


def test_long_page_prints_at_most_the_page_cap(renderer, site):
    html = b"<title>Long</title>" + b"".join(b"<p>Paragraph %d of the long page.</p>" % i for i in range(400))
    texts = _pdf_text(renderer.render(html, site["url"] + "/long.html").data)
    assert len(texts) == 3  # max_print_pages; the page itself is longer
    assert "Paragraph 0 " in texts[0] and "Paragraph 0 " not in texts[1]


def test_hostile_requests_refused_and_never_reached(renderer, site):
    canary = site["canary"]
    html = f"""<title>Hostile</title><link rel="stylesheet" href="/style.css"><h1>Still here</h1>
    <img src="{canary}/img.png"><img src="http://169.254.169.254/latest/meta-data/">
    <iframe src="{canary}/frame.html"></iframe><iframe src="/loop"></iframe>
    <iframe src="file:///etc/passwd"></iframe>
    <script>
      fetch("{canary}/xhr").catch(() => 0);
      fetch("/style.css", {{method: "POST"}}).catch(() => 0);
      try {{ new WebSocket("{canary.replace("http", "ws")}/ws"); }} catch (e) {{}}
      window.open("{canary}/popup.html");
      if (navigator.serviceWorker) navigator.serviceWorker.register("/sw.js").catch(() => 0);
    </script>""".encode()
    page = renderer.render(html, site["url"] + "/hostile.html")
    assert "Still here" in _pdf_text(page.data)[0]
    blocked = "\n".join(page.blocked)
    assert site["canary_hits"] == []
    assert f"{canary}/img.png: refused to fetch '127.0.0.1': address 127.0.0.1 is loopback" in blocked
    assert f"{canary}/xhr: refused" in blocked and f"{canary}/frame.html: refused" in blocked
    assert "169.254.169.254/latest/meta-data/: refused" in blocked and "metadata" in blocked
    assert "/loop: too many redirects" in blocked
    assert "/ws: WebSockets are not allowed" in blocked
    assert "method POST is not allowed" in blocked
    assert "popups are not allowed" in blocked
    assert "/style.css" in site["site_hits"] and "/sw.js" not in site["site_hits"]
    assert renderer.open_contexts() == 0


def test_byte_budget(renderer, site):
    with pytest.raises(BrowserError, match="over the 1048576-byte budget") as info:
        renderer.render(b'<img src="/huge.png"><p>x</p>', site["url"] + "/huge.html", timeout_s=20)
    assert info.value.status == 413


def test_hanging_page_times_out_and_busy_is_refused(renderer, site):
    hang = b"<title>Hang</title><p>x</p><script>setTimeout(() => { while (true) {} }, 50)</script>"
    slow = renderer.submit(hang, site["url"] + "/hang.html", timeout_s=3)
    time.sleep(0.5)
    with pytest.raises(BrowserError, match="browser busy") as busy:  # max_contexts=1
        renderer.render(ARTICLE, site["url"] + "/article.html")
    assert busy.value.status == 429
    with pytest.raises(BrowserError, match=r"did not \w+ within 3 s") as info:
        slow.result(timeout=20)
    assert info.value.status == 504
    assert renderer.open_contexts() == 0
    page = renderer.render(ARTICLE, site["url"] + "/article.html", "screenshot")  # the browser still works
    assert page.data.startswith(b"\x89PNG")


def test_chromium_that_died_is_started_again(renderer, site):
    # Stands in for a crash: the browser goes away under the renderer, which notices at the next page.
    old = renderer._browser
    asyncio.run_coroutine_threadsafe(old.close(), renderer._loop).result(timeout=20)
    page = renderer.render(ARTICLE, site["url"] + "/article.html")
    assert page.title == "Quarterly report" and renderer._browser is not old


def test_missing_chromium_is_a_clear_error():
    web = WebRenderer(BrowserConfig(executable="/nonexistent/chromium"))
    try:
        with pytest.raises(BrowserError, match="needs Chromium") as info:
            web.render(ARTICLE, "https://example.com/")
        assert info.value.status == 501
    finally:
        web.close()


def _renderers() -> int:
    return sum(1 for kind in chromium_processes().values() if kind == "renderer")


def test_a_page_cancelled_while_closing_still_closes_its_context_and_renderer(renderer, site):
    """A request cancelled again while its context is being closed (the client gone, then the request's own
    timeout firing) must not leave the context, or its renderer spinning in a loop, behind; its slot is
    given back only once the context is closed."""
    before = _renderers()
    spin = b"<title>Spin</title><script>while (true) {}</script>"

    async def cancel_at_every_step() -> None:
        task = asyncio.ensure_future(
            renderer._render(spin, "text/html", site["url"] + "/spin.html", "pdf", 30)
        )
        while not (renderer._browser and renderer._browser.contexts):
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # the page is loading: its script spins
        while not task.done():  # the first cancel ends the page, the later ones hit its close
            task.cancel()
            await asyncio.sleep(0)

    asyncio.run_coroutine_threadsafe(cancel_at_every_step(), renderer._loop).result(timeout=60)
    deadline = time.monotonic() + 30
    while (renderer.open_contexts(), renderer.active_pages()) != (0, 0) or _renderers() > before:
        assert time.monotonic() < deadline, (renderer.open_contexts(), renderer.active_pages(), _renderers())
        time.sleep(0.2)
    page = renderer.render(ARTICLE, site["url"] + "/article.html")  # the slot is free again
    assert page.title == "Quarterly report"


def test_window_print_does_not_block_printing(renderer, site):
    html = b"<title>Printer</title><p>Printed anyway</p><script>window.print()</script>"
    page = renderer.render(html, site["url"] + "/print.html")
    assert "Printed anyway" in _pdf_text(page.data)[0]


def test_printed_pdf_over_the_limit_is_refused_while_read(site):
    limits = FetchLimits(allowed_endpoints=frozenset({("127.0.0.1", site["port"])}), timeout_s=5)
    web = WebRenderer(BrowserConfig(timeout_s=60, settle_s=0.5, max_contexts=1, max_pdf_bytes=30_000), limits)
    try:
        small = web.render(b"<p>short</p>", site["url"] + "/short.html")
        assert len(small.data) < 30_000
        long = b"".join(b"<p>Paragraph %d of many, printed on page after page.</p>" % i for i in range(1500))
        with pytest.raises(BrowserError, match="over the 30000-byte PDF limit") as info:
            web.render(long, site["url"] + "/long.html")
        assert info.value.status == 413
        assert web.open_contexts() == 0
    finally:
        web.close()


def test_typed_arrays_are_bounded_by_the_process_memory_limit(site):
    """V8's heap cap does not cover ArrayBuffers; the data-segment limit on Chromium's processes does."""
    limits = FetchLimits(allowed_endpoints=frozenset({("127.0.0.1", site["port"])}), timeout_s=5)
    web = WebRenderer(BrowserConfig(timeout_s=60, settle_s=0.5, max_contexts=1, max_process_mb=768), limits)
    hog = b"""<script>let kept = [], mb = 0;
    try { for (let i = 0; i < 64; i++) { kept.push(new Uint8Array(16 << 20).fill(1)); mb += 16; } }
    catch (e) {}
    document.title = "allocated " + mb;</script>"""
    try:
        try:
            page = web.render(hog, site["url"] + "/hog.html")
        except BrowserError as exc:  # the renderer crashed at the limit: as bounded
            assert exc.status == 502
        else:
            allocated = int(page.title.split()[1])
            assert allocated < 768, page.title  # 1024 MB without the limit
        assert web.render(b"<title>After</title>", site["url"] + "/after.html").title == "After"
    finally:
        web.close()


def test_a_stuck_browser_is_killed_with_every_process_and_started_again(renderer, site):
    """What a context that does not close leads to (`_kill_browser`): every process of this renderer's
    Chromium is killed, none survives, and the next page starts a new browser."""
    renderer.render(ARTICLE, site["url"] + "/article.html")
    before = set(chromium_processes())
    assert "browser" in chromium_processes().values()
    asyncio.run_coroutine_threadsafe(renderer._kill_browser(), renderer._loop).result(timeout=60)
    deadline = time.monotonic() + 20
    while before & set(chromium_processes()):
        assert time.monotonic() < deadline, before & set(chromium_processes())
        time.sleep(0.2)
    assert renderer.render(ARTICLE, site["url"] + "/article.html").title == "Quarterly report"
