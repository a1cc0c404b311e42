"""Thread-safe continuous-batching scheduler shared by the server and the batch CLI.

    scheduler = Scheduler(engine, max_queue=256)        # starts a background decode thread
    handle = scheduler.submit(GenerationRequest(...))   # raises QueueFull when the queue is full
    for token_ids in handle: ...                        # streamed chunks of committed token ids
    result = handle.result(timeout=60)                  # GenerationResult (or raises the engine's error)
    handle.cancel()                                     # frees the row at the next step
    scheduler.close()

One thread owns the `DecodeBatch` (and so the model and the KV cache); `submit` only validates and
enqueues. Each loop iteration admits waiting requests into free rows (prefill), runs one decode step for
all rows, and hands every row's new tokens to its handle. An async caller can use `handle.on_token` (called
on the decode thread: keep it short, e.g. `loop.call_soon_threadsafe`) instead of iterating.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator

from jocr.engine.generate import Engine
from jocr.engine.requests import GenerationRequest, GenerationResult


class QueueFull(Exception):
    """The scheduler's waiting queue is at its bound; retry later (HTTP 429/503)."""


class SchedulerClosed(Exception):
    """The scheduler was closed before the request finished."""


_DONE = object()


class Handle:
    """A submitted request: iterate for streamed token-id chunks, `result()` for the final result."""

    def __init__(self, ticket: int, request: GenerationRequest, scheduler: Scheduler):
        self.ticket = ticket
        self.request = request
        self.on_token: Callable[[list[int]], None] | None = None
        self.on_done: Callable[[GenerationResult | None, BaseException | None], None] | None = None
        self._scheduler = scheduler
        self._chunks: queue.SimpleQueue = queue.SimpleQueue()
        self._done = threading.Event()
        self._result: GenerationResult | None = None
        self._error: BaseException | None = None

    # Called on the decode thread ----------------------------------------------------------------------------
    def _push(self, tokens: list[int]) -> None:
        self._chunks.put(tokens)
        if self.on_token is not None:
            self.on_token(tokens)

    def _finish(self, result: GenerationResult | None, error: BaseException | None = None) -> None:
        self._result, self._error = result, error
        self._done.set()
        self._chunks.put(_DONE)
        if self.on_done is not None:
            self.on_done(result, error)

    # Caller side --------------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[list[int]]:
        while True:
            item = self._chunks.get()
            if item is _DONE:
                if self._error is not None:
                    raise self._error
                return
            yield item

    def result(self, timeout: float | None = None) -> GenerationResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"request {self.ticket} not finished within {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        """Stop generating; the result (finish reason `cancelled`) keeps the tokens made so far."""
        self._scheduler._cancel(self)


class Scheduler:
    def __init__(self, engine: Engine, max_queue: int = 256, start: bool = True):
        if max_queue < 1:
            raise ValueError("max_queue must be >= 1")
        self.engine = engine
        self.max_queue = max_queue
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._waiting: deque[Handle] = deque()
        self._active: dict[int, Handle] = {}
        self._cancel_requests: set[int] = set()
        self._tickets = itertools.count()
        self._closed = False
        self._batch = engine.new_batch()
        self._thread = threading.Thread(target=self._loop, name="jocr-decode", daemon=True)
        if start:
            self._thread.start()

    # Public API ---------------------------------------------------------------------------------------------
    def submit(
        self,
        request: GenerationRequest,
        on_token: Callable[[list[int]], None] | None = None,
        on_done: Callable[[GenerationResult | None, BaseException | None], None] | None = None,
    ) -> Handle:
        """Validate and enqueue; raises ValueError for a bad request, QueueFull when the queue is full.

        `on_token(ids)` and `on_done(result, error)` are set before the request can start, so no token and
        no ending is missed; both run on the decode thread (keep them short)."""
        self.engine.check(request)
        with self._lock:
            if self._closed:
                raise SchedulerClosed("scheduler is closed")
            if len(self._waiting) >= self.max_queue:
                raise QueueFull(f"queue full ({self.max_queue} requests waiting)")
            handle = Handle(next(self._tickets), request, self)
            handle.on_token, handle.on_done = on_token, on_done
            self._waiting.append(handle)
            self._wake.notify()
        return handle

    @property
    def queue_depth(self) -> int:
        with self._lock:
            return len(self._waiting)

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._active)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the loop; unfinished requests fail with SchedulerClosed."""
        with self._lock:
            self._closed = True
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # Internals ----------------------------------------------------------------------------------------------
    def _cancel(self, handle: Handle) -> None:
        with self._lock:
            if handle in self._waiting:
                self._waiting.remove(handle)
                cancelled = True
            else:
                self._cancel_requests.add(handle.ticket)
                cancelled = False
            self._wake.notify()
        if cancelled:
            from jocr.engine.stats import RequestStats

            handle._finish(GenerationResult([], "cancelled", RequestStats(), handle.request.request_id))

    def _loop(self) -> None:
        batch = self._batch
        while True:
            with self._lock:
                while not self._closed and not self._waiting and not batch.rows:
                    batch.release()
                    self._wake.wait()
                if self._closed:
                    break
                free = self.engine.config.max_batch_size - len(batch.rows)
                joining = [self._waiting.popleft() for _ in range(min(free, len(self._waiting)))]
                for h in joining:
                    self._active[h.ticket] = h
                cancels, self._cancel_requests = self._cancel_requests, set()
            try:
                for ticket in cancels:
                    batch.cancel(ticket)
                events = batch.admit([(h.ticket, h.request) for h in joining]) if joining else batch.step()
                for row, tokens in events:
                    if tokens:
                        self._active[row.index]._push(tokens)
                for row in batch.pop_finished():
                    with self._lock:
                        handle = self._active.pop(row.index)
                    # A row that failed on its own (batch.py: row isolation) fails its request alone.
                    if row.error is not None:
                        handle._finish(None, row.error)
                    else:
                        handle._finish(row.result())
            except Exception as exc:  # a failed shared step fails every request in flight, the loop goes on
                failed = list(self._active.values())
                with self._lock:
                    self._active.clear()
                batch.rows.clear()
                batch.finished.clear()
                batch.cache = None
                for h in failed:
                    h._finish(None, exc)
        self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            pending = list(self._waiting) + list(self._active.values())
            self._waiting.clear()
            self._active.clear()
        for h in pending:
            h._finish(None, SchedulerClosed("scheduler closed before the request finished"))
