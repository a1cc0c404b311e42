"""Web pages as documents: an HTML page loaded in headless Chromium, then printed to PDF (or photographed),
so the rest of the pipeline reads it like any PDF, with its pages and its text layer.

A web page is hostile input that runs code in our browser, so:
- every request the page makes (subresources, frames, XHR/fetch, navigations) is intercepted and answered
  by `jocr.documents.fetch.fetch_url`, the one safe fetcher: the same SSRF rules, re-checked on every
  redirect hop, connecting only to the address it checked. Chromium itself opens no connection: it runs
  behind a proxy that refuses everything (a bound loopback socket that never listens, with loopback not
  exempted), so a request that escapes interception fails instead of reaching the network;
- WebSockets are closed, service workers blocked, downloads refused, popups closed, methods other than GET
  and schemes other than http(s) (file://, ...) refused;
- per page: a wall-time budget (load, settle, print), a byte budget over all responses, a request budget,
  at most `max_print_pages` printed pages and `max_pdf_bytes` of PDF (read from Chromium's print stream in
  chunks, so a bigger PDF never reaches this process), a screenshot height cap and a V8 heap cap;
- per Chromium process (browser, renderers, utilities; Linux): a data-segment limit (RLIMIT_DATA,
  `max_process_mb`), which bounds what V8's heap cap does not: typed arrays, canvases, images, the
  printed PDF. A page over it fails to allocate (a JS RangeError, or the renderer crashes: 502);
- one Chromium process, reused; at most `max_contexts` pages at once, each in a fresh browser context (no
  cookies, cache or storage shared between requests) that is closed afterwards. The close cannot be
  cancelled (it runs in a task of its own, shielded from the request's cancellation), a page's slot is
  given back only once its context is closed, and a context that does not close within
  `_CLOSE_TIMEOUT_S` takes the whole browser down with it (its processes killed; the next page starts a new
  one), so no renderer outlives its request;
- `window.print()` is a no-op (a page that calls it would otherwise block printing).

Playwright's async API runs on a private event loop in a thread of its own, so a hostile page can only slow
that loop, never the caller's; `WebRenderer.submit` is thread-safe and returns a concurrent Future.
Chromium is Debian's `chromium` (or `BrowserConfig.executable`): Playwright never downloads a browser here.
Its settings and errors are browser_config.py's, each request of a page browser_requests.py's, and finding
Chromium's processes chromium.py's.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import logging
import os
import shlex
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from jocr.documents.browser_config import (
    BrowserConfig,
    BrowserError,
    first_line,
    length_inches,
    paper_inches,
)
from jocr.documents.browser_requests import (
    FETCHES_PER_PAGE,
    PageSession,
    close_popup,
    refuse_websocket,
    route_request,
)
from jocr.documents.chromium import chromium_commands, chromium_processes
from jocr.documents.fetch import FetchLimits
from jocr.documents.pages import sniff_type

log = logging.getLogger("jocr.browser")

MODES = ("pdf", "screenshot", "pageshot")
HTML_TYPES = ("text/html", "application/xhtml+xml")
# A browser context that has not closed by then is stuck (a renderer that no longer answers): the browser
# is killed instead.
_CLOSE_TIMEOUT_S = 10.0
# Bytes of printed PDF read from Chromium per IO.read call.
_PRINT_CHUNK = 1 << 20
# Run in every frame before its own scripts: printing from the page would block our own print.
_INIT_SCRIPT = "window.print = function () {};"


@dataclass
class RenderedPage:
    """A rendered page: `data` is a PDF (mode "pdf") or a PNG ("screenshot", "pageshot").

    title: the page's `<title>` (one line). url: the page's URL. blocked: "URL: reason" for each request
    refused or failed (capped at 100). requests / bytes: what the page fetched, the HTML included."""

    data: bytes
    mode: str
    title: str
    url: str
    blocked: list[str]
    requests: int
    bytes: int


def is_html(data: bytes, content_type: str) -> bool:
    """An HTML page (not a PDF or image): by its media type, else by its opening tag."""
    if sniff_type(data[:1024]) is not None:
        return False
    if content_type.split(";", 1)[0].strip().lower() in HTML_TYPES:
        return True
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<!doctype html", b"<html"))


class WebRenderer:
    """One shared Chromium (started on first use) that renders pages; see the module docstring."""

    def __init__(self, config: BrowserConfig | None = None, fetch_limits: FetchLimits | None = None):
        self.config = config or BrowserConfig()
        self.fetch_limits = fetch_limits or FetchLimits()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._playwright = None
        self._browser = None
        self._launching: asyncio.Lock | None = None
        self._active = 0
        self._fetch_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.config.max_contexts * FETCHES_PER_PAGE, thread_name_prefix="jocr-web-fetch"
        )
        self._dead_proxy: socket.socket | None = None
        self._closing_tasks: dict[asyncio.Future, asyncio.Task] = {}  # contexts being closed
        self._wrapper_dir: str | None = None
        # A switch Chromium ignores, on its browser process's command line: which browser is this one's.
        self._marker = f"--jocr-renderer={os.getpid()}-{id(self):x}"

    # Public, thread-safe ------------------------------------------------------------------------------
    def submit(
        self,
        html: bytes,
        url: str,
        mode: str = "pdf",
        content_type: str = "text/html",
        timeout_s: float | None = None,
    ) -> concurrent.futures.Future:
        """Render `html` as served from `url` (its base for relative links); a Future of RenderedPage that
        raises BrowserError. Cancelling the Future stops the page and closes its context."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        timeout = self.config.timeout_s if timeout_s is None else min(timeout_s, self.config.timeout_s)
        media = content_type.split(";", 1)[0].strip().lower() or "text/html"
        coro = self._render(html, media, url.split("#", 1)[0], mode, timeout)
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())

    def render(self, html: bytes, url: str, mode: str = "pdf", **kwargs) -> RenderedPage:
        return self.submit(html, url, mode, **kwargs).result()

    def open_contexts(self) -> int:
        """Browser contexts open now (0 when idle: each page's context is closed after it)."""
        with self._lock:
            loop = self._loop
        if loop is None:
            return 0

        async def count() -> int:
            return len(self._browser.contexts) if self._browser is not None else 0

        return asyncio.run_coroutine_threadsafe(count(), loop).result(timeout=10)

    def active_pages(self) -> int:
        """Pages holding a slot: being rendered, or whose context is still being closed."""
        return self._active

    def close(self) -> None:
        """Close Chromium and the renderer's thread; a later `submit` starts them again."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=20)
            except Exception as exc:  # a hung browser must not hang the server's shutdown
                log.warning("closing Chromium failed: %s", exc)
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(5)
        if self._dead_proxy is not None:
            self._dead_proxy.close()
            self._dead_proxy = None
        if self._wrapper_dir is not None:
            shutil.rmtree(self._wrapper_dir, ignore_errors=True)
            self._wrapper_dir = None

    # The renderer's own loop --------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._launching = None
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="jocr-browser", daemon=True
                )
                self._thread.start()
            return self._loop

    async def _shutdown(self) -> None:
        browser, playwright, self._browser, self._playwright = self._browser, self._playwright, None, None
        if browser is not None:
            await asyncio.wait_for(browser.close(), 10)
        if playwright is not None:
            await asyncio.wait_for(playwright.stop(), 10)

    async def _ensure_browser(self):
        if self._launching is None:
            self._launching = asyncio.Lock()
        async with self._launching:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            try:
                from playwright.async_api import Error as PlaywrightError
                from playwright.async_api import async_playwright
            except ImportError:
                raise BrowserError(
                    "reading web pages needs Playwright: pip install 'jocr[web]'", 501
                ) from None
            exe = self.config.executable or shutil.which("chromium")
            if not exe or not os.path.exists(exe):
                raise BrowserError(
                    "reading web pages needs Chromium (Debian: apt-get install chromium; "
                    "or jocr serve --chromium PATH)",
                    501,
                )
            if self._dead_proxy is None:
                # Chromium's proxy: bound but never listening, so every connection to it is refused at once.
                self._dead_proxy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self._dead_proxy.bind(("127.0.0.1", 0))
            port = self._dead_proxy.getsockname()[1]
            args = [
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                # WebRTC's UDP does not use the proxy: forbid it, as the proxy cannot refuse it.
                "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
                f"--js-flags=--max-old-space-size={self.config.js_heap_mb}",
                self._marker,
            ]
            try:
                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(
                    executable_path=self._limited(exe),
                    args=args,
                    headless=True,
                    chromium_sandbox=self.config.sandbox,
                    # `<-loopback>` removes Chromium's implicit proxy bypass for localhost.
                    proxy={"server": f"http://127.0.0.1:{port}", "bypass": "<-loopback>"},
                    timeout=self.config.launch_timeout_s * 1000,
                    handle_sigint=False,
                    handle_sigterm=False,
                    handle_sighup=False,
                )
            except PlaywrightError as exc:
                raise BrowserError(f"cannot start Chromium ({exe}): {first_line(exc)}", 503) from None
            log.info("Chromium started: %s %s", exe, self._browser.version)
            return self._browser

    async def _render(self, html: bytes, media: str, url: str, mode: str, timeout: float) -> RenderedPage:
        if self._active >= self.config.max_contexts:
            raise BrowserError(
                f"browser busy: {self._active} pages are being rendered (limit {self.config.max_contexts}); "
                "retry shortly",
                429,
            )
        # The slot is held until the page's context is closed (`_close_context`), not merely until this
        # coroutine ends: a cancelled request must not free a slot whose renderer still runs.
        self._active += 1
        opening: asyncio.Future | None = None
        try:
            from playwright.async_api import Error as PlaywrightError

            deadline = time.monotonic() + timeout
            try:
                browser = await asyncio.wait_for(self._ensure_browser(), timeout)
            except TimeoutError:
                raise BrowserError(f"Chromium did not start within {timeout:.3g} s", 504) from None
            session = PageSession(html, media, url, self.config, deadline)
            if session.bytes > self.config.max_bytes:
                raise session.over_bytes(url)
            width, height = self.config.viewport
            # Its own task: cancelled while Chromium creates it, the context is still closed once it exists.
            opening = asyncio.ensure_future(
                browser.new_context(
                    viewport={"width": width, "height": height},
                    accept_downloads=False,
                    service_workers="block",
                    java_script_enabled=True,
                    ignore_https_errors=False,
                )
            )
            try:
                context = await asyncio.shield(opening)
            except PlaywrightError as exc:  # Chromium died: the next page starts a new one
                raise BrowserError(f"the browser failed: {first_line(exc)}") from None
            try:
                data, title = await self._run_page(context, session, mode, timeout)
            except PlaywrightError as exc:
                raise BrowserError(f"the browser failed: {first_line(exc)}") from None
            return RenderedPage(data, mode, title, url, session.blocked, session.requests, session.bytes)
        finally:
            if opening is None:
                self._active -= 1
            else:
                self._close_when_open(opening)
                closing = self._closing_tasks.get(opening)
                if closing is not None:
                    await asyncio.shield(closing)  # cancelled here, the close still runs to its end

    async def _run_page(self, context, session: PageSession, mode: str, timeout: float) -> tuple[bytes, str]:
        """Load and capture the page in `context` under the session's deadline and budgets."""
        from playwright.async_api import Error as PlaywrightError

        await context.add_init_script(_INIT_SCRIPT)
        await context.route(
            "**/*", lambda route: route_request(session, route, self.fetch_limits, self._fetch_pool)
        )
        await context.route_web_socket("**/*", lambda ws: refuse_websocket(session, ws))
        work = asyncio.ensure_future(self._load_and_capture(context, session, mode))
        failed = asyncio.ensure_future(session.failed.wait())
        try:
            done, _ = await asyncio.wait(
                {work, failed},
                timeout=max(0.0, session.deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            work.cancel()
            failed.cancel()
        if session.error is not None:
            raise session.error
        if work not in done:
            raise BrowserError(f"the page did not {session.stage} within {timeout:.3g} s", 504)
        try:
            return work.result()
        except PlaywrightError as exc:
            message = f"the browser failed to {session.stage} the page: {first_line(exc)}"
            raise BrowserError(message) from None

    def _close_when_open(self, opening: asyncio.Future) -> None:
        """Close the context `opening` gives (now, or once Chromium has created it) in a task of its own,
        which gives the page's slot back when the context is closed."""

        def start(done: asyncio.Future) -> None:
            if done.cancelled() or done.exception() is not None:
                self._active -= 1  # no context was created
                return
            task = asyncio.ensure_future(self._close_context(done.result()))
            self._closing_tasks[opening] = task
            task.add_done_callback(lambda _t: self._closing_tasks.pop(opening, None))

        if opening.done():
            start(opening)
        else:
            opening.add_done_callback(start)

    async def _close_context(self, context) -> None:
        try:
            await asyncio.wait_for(context.close(), _CLOSE_TIMEOUT_S)
        except Exception as exc:  # TimeoutError included: a renderer that no longer answers
            log.warning("closing a browser context failed (%s): killing the browser", first_line(exc))
            await self._kill_browser()
        finally:
            self._active -= 1

    async def _kill_browser(self) -> None:
        """Kill Chromium (every process of it below this one), so nothing of a stuck page keeps running; the
        next page starts a new browser. Pages being rendered meanwhile fail (502)."""
        browser, self._browser = self._browser, None
        mine = [pid for pid, command in chromium_commands().items() if self._marker in command]
        doomed = set(mine)
        for pid in mine:
            doomed.update(chromium_processes(pid))
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if browser is not None:
            try:
                await asyncio.wait_for(browser.close(), _CLOSE_TIMEOUT_S)
            except Exception as exc:
                log.debug("closing the killed browser: %s", first_line(exc))

    def _limited(self, exe: str) -> str:
        """`exe`, or on Linux with `max_process_mb` a wrapper script that sets the data-segment limit
        (RLIMIT_DATA, inherited by every process Chromium starts) and then runs it. Written once, in a
        private folder of its own."""
        if not sys.platform.startswith("linux") or self.config.max_process_mb <= 0:
            return exe
        if self._wrapper_dir is None:
            self._wrapper_dir = tempfile.mkdtemp(prefix="jocr-chromium-")
        path = os.path.join(self._wrapper_dir, "chromium")
        kib = self.config.max_process_mb * 1024
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f'#!/bin/sh\nulimit -d {kib} || exit 1\nexec {shlex.quote(exe)} "$@"\n')
        os.chmod(path, 0o700)
        return path

    async def _load_and_capture(self, context, session: PageSession, mode: str) -> tuple[bytes, str]:
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        config = self.config
        page = session.page = await context.new_page()
        page.on("crash", lambda _page: session.fail(BrowserError("the page crashed in the browser", 502)))
        context.on("page", lambda popup: asyncio.ensure_future(close_popup(page, popup, session)))
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.dismiss()))
        # The time budget is enforced around this whole coroutine, so Playwright's own timeouts are off.
        await page.goto(session.url, wait_until="domcontentloaded", timeout=0)
        session.stage = "settle"
        settle_end = time.monotonic() + config.settle_s
        for state in ("load", "networkidle"):
            try:
                await page.wait_for_load_state(
                    state, timeout=max(1.0, (settle_end - time.monotonic()) * 1000)
                )
            except PlaywrightTimeout:
                break
        title = " ".join((await page.title()).split())[:300]
        if mode == "pdf":
            session.stage = "print"
            data = await self._print(context, page)
        else:
            session.stage = "take a screenshot of"
            if mode == "screenshot":
                data = await page.screenshot(type="png")
            else:
                full = await page.evaluate("document.documentElement.scrollHeight")
                width, height = config.viewport
                height = max(height, min(int(full), config.max_pageshot_height))
                clip = {"x": 0, "y": 0, "width": width, "height": height}
                data = await page.screenshot(type="png", full_page=True, clip=clip)
        return data, title

    async def _print(self, context, page) -> bytes:
        """The page printed to PDF through Chromium's DevTools protocol, returned as a stream that is read in
        chunks: a PDF over `max_pdf_bytes` is refused (413) at the chunk that crosses the limit, so no more
        of it than that enters this process (Playwright's `page.pdf` hands over the whole PDF at once)."""
        config = self.config
        width, height = paper_inches(config.paper)
        margin = length_inches(config.margin)
        cdp = await context.new_cdp_session(page)
        try:
            printed = await cdp.send(
                "Page.printToPDF",
                {
                    "paperWidth": width,
                    "paperHeight": height,
                    **{f"margin{side}": margin for side in ("Top", "Right", "Bottom", "Left")},
                    "printBackground": True,
                    "pageRanges": f"1-{config.max_print_pages}",
                    "transferMode": "ReturnAsStream",
                },
            )
            handle = printed["stream"]
            chunks: list[bytes] = []
            total = 0
            try:
                while True:
                    got = await cdp.send("IO.read", {"handle": handle, "size": _PRINT_CHUNK})
                    text = got.get("data", "")
                    chunk = base64.b64decode(text) if got.get("base64Encoded") else text.encode("latin-1")
                    total += len(chunk)
                    if total > config.max_pdf_bytes:
                        raise BrowserError(
                            f"the printed page is over the {config.max_pdf_bytes}-byte PDF limit", 413
                        )
                    chunks.append(chunk)
                    if got.get("eof"):
                        return b"".join(chunks)
            finally:
                try:
                    await cdp.send("IO.close", {"handle": handle})
                except Exception as exc:  # the context is closing: the stream goes with it
                    log.debug("closing the print stream: %s", first_line(exc))
        finally:
            try:
                await cdp.detach()
            except Exception as exc:
                log.debug("detaching from the page: %s", first_line(exc))
