"""Adaptive k picks speculation where it pays and plain steps where it does not (synthetic step costs)."""

from __future__ import annotations

import random

from jocr.engine.adaptive import KController


def _drive(
    ctrl: KController, batch: int, cost, accept: float, steps: int = 400, noise: float = 0.15
) -> list[int]:
    """Run the controller against a cost model cost(k) (seconds) with outliers; returns the chosen ks."""
    rng = random.Random(batch)
    chosen = []
    for _ in range(steps):
        k = ctrl.choose(batch)
        chosen.append(k)
        # Outliers up to 3x, as on a busy shared machine.
        t = cost(k) * (1 + (rng.random() * 2 if rng.random() < noise else 0))
        ctrl.record_step(batch, k, t)
        accepted = 0
        while accepted < k and rng.random() < accept:
            accepted += 1
        if k:
            ctrl.record_acceptance(k, accepted)
    return chosen


def test_small_batch_speculates_large_batch_does_not():
    ctrl = KController(max_k=3)
    # Batch 1: memory/overhead bound, a k-draft step costs 1 + 0.15 k plain steps -> k = 3 best at 80%.
    small = _drive(ctrl, 1, lambda k: 1.0 + 0.15 * k, accept=0.8)
    # Batch 32: compute bound, every drafted position costs almost a full step -> plain decoding best.
    large = _drive(ctrl, 32, lambda k: 1.0 + 0.9 * k, accept=0.8)
    tail_small, tail_large = small[-100:], large[-100:]
    assert tail_small.count(3) >= 90
    assert tail_large.count(0) >= 90
    # Exploring and re-measuring the losing k costs a few percent of the steps at most.
    assert sum(k != 0 for k in large) <= 0.1 * len(large)


def test_fixed_k_is_kept():
    ctrl = KController(max_k=3, fixed_k=2)
    assert {ctrl.choose(b) for b in (1, 8, 64)} == {2}
