"""The server's ASGI middleware: request body limits (413 per request, 429 for the bytes all requests hold)
and the per-endpoint request metrics; `error_response`, the one JSON form of an `ApiError`.
"""

from __future__ import annotations

import time

from starlette.responses import JSONResponse

from jocr.serve.admission import Overloaded
from jocr.serve.openai import ApiError


def error_response(exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


class BodyLimitMiddleware:
    """Refuses request bodies over `max_bytes` with 413: at once from Content-Length, else while streaming;
    and bodies that would take the bytes buffered by all requests past `max_server_bytes` with 429 (a
    request holds its declared or received bytes until it ends)."""

    def __init__(self, app, max_bytes: int, max_server_bytes: int | None = None, retry_after_s: int = 1):
        self.app = app
        self.max_bytes = max_bytes
        self.max_server_bytes = max_server_bytes
        self.retry_after_s = retry_after_s
        self.buffered = 0  # the event loop's own counter: no lock needed

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = ApiError(
            413, f"request body too large (limit {self.max_bytes} bytes)", code="body_too_large"
        )
        busy = Overloaded(
            f"request bodies in flight are at the limit of {self.max_server_bytes} bytes", self.retry_after_s
        )
        declared = 0
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                if not value.isdigit() or len(value) > 19:  # bytes.isdigit is ASCII-only
                    return await error_response(ApiError(400, "invalid Content-Length"))(scope, receive, send)
                declared = int(value)
                if declared > self.max_bytes:
                    return await error_response(too_large)(scope, receive, send)
        if self.max_server_bytes is not None and self.buffered + declared > self.max_server_bytes:
            return await error_response(busy)(scope, receive, send)
        self.buffered += declared
        held = declared
        seen = 0

        async def limited_receive():
            nonlocal seen, held
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise too_large
                if seen > held:  # no (or a wrong) Content-Length: count what arrives
                    self.buffered += seen - held
                    held = seen
                    if self.max_server_bytes is not None and self.buffered > self.max_server_bytes:
                        raise busy
            return message

        try:
            return await self.app(scope, limited_receive, send)
        finally:
            self.buffered -= held


class MetricsMiddleware:
    """Counts every HTTP request by endpoint and status and times it to the end of its body."""

    def __init__(self, app, metrics):
        self.app = app
        self.metrics = metrics

    @staticmethod
    def endpoint(method: str, path: str) -> str:
        if path in ("/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/pages"):
            return path
        if path.startswith("/static/"):
            return "/static"
        if path == "/" and method == "GET":
            return "demo"
        return "reader"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        status = 500
        label = self.endpoint(scope["method"], scope["path"])
        recorded = False

        async def timed_send(message):
            nonlocal status, recorded
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body") and not recorded:
                recorded = True
                self.metrics.observe_request(label, status, time.perf_counter() - start)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            if not recorded:
                self.metrics.observe_request(label, status, time.perf_counter() - start)
