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
  at most `max_print_pages` printed pages, a screenshot height cap and a V8 heap cap;
- one Chromium process, reused; at most `max_contexts` pages at once, each in a fresh browser context (no
  cookies, cache or storage shared between requests) that is closed afterwards.

Playwright's async API runs on a private event loop in a thread of its own, so a hostile page can only slow
that loop, never the caller's; `WebRenderer.submit` is thread-safe and returns a concurrent Future.
Chromium is Debian's `chromium` (or `BrowserConfig.executable`): Playwright never downloads a browser here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import os
import shutil
import socket
import threading
import time
from dataclasses import dataclass

from jocr.documents.fetch import FetchError, FetchLimits, fetch_url
from jocr.documents.pages import sniff_type

log = logging.getLogger("jocr.browser")

MODES = ("pdf", "screenshot", "pageshot")
HTML_TYPES = ("text/html", "application/xhtml+xml")
# Fetches in flight per page, as browsers limit connections per host (RFC 9112 leaves it to them; Chromium
# uses 6): bounds the memory a page's parallel requests can hold at once.
_FETCHES_PER_PAGE = 6


class BrowserError(Exception):
    """A page that could not be rendered; `str(exc)` is a one-line message fit for a user.

    `status` is an HTTP status a server may answer with: 413 over the byte budget, 429 all contexts busy,
    501 no Playwright or Chromium, 502 the page or browser failed, 503 Chromium did not start, 504 timeout.
    """

    def __init__(self, message: str, status: int = 502):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class BrowserConfig:
    """Settings of the web page renderer (docs/serving.md lists them with the other limits).

    executable: the Chromium binary (None: `chromium` on PATH, Debian's package). max_contexts: pages
    rendered at once; more are refused (429). timeout_s: wall time per page (load + settle + print), also
    capped by the caller's own deadline. settle_s: after the DOM is ready, how long to wait at most for the
    load event and then for the network to go idle (500 ms without requests); the page is captured as it
    stands when the wait ends. max_bytes / max_requests: budgets over all of a page's responses (the HTML
    included). max_print_pages: printed pages kept (the rest of a longer page is not printed).
    viewport: CSS pixels, for layout and `screenshot`. paper / margin: the printed page (Chromium's own
    print dialog defaults to about 1 cm margins; Playwright's to none). max_pageshot_height: `pageshot` is cut
    there.
    js_heap_mb: V8 old-space cap per renderer (a page over it crashes, answered 502). sandbox: Chromium's own
    sandbox (needs a non-root user and user namespaces; Chromium refuses to start as root with it).
    """

    executable: str | None = None
    max_contexts: int = 4
    timeout_s: float = 30.0
    settle_s: float = 3.0
    max_bytes: int = 50 * 1024 * 1024
    max_requests: int = 300
    max_print_pages: int = 50
    viewport: tuple[int, int] = (1280, 1024)
    paper: str = "A4"
    margin: str = "1cm"
    max_pageshot_height: int = 16_384
    js_heap_mb: int = 512
    sandbox: bool = False
    launch_timeout_s: float = 60.0


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


def _with_charset(media: str, data: bytes) -> str:
    """The fetcher keeps the media type only. Declaring UTF-8 when the bytes decode as UTF-8 is right for
    nearly every page today, and otherwise Chromium falls back to the page's `<meta charset>` or its
    default, as it would without a header."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return media
    return f"{media}; charset=utf-8"


class _Session:
    """One page's budgets, refused requests and first fatal error."""

    def __init__(self, html: bytes, media: str, url: str, config: BrowserConfig, deadline: float):
        self.html, self.media, self.url = html, media, url
        self.served_html = False
        self.deadline = deadline
        self.config = config
        self.bytes = len(html)
        self.requests = 1
        self.blocked: list[str] = []
        self.error: BrowserError | None = None
        self.failed = asyncio.Event()
        self.fetches = asyncio.Semaphore(_FETCHES_PER_PAGE)
        self.stage = "load"
        self.page = None  # the page being rendered; requests from any other (a popup) are refused

    def fail(self, error: BrowserError) -> None:
        if self.error is None:
            self.error = error
            self.failed.set()

    def block(self, url: str, reason: str) -> None:
        if len(self.blocked) < 100:
            self.blocked.append(f"{url[:200]}: {reason}")

    def over_bytes(self, url: str) -> BrowserError:
        return BrowserError(
            f"the page's resources are over the {self.config.max_bytes}-byte budget (at {url[:200]})", 413
        )


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
            max_workers=self.config.max_contexts * _FETCHES_PER_PAGE, thread_name_prefix="jocr-web-fetch"
        )
        self._dead_proxy: socket.socket | None = None

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
            ]
            try:
                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(
                    executable_path=exe,
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
                raise BrowserError(f"cannot start Chromium ({exe}): {_first_line(exc)}", 503) from None
            log.info("Chromium started: %s %s", exe, self._browser.version)
            return self._browser

    async def _render(self, html: bytes, media: str, url: str, mode: str, timeout: float) -> RenderedPage:
        if self._active >= self.config.max_contexts:
            raise BrowserError(
                f"browser busy: {self._active} pages are being rendered (limit {self.config.max_contexts}); "
                "retry shortly",
                429,
            )
        self._active += 1
        try:
            from playwright.async_api import Error as PlaywrightError

            deadline = time.monotonic() + timeout
            try:
                browser = await asyncio.wait_for(self._ensure_browser(), timeout)
            except TimeoutError:
                raise BrowserError(f"Chromium did not start within {timeout:.3g} s", 504) from None
            session = _Session(html, media, url, self.config, deadline)
            if session.bytes > self.config.max_bytes:
                raise session.over_bytes(url)
            width, height = self.config.viewport
            try:
                context = await browser.new_context(
                    viewport={"width": width, "height": height},
                    accept_downloads=False,
                    service_workers="block",
                    java_script_enabled=True,
                    ignore_https_errors=False,
                )
            except PlaywrightError as exc:  # Chromium died: the next page starts a new one
                raise BrowserError(f"the browser failed: {_first_line(exc)}") from None
            try:
                try:
                    await context.route("**/*", lambda route: self._on_route(session, route))
                    await context.route_web_socket("**/*", lambda ws: self._on_websocket(session, ws))
                except PlaywrightError as exc:
                    raise BrowserError(f"the browser failed: {_first_line(exc)}") from None
                work = asyncio.ensure_future(self._load_and_capture(context, session, mode))
                failed = asyncio.ensure_future(session.failed.wait())
                try:
                    done, _ = await asyncio.wait(
                        {work, failed},
                        timeout=max(0.0, deadline - time.monotonic()),
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
                    data, title = work.result()
                except PlaywrightError as exc:
                    message = f"the browser failed to {session.stage} the page: {_first_line(exc)}"
                    raise BrowserError(message) from None
            finally:
                try:
                    await asyncio.wait_for(context.close(), 10)
                except Exception as exc:
                    log.warning("closing a browser context failed: %s", _first_line(exc))
            return RenderedPage(data, mode, title, url, session.blocked, session.requests, session.bytes)
        finally:
            self._active -= 1

    async def _load_and_capture(self, context, session: _Session, mode: str) -> tuple[bytes, str]:
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        config = self.config
        page = session.page = await context.new_page()
        page.on("crash", lambda _page: session.fail(BrowserError("the page crashed in the browser", 502)))
        context.on("page", lambda popup: asyncio.ensure_future(_close_popup(page, popup, session)))
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
            data = await page.pdf(
                format=config.paper,
                margin=dict.fromkeys(("top", "right", "bottom", "left"), config.margin),
                print_background=True,
                page_ranges=f"1-{config.max_print_pages}",
            )
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

    async def _on_route(self, session: _Session, route) -> None:
        """Answer one request of the page through the safe fetcher, or refuse it."""
        try:
            request = route.request
            url = request.url
            if (
                not session.served_html
                and request.is_navigation_request()
                and request.frame.parent_frame is None
            ):
                # The page itself, fetched already by the caller (through the same fetcher).
                session.served_html = True
                media = _with_charset(session.media, session.html)
                await route.fulfill(status=200, body=session.html, content_type=media)
                return
            reason = None
            if _frame_page(request) is not session.page:
                reason = "popups are not allowed"
            elif request.method != "GET":
                reason = f"method {request.method} is not allowed"
            elif not url.lower().startswith(("http://", "https://")):
                reason = "only http and https are allowed"
            elif session.requests >= self.config.max_requests:
                reason = f"over the budget of {self.config.max_requests} requests"
            if reason is not None:
                session.block(url, reason)
                await route.abort("blockedbyclient")
                return
            session.requests += 1
            async with session.fetches:
                remaining_bytes = self.config.max_bytes - session.bytes
                remaining_s = session.deadline - time.monotonic()
                if remaining_bytes <= 0:
                    session.fail(session.over_bytes(url))
                if remaining_bytes <= 0 or remaining_s <= 0:
                    await route.abort("failed")
                    return
                limits = dataclasses.replace(
                    self.fetch_limits,
                    max_bytes=min(self.fetch_limits.max_bytes, remaining_bytes),
                    timeout_s=min(self.fetch_limits.timeout_s, remaining_s),
                )
                loop = asyncio.get_running_loop()
                try:
                    got = await loop.run_in_executor(self._fetch_pool, fetch_url, url, limits)
                except FetchError as exc:
                    if exc.status == 413:
                        session.fail(session.over_bytes(url))
                    session.block(url, str(exc))
                    await route.abort("blockedbyclient" if exc.status == 400 else "failed")
                    return
            session.bytes += len(got.data)
            if session.bytes > self.config.max_bytes:
                session.fail(session.over_bytes(url))
                await route.abort("failed")
                return
            media = got.content_type or "application/octet-stream"
            await route.fulfill(status=200, body=got.data, content_type=_with_charset(media, got.data))
        except Exception as exc:  # the page or its context closed while the fetch ran: nothing to answer
            log.debug("route %s: %s", route.request.url[:200], _first_line(exc))

    async def _on_websocket(self, session: _Session, ws) -> None:
        session.block(ws.url, "WebSockets are not allowed")
        try:
            await ws.close(code=1008, reason="not allowed")
        except Exception as exc:
            log.debug("websocket %s: %s", ws.url[:200], _first_line(exc))


def _frame_page(request):
    """The page a request comes from (None for a service worker's, which has no frame)."""
    try:
        return request.frame.page
    except Exception:
        return None


async def _close_popup(main, popup, session: _Session) -> None:
    if popup is main:
        return
    session.block(popup.url, "popups are not allowed")
    try:
        await popup.close()
    except Exception as exc:
        log.debug("popup: %s", _first_line(exc))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[0].split())[:300] if text else type(exc).__name__
