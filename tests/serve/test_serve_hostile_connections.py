"""Connections: a slow request head is cut off (header timeout), idle keep-alive connections close, and the
bytes of request bodies buffered at once are budgeted across the server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import uvicorn

from jocr.serve.app import BodyLimitMiddleware
from jocr.serve.connections import header_timeout_protocol


async def _hello(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def _serve(app, **kwargs):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", **kwargs)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    return server, sock.getsockname()[1]


def _closed_after(sock: socket.socket, limit: float) -> float | None:
    """Seconds until the server closes `sock` (reads EOF), or None if it is still open after `limit`."""
    sock.settimeout(limit)
    start = time.monotonic()
    try:
        while sock.recv(1024):
            pass
    except TimeoutError:
        return None
    return time.monotonic() - start


def test_slow_request_head_is_cut_off_and_idle_connections_close():
    server, port = _serve(_hello, http=header_timeout_protocol(0.5), timeout_keep_alive=1)
    try:
        with socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # and then nothing (slowloris)
            took = _closed_after(slow, 5)
        assert took is not None and took < 2.5, took
        with socket.create_connection(("127.0.0.1", port)) as silent:  # opens and never sends
            assert _closed_after(silent, 5) is not None
        with socket.create_connection(("127.0.0.1", port)) as good:
            good.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            good.settimeout(5)
            assert good.recv(1024).startswith(b"HTTP/1.1 200")
            took = _closed_after(good, 5)  # idle after its answer: closed by the keep-alive timeout
        assert took is not None and took < 2.5, took
    finally:
        server.should_exit = True


def test_server_wide_body_budget():
    """Two bodies of 600 bytes do not fit a 1,000-byte server budget at once: the second gets 429 while the
    first is in flight, and fits once it has finished."""
    release = asyncio.Event()

    async def slow_app(scope, receive, send):
        while (await receive()).get("more_body"):
            pass
        await release.wait()
        await _hello(scope, receive, send)

    middleware = BodyLimitMiddleware(slow_app, max_bytes=800, max_server_bytes=1000)

    async def call(n: int) -> int:
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/",
            "headers": [(b"content-length", str(n).encode())],
        }
        sent = iter([{"type": "http.request", "body": b"x" * n, "more_body": False}])
        status = []

        async def receive():
            return next(sent, {"type": "http.disconnect"})

        async def send(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])

        await middleware(scope, receive, send)
        return status[0]

    async def scenario():
        first = asyncio.create_task(call(600))
        await asyncio.sleep(0.05)
        assert middleware.buffered == 600
        second = await call(600)
        release.set()
        assert await first == 200
        assert middleware.buffered == 0
        return second, await call(600)

    second, third = asyncio.run(scenario())
    assert (second, third) == (429, 200)
