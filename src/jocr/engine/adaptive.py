"""Adaptive k: pick the number of draft tokens per regime (batch size) from measured costs and acceptance.

Speculation pays when the extra tokens it commits outweigh what the step costs more than a plain step:
with P_i the probability that draft position i is accepted (all earlier ones accepted too), a step with k
drafts commits tau(k) = 1 + sum_{i<=k} P_i tokens and takes t(B, k) seconds at batch size B, so the best k
maximises tau(k) / t(B, k) (k = 0 is plain decoding, tau = 1). On a GPU, small batches are memory bound and
the verifier's k + 1 positions cost nearly one; large batches are compute bound and every drafted position
costs real work, so k = 0 wins there (the jina-ocr-v1 report: on an L4 k = 3 is best eager, k = 1 with
CUDA graphs).

t(B, k) is measured online per batch-size bucket (powers of two) as the median of recent step times: every
k is tried a few times in a bucket, in increasing order, stopping early once k - 1 measured clearly slower
than k - 2 (cost grows with k while the gain shrinks); after that the best estimate is used, with one step
of another measured k now and then so the estimates follow the load. P_i is shared by all buckets (it
depends on the text and the head, not on the batch).
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field


def bucket_of(batch_size: int) -> int:
    """The power of two at or above batch_size: batch 3 and 4 cost about the same."""
    b = 1
    while b < batch_size:
        b *= 2
    return b


@dataclass
class _Timing:
    """Recent step times; the estimate is their median (robust to the outliers a shared machine produces).
    The first sample of each (bucket, k) is dropped: first-call allocations, a draft-head catch-up."""

    samples: deque = field(default_factory=lambda: deque(maxlen=25))
    count: int = 0

    def add(self, seconds: float) -> None:
        if self.count:
            self.samples.append(seconds)
        self.count += 1

    @property
    def estimate(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


@dataclass
class KController:
    max_k: int = 3
    fixed_k: int | None = None  # a fixed k (no adaptation) when set
    explore_steps: int = 6  # measurements of each k (the first is dropped) before trusting its estimate
    refresh_every: int = 32  # one step of another k after this many steps in a bucket
    prior_acceptance: float = 0.6  # P_i prior per position (geometric) until measured
    _times: dict[int, dict[int, _Timing]] = field(default_factory=dict)
    _steps: dict[int, int] = field(default_factory=dict)
    _drafted: list[int] = field(default_factory=list)  # per position: steps that drafted it
    _accepted: list[int] = field(default_factory=list)  # per position: steps that accepted it

    # Acceptance ------------------------------------------------------------------------------------------
    def record_acceptance(self, k: int, accepted: int) -> None:
        while len(self._drafted) < k:
            self._drafted.append(0)
            self._accepted.append(0)
        for i in range(k):
            self._drafted[i] += 1
            if i < accepted:
                self._accepted[i] += 1

    def acceptance(self, i: int) -> float:
        """P(draft position i, 0-based, is accepted), smoothed towards a prior. The prior of a deeper
        position continues the measured decay geometrically (positions only measured when a k that deep
        is used would otherwise look worse than they are, and never get chosen)."""
        if i == 0:
            prior = self.prior_acceptance
        elif i == 1:
            prior = self.acceptance(0) ** 2
        else:
            a1, a2 = self.acceptance(i - 1), self.acceptance(i - 2)
            prior = a1 * min(1.0, a1 / a2) if a2 > 0 else 0.0
        if i >= len(self._drafted):
            return prior
        return (self._accepted[i] + 4 * prior) / (self._drafted[i] + 4)

    def tau(self, k: int) -> float:
        return 1.0 + sum(self.acceptance(i) for i in range(k))

    # Timing ----------------------------------------------------------------------------------------------
    def record_step(self, batch_size: int, k: int, seconds: float) -> None:
        b = bucket_of(batch_size)
        self._times.setdefault(b, {}).setdefault(k, _Timing()).add(seconds)
        self._steps[b] = self._steps.get(b, 0) + 1

    def step_time(self, batch_size: int, k: int) -> float | None:
        t = self._times.get(bucket_of(batch_size), {}).get(k)
        return t.estimate if t else None

    def throughput(self, batch_size: int, k: int) -> float | None:
        t = self.step_time(batch_size, k)
        return self.tau(k) / t if t else None

    def choose(self, batch_size: int) -> int:
        if self.fixed_k is not None:
            return self.fixed_k
        if self.max_k == 0:
            return 0
        b = bucket_of(batch_size)
        times = self._times.setdefault(b, {})
        # Exploration, k = 0, 1, ... in order; stop early once k - 1 measured clearly slower than k - 2
        # (a larger k then only costs more).
        for k in range(self.max_k + 1):
            t = times.get(k)
            if t is None or t.count < self.explore_steps:
                if k >= 2:
                    prev, prev2 = self.throughput(batch_size, k - 1), self.throughput(batch_size, k - 2)
                    if prev is not None and prev2 is not None and prev < 0.9 * prev2:
                        break
                return k
        measured = [k for k in range(self.max_k + 1) if self.throughput(batch_size, k) is not None]
        best = max(measured, key=lambda k: self.throughput(batch_size, k))
        steps = self._steps.get(b, 0)
        if self.refresh_every and len(measured) > 1 and steps % self.refresh_every == self.refresh_every - 1:
            # Now and then one step of another k, so estimates follow load drift and outliers get outvoted:
            # close contenders (>= 75% of the best estimate) every time, the rest every 8th time.
            rounds = steps // self.refresh_every
            top = self.throughput(batch_size, best)
            others = [k for k in measured if k != best]
            close = [k for k in others if self.throughput(batch_size, k) >= 0.75 * top]
            pool = others if rounds % 8 == 7 or not close else close
            if pool:
                return pool[rounds % len(pool)]
        return best

    def table(self) -> dict[int, dict[int, float]]:
        """Measured step times (s) per bucket and k, for reports."""
        return {b: {k: t.estimate for k, t in sorted(ks.items())} for b, ks in sorted(self._times.items())}
