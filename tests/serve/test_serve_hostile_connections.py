"""Connections: a slow request head is cut off (header timeout), idle keep-alive connections close, and the
bytes of request bodies buffered at once are budgeted across the server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import uvicorn

from jocr.serve.connections import header_timeout_protocol
from jocr.serve.middleware import BodyLimitMiddleware


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


def test_the_private_uvicorn_api_the_header_timeout_relies_on():
    """uvicorn has no public header timeout (timeout_keep_alive starts only after a response, and
    h11_max_incomplete_event_size bounds bytes, not time), so HeaderTimeoutProtocol subclasses H11Protocol
    (uvicorn is pinned in pyproject.toml). What it relies on: the constructor, `loop`, `transport`, `cycle`
    (None before the first request, then a cycle with `response_complete`) and the four protocol methods
    it overrides, each still calling through."""
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.server import ServerState

    for name in ("connection_made", "data_received", "on_response_complete", "connection_lost"):
        assert callable(getattr(H11Protocol, name, None)), name

    config = uvicorn.Config(_hello, lifespan="off", log_level="warning")
    config.load()
    loop = asyncio.new_event_loop()
    try:
        protocol = header_timeout_protocol(30)(
            config=config, server_state=ServerState(), app_state={}, _loop=loop
        )
        assert protocol.loop is loop and protocol.cycle is None

        class Transport(asyncio.Transport):
            closed = False

            def get_extra_info(self, name, default=None):
                return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5000)}.get(name, default)

            def is_closing(self):
                return self.closed

            def close(self):
                self.closed = True

            def write(self, data):
                pass

            def pause_reading(self):
                pass

            def resume_reading(self):
                pass

        transport = Transport()
        protocol.connection_made(transport)
        assert protocol.transport is transport and protocol._waiting_for_head()
        assert protocol._head_timer is not None  # armed at connection
        protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert protocol.cycle is not None and protocol.cycle.response_complete is False
        assert not protocol._waiting_for_head() and protocol._head_timer is None
        loop.run_until_complete(asyncio.wait(asyncio.all_tasks(loop), timeout=10))  # the app answers
        assert protocol.cycle.response_complete and protocol._head_timer is not None  # armed again
        protocol.connection_lost(None)
        assert protocol._head_timer is None
    finally:
        loop.close()
