"""Adaptive k: pick the number of draft tokens per regime (batch size) from measured costs and acceptance.

Speculation pays when the extra tokens it commits outweigh what the step costs more than a plain step:
with P_i the probability that draft position i is accepted (all earlier ones accepted too), a step with k
drafts commits tau(k) = 1 + sum_{i<=k} P_i tokens and takes t(B, k) seconds at batch size B, so the best k
maximises tau(k) / t(B, k) (k = 0 is plain decoding, tau = 1). On a GPU, small batches are memory bound and
the verifier's k + 1 positions cost nearly one; large batches are compute bound and every drafted position
costs real work, so k = 0 wins there (REFERENCE.md: on an L4 k = 3 is best eager, k = 1 with CUDA graphs).

t(B, k) is measured online per batch-size bucket (powers of two): every k is tried a few times in a bucket,
in increasing order, and higher k are not tried once a k measured slower than k - 1 (cost grows with k
while the gain shrinks); after that the best estimate is used, with an occasional re-measurement of a
neighbouring k so the estimates follow the load. P_i is shared by all buckets (it depends on the text and
the head, not on the batch).
"""

from __future__ import annotations

from dataclasses import dataclass, field


def bucket_of(batch_size: int) -> int:
    """The power of two at or above batch_size: batch 3 and 4 cost about the same."""
    b = 1
    while b < batch_size:
        b *= 2
    return b


@dataclass
class _Timing:
    """EMA of step times; the first sample of each (bucket, k) is dropped (first-call allocations, a long
    catch-up of the draft head after plain steps)."""

    ema: float = 0.0
    count: int = 0

    def add(self, seconds: float, alpha: float) -> None:
        if self.count == 1:
            self.ema = seconds
        elif self.count > 1:
            self.ema = (1 - alpha) * self.ema + alpha * seconds
        self.count += 1


@dataclass
class KController:
    max_k: int = 3
    fixed_k: int | None = None  # a fixed k (no adaptation) when set
    explore_steps: int = 4  # measurements of each k (the first is dropped) before trusting its estimate
    refresh_every: int = 64  # re-measure a neighbouring k after this many steps in a bucket
    alpha: float = 0.2  # EMA weight of a new timing
    prior_acceptance: float = 0.6  # P_i prior per position (geometric) until measured
    _times: dict[int, dict[int, _Timing]] = field(default_factory=dict)
    _pruned: dict[int, int] = field(default_factory=dict)  # bucket -> lowest k known not to pay
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
        """P(draft position i, 0-based, is accepted), smoothed towards the prior."""
        prior = self.prior_acceptance ** (i + 1)
        if i >= len(self._drafted):
            return prior
        return (self._accepted[i] + 4 * prior) / (self._drafted[i] + 4)

    def tau(self, k: int) -> float:
        return 1.0 + sum(self.acceptance(i) for i in range(k))

    # Timing ----------------------------------------------------------------------------------------------
    def record_step(self, batch_size: int, k: int, seconds: float) -> None:
        b = bucket_of(batch_size)
        self._times.setdefault(b, {}).setdefault(k, _Timing()).add(seconds, self.alpha)
        self._steps[b] = self._steps.get(b, 0) + 1

    def step_time(self, batch_size: int, k: int) -> float | None:
        t = self._times.get(bucket_of(batch_size), {}).get(k)
        return t.ema if t and t.count > 1 else None

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
        limit = self._pruned.get(b, self.max_k + 1)
        for k in range(0, min(limit, self.max_k + 1)):
            t = times.get(k)
            if t is None or t.count < self.explore_steps:
                return k
            if k > 0 and self.throughput(batch_size, k) < self.throughput(batch_size, k - 1):
                self._pruned[b] = limit = k + 1  # k itself stays a candidate; k + 1.. are not tried
                break
        candidates = [k for k in range(0, min(limit, self.max_k + 1)) if k in times]
        best = max(candidates, key=lambda k: self.throughput(batch_size, k))
        steps = self._steps.get(b, 0)
        if self.refresh_every and steps % self.refresh_every == self.refresh_every - 1:
            # Occasionally re-measure a neighbour so the choice can move when load or acceptance drift.
            neighbour = best + 1 if best + 1 < min(limit, self.max_k + 1) else best - 1
            if neighbour >= 0:
                return neighbour
        return best

    def table(self) -> dict[int, dict[int, float]]:
        """Measured step times (s) per bucket and k, for reports."""
        return {b: {k: t.ema for k, t in sorted(ks.items())} for b, ks in sorted(self._times.items())}
