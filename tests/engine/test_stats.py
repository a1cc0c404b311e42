"""Decode statistics: a page read in several requests (an anchor's windows) counts as their sum."""

from __future__ import annotations

from jocr.engine.stats import RequestStats


def _stats(steps: int, accepted: list[int], output: int) -> RequestStats:
    stats = RequestStats(prompt_tokens=100, output_tokens=output, steps=steps, prefill_s=0.5, decode_s=1.0)
    for a in accepted:
        stats.record_spec(3, a, a + 1)
    return stats


def test_combined_sums_counts_and_keeps_tau_consistent():
    a, b = _stats(4, [3, 0], 10), _stats(2, [1, 1, 2], 5)
    total = RequestStats.combined([a, b])
    assert (total.prompt_tokens, total.output_tokens, total.steps) == (200, 15, 6)
    assert (total.spec_steps, total.spec_tokens) == (5, 12) and total.tau == 12 / 5
    assert total.drafted == [5, 5, 5] and total.accepted == [4, 2, 1]
    assert total.prefill_s == 1.0 and total.decode_s == 2.0
    assert RequestStats.combined([a]) is a and RequestStats.combined([]) is None
