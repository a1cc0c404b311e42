"""Admission control: how many requests the server holds at once and how many decoded pixels they may take.

Every route admits its request through one `Ticket` (`OCRService.admit`): its slots among the requests in
flight (`max_batch + max_queue`, 429 past it) and its decoded-pixel reservation (413 past the per-request
limit, 429 past the server's), both freed once when the request ends (docs/serving.md, "Batching and
overload").
"""

from __future__ import annotations

import threading

from jocr.serve.config import ServeConfig
from jocr.serve.metrics import Metrics
from jocr.serve.openai import ApiError


class Overloaded(ApiError):
    """One of the server's bounds is reached (requests in flight, decoded pixels, buffered request bodies):
    answered 429 with Retry-After; `reason` says which bound."""

    def __init__(self, reason: str, retry_after_s: int):
        super().__init__(
            429,
            f"server busy: {reason}; retry after {retry_after_s} s",
            code="queue_full",
            headers={"Retry-After": str(retry_after_s)},
        )


class Admission:
    """Counts requests in flight; refuses (429) past `max_batch + max_queue` instead of queueing forever.
    Also admits by cost: decoded pixels per request (`max_request_pixels`, 413 past it) and for the server
    (`max_server_pixels`, 429 past it), reserved from the image header or page box before decoding."""

    def __init__(self, config: ServeConfig, metrics: Metrics):
        self.capacity = config.max_batch + config.max_queue
        self.max_batch = config.max_batch
        self.retry_after_s = config.retry_after_s
        self.max_request_pixels = config.max_request_pixels
        self.max_server_pixels = config.max_server_pixels
        self.metrics = metrics
        self._lock = threading.Lock()
        self.in_flight = 0
        self.pixels = 0  # decoded pixels reserved by all requests

    def reserve_pixels(self, n: int) -> None:
        with self._lock:
            if self.pixels + n > self.max_server_pixels:
                self.metrics.add_rejected()
                raise Overloaded(
                    f"{self.pixels:,} decoded pixels in flight (budget {self.max_server_pixels:,})",
                    self.retry_after_s,
                )
            self.pixels += n

    def release_pixels(self, n: int) -> None:
        with self._lock:
            self.pixels = max(0, self.pixels - n)

    def acquire(self, n: int = 1) -> None:
        with self._lock:
            if self.in_flight + n > self.capacity:
                self.metrics.add_rejected()
                raise Overloaded(
                    f"{self.in_flight} requests in flight (capacity {self.capacity})", self.retry_after_s
                )
            self.in_flight += n
            self._publish()

    def release(self, n: int = 1) -> None:
        with self._lock:
            self.in_flight = max(0, self.in_flight - n)
            self._publish()

    def _publish(self) -> None:
        self.metrics.set_load(max(0, self.in_flight - self.max_batch), self.in_flight)


class PixelHold:
    """One request's decoded-pixel reservation (see Admission); `release()` when the request ends."""

    def __init__(self, admission: Admission):
        self.admission = admission
        self.held = 0
        self.closed = False

    def add(self, n: int) -> None:
        if self.closed:  # the request has ended: nothing more may be reserved for it
            raise ApiError(499, "request already finished")
        limit = self.admission.max_request_pixels
        if self.held + n > limit:
            raise ApiError(
                413,
                f"request decodes {self.held + n:,} pixels, over the per-request limit of {limit:,} "
                "(fewer or smaller images; one page at a time with X-Page)",
                code="too_many_pixels",
            )
        self.admission.reserve_pixels(n)
        self.held += n

    def release(self) -> None:
        self.closed = True
        held, self.held = self.held, 0
        self.admission.release_pixels(held)


class Ticket:
    """One request's admission, the one path every route takes (`OCRService.admit`): its slots among the
    requests in flight (one per engine request it will run: a Reader page, a chat page's anchor window) and
    its decoded-pixel reservation (`pixels`: every page it renders, every screenshot it takes, reserved
    before the work). `release()` (or leaving the `with` block) frees both, once."""

    def __init__(self, admission: Admission, slots: int = 1):
        admission.acquire(slots)
        self.admission = admission
        self.slots = slots
        self.pixels = PixelHold(admission)
        self.released = False

    def add_slots(self, n: int) -> None:
        """Count `n` more engine requests of this request (429 past the capacity)."""
        if n > 0:
            self.admission.acquire(n)
            self.slots += n

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        self.pixels.release()
        self.admission.release(self.slots)

    def __enter__(self) -> Ticket:
        return self

    def __exit__(self, *exc) -> None:
        self.release()
