"""Prometheus text-format metrics without a client library: counters, gauges and one latency histogram.

Exposed at `/metrics` (text format 0.0.4). Names:
  jocr_requests_total{endpoint,status}       requests answered, by route and HTTP status
  jocr_pages_total                           pages (images) transcribed
  jocr_prompt_tokens_total / jocr_completion_tokens_total
  jocr_spec_steps_total / jocr_spec_committed_tokens_total   speculative steps and tokens they committed;
  jocr_tau                                   mean tokens committed per speculative step (bonus included)
  jocr_queue_depth / jocr_requests_in_flight  requests waiting for a batch slot / admitted and not finished
  jocr_rejected_total                         requests refused with 429 (queue full)
  jocr_request_latency_seconds               histogram of request latency, by endpoint
"""

from __future__ import annotations

import threading
from collections import defaultdict

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Thread-safe counters; `render()` returns the Prometheus exposition text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = defaultdict(int)
        self.pages = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.spec_steps = 0
        self.spec_committed = 0
        self.rejected = 0
        self.queue_depth = 0
        self.in_flight = 0
        self._latency_counts: dict[str, list[int]] = {}
        self._latency_sum: dict[str, float] = defaultdict(float)

    def observe_request(self, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(endpoint, status)] += 1
            counts = self._latency_counts.setdefault(endpoint, [0] * (len(LATENCY_BUCKETS) + 1))
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            counts[-1] += 1
            self._latency_sum[endpoint] += seconds

    def observe_generation(
        self, prompt_tokens: int, completion_tokens: int, steps: int = 0, committed: int = 0
    ):
        with self._lock:
            self.pages += 1
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.spec_steps += steps
            self.spec_committed += committed

    def add_rejected(self) -> None:
        with self._lock:
            self.rejected += 1

    def set_load(self, queue_depth: int, in_flight: int) -> None:
        with self._lock:
            self.queue_depth = queue_depth
            self.in_flight = in_flight

    @property
    def tau(self) -> float:
        return self.spec_committed / self.spec_steps if self.spec_steps else 0.0

    def render(self) -> str:
        with self._lock:
            lines = [
                "# HELP jocr_requests_total Requests answered, by endpoint and HTTP status.",
                "# TYPE jocr_requests_total counter",
            ]
            for (endpoint, status), n in sorted(self.requests.items()):
                lines.append(f'jocr_requests_total{{endpoint="{_escape(endpoint)}",status="{status}"}} {n}')
            for name, kind, help_text, value in (
                ("jocr_pages_total", "counter", "Pages (images) transcribed.", self.pages),
                (
                    "jocr_prompt_tokens_total",
                    "counter",
                    "Prompt tokens (image placeholders included).",
                    self.prompt_tokens,
                ),
                ("jocr_completion_tokens_total", "counter", "Generated tokens.", self.completion_tokens),
                ("jocr_spec_steps_total", "counter", "Speculative decoding steps.", self.spec_steps),
                (
                    "jocr_spec_committed_tokens_total",
                    "counter",
                    "Tokens committed by speculative steps.",
                    self.spec_committed,
                ),
                (
                    "jocr_tau",
                    "gauge",
                    "Mean tokens committed per speculative step (bonus included).",
                    self.tau,
                ),
                ("jocr_queue_depth", "gauge", "Requests waiting for a batch slot.", self.queue_depth),
                ("jocr_requests_in_flight", "gauge", "Requests admitted and not finished.", self.in_flight),
                (
                    "jocr_rejected_total",
                    "counter",
                    "Requests refused with 429 because the queue was full.",
                    self.rejected,
                ),
            ):
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {value:g}"]
            lines += [
                "# HELP jocr_request_latency_seconds Request latency by endpoint.",
                "# TYPE jocr_request_latency_seconds histogram",
            ]
            for endpoint, counts in sorted(self._latency_counts.items()):
                label = f'endpoint="{_escape(endpoint)}"'
                for bound, n in zip(LATENCY_BUCKETS, counts):
                    lines.append(f'jocr_request_latency_seconds_bucket{{{label},le="{bound:g}"}} {n}')
                lines.append(f'jocr_request_latency_seconds_bucket{{{label},le="+Inf"}} {counts[-1]}')
                lines.append(f"jocr_request_latency_seconds_sum{{{label}}} {self._latency_sum[endpoint]:.6f}")
                lines.append(f"jocr_request_latency_seconds_count{{{label}}} {counts[-1]}")
        return "\n".join(lines) + "\n"
