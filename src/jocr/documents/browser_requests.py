"""One web page's requests while Chromium renders it: every request the page makes is answered through the
safe fetcher (`jocr.documents.fetch.fetch_url`) or refused, under the page's budgets (`PageSession`: bytes,
requests, the deadline); WebSockets and popups are refused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

from jocr.documents.browser_config import BrowserConfig, BrowserError, first_line
from jocr.documents.fetch import FetchError, FetchLimits, fetch_url

log = logging.getLogger("jocr.browser")

# Fetches in flight per page, as browsers limit connections per host (RFC 9112 leaves it to them; Chromium
# uses 6): bounds the memory a page's parallel requests can hold at once.
FETCHES_PER_PAGE = 6


def _with_charset(media: str, data: bytes) -> str:
    """The fetcher keeps the media type only. Declaring UTF-8 when the bytes decode as UTF-8 is right for
    nearly every page today, and otherwise Chromium falls back to the page's `<meta charset>` or its
    default, as it would without a header."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return media
    return f"{media}; charset=utf-8"


class PageSession:
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
        self.fetches = asyncio.Semaphore(FETCHES_PER_PAGE)
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


async def route_request(session: PageSession, route, fetch_limits: FetchLimits, fetch_pool) -> None:
    """Answer one request of the page through the safe fetcher (`fetch_limits`, its fetches run on
    `fetch_pool`), or refuse it; the session's budgets bound what it may take."""
    try:
        request = route.request
        url = request.url
        if not session.served_html and request.is_navigation_request() and request.frame.parent_frame is None:
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
        elif session.requests >= session.config.max_requests:
            reason = f"over the budget of {session.config.max_requests} requests"
        if reason is not None:
            session.block(url, reason)
            await route.abort("blockedbyclient")
            return
        session.requests += 1
        async with session.fetches:
            remaining_bytes = session.config.max_bytes - session.bytes
            remaining_s = session.deadline - time.monotonic()
            if remaining_bytes <= 0:
                session.fail(session.over_bytes(url))
            if remaining_bytes <= 0 or remaining_s <= 0:
                await route.abort("failed")
                return
            limits = dataclasses.replace(
                fetch_limits,
                max_bytes=min(fetch_limits.max_bytes, remaining_bytes),
                timeout_s=min(fetch_limits.timeout_s, remaining_s),
            )
            loop = asyncio.get_running_loop()
            try:
                got = await loop.run_in_executor(fetch_pool, fetch_url, url, limits)
            except FetchError as exc:
                if exc.status == 413:
                    session.fail(session.over_bytes(url))
                session.block(url, str(exc))
                await route.abort("blockedbyclient" if exc.status == 400 else "failed")
                return
        session.bytes += len(got.data)
        if session.bytes > session.config.max_bytes:
            session.fail(session.over_bytes(url))
            await route.abort("failed")
            return
        media = got.content_type or "application/octet-stream"
        await route.fulfill(status=200, body=got.data, content_type=_with_charset(media, got.data))
    except Exception as exc:  # the page or its context closed while the fetch ran: nothing to answer
        log.debug("route %s: %s", route.request.url[:200], first_line(exc))


async def refuse_websocket(session: PageSession, ws) -> None:
    """WebSockets are closed: the safe fetcher cannot answer them."""
    session.block(ws.url, "WebSockets are not allowed")
    try:
        await ws.close(code=1008, reason="not allowed")
    except Exception as exc:
        log.debug("websocket %s: %s", ws.url[:200], first_line(exc))


def _frame_page(request):
    """The page a request comes from (None for a service worker's, which has no frame)."""
    try:
        return request.frame.page
    except Exception:
        return None


async def close_popup(main, popup, session: PageSession) -> None:
    if popup is main:
        return
    session.block(popup.url, "popups are not allowed")
    try:
        await popup.close()
    except Exception as exc:
        log.debug("popup: %s", first_line(exc))
