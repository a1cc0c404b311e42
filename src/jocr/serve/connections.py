"""Connection timeouts for `jocr serve`: uvicorn's h11 protocol with a header timeout.

uvicorn closes idle keep-alive connections after `timeout_keep_alive`, but a connection that opens and then
sends its request head slowly (or one byte, then nothing) is held open forever ("slowloris"). This protocol
closes a connection that has not sent a complete request head within `header_timeout_s` of opening or of
its previous response. uvicorn's public settings do not cover this (`timeout_keep_alive` starts only after
a response; `h11_max_incomplete_event_size` bounds the head's bytes, not its time; `limit_concurrency`
counts connections, which a slowloris holds cheaply), so this subclasses the private H11Protocol and relies
on its constructor, `loop`, `transport`, `cycle` (the request being answered, None before the first, with
`response_complete`) and the four methods overridden here. uvicorn is therefore pinned to the tested range in
pyproject.toml, and tests/serve/test_serve_hostile_connections.py checks that API.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderTimeoutProtocol(H11Protocol):
    header_timeout_s: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting_for_head():
            self._arm()
        else:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._waiting_for_head():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if getattr(self, "_head_timer", None) is None:
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timeout)

    def _disarm(self) -> None:
        timer, self._head_timer = getattr(self, "_head_timer", None), None
        if timer is not None:
            timer.cancel()

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self.transport.close()


def header_timeout_protocol(header_timeout_s: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class to pass as uvicorn's `http=`, with this header timeout."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_s": header_timeout_s})
