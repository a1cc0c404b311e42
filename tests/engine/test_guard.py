"""Repetition guard: the incremental ban equals the published rule; the loop detector fires on loops only."""

from __future__ import annotations

import random

import pytest

from jocr.engine import Engine, EngineConfig, GenerationRequest, GuardConfig, naive_generate
from jocr.engine.guard import GuardState, banned_reference


@pytest.mark.parametrize("n,window", [(2, 5), (3, 10), (4, 24), (30, 90)])
def test_ban_matches_reference_rule(n, window):
    rng = random.Random(n * 100 + window)
    cfg = GuardConfig(ngram_size=n, window=window, whitelist_ids=(4,), loop_detection=False)
    for trial in range(20):
        # Small alphabets so n-grams repeat often (long n needs a near-periodic sequence to hit).
        alphabet = 3 if n < 30 else 2
        base = [rng.randrange(alphabet) + 3 for _ in range(rng.randrange(5, 40))]
        if n == 30:
            seq = (base * 10)[: rng.randrange(n, 160)]
        else:
            seq = [rng.randrange(alphabet) + 3 for _ in range(80)]
        state = GuardState(cfg)
        for i, t in enumerate(seq):
            assert state.banned() == banned_reference(seq[:i], n, window, {4}), (trial, i)
            # With drafts appended (what verification asks): same rule on the extended history.
            for extra_len in (1, 2, 3):
                extra = seq[i : i + extra_len]
                want = banned_reference(seq[:i] + extra, n, window, {4})
                assert state.banned(extra) == want, (trial, i, extra_len)
            state.push(t)


def test_loop_detector_fires_on_periodic_tail_only():
    cfg = GuardConfig(ngram_size=0, loop_max_period=64, loop_min_span=120, loop_min_repeats=6)
    state = GuardState(cfg)
    rng = random.Random(0)
    for _ in range(2000):  # random text: never
        assert not state.push(rng.randrange(200))
    unit = [rng.randrange(200) for _ in range(23)]
    fired_at = None
    for i in range(400):
        if state.push(unit[i % len(unit)]):
            fired_at = i + 1
            break
    # Fires once the periodic tail reaches max(min_span, min_repeats * period) = 138 tokens (+ one period).
    assert fired_at is not None and 115 <= fired_at <= 140


def test_whitelisted_ids_never_banned():
    cfg = GuardConfig(ngram_size=2, window=50, whitelist_ids=(7,), loop_detection=False)
    state = GuardState(cfg)
    for t in [5, 7, 5, 7, 5]:
        state.push(t)
    assert 7 not in state.banned()
    state.push(9)
    state.push(5)
    assert state.banned() == {9} - {7} | set()  # 5 -> 7 (whitelisted) and 5 -> 9: only 9 is banned


def test_forced_loop_ends_with_repetition_long_before_max_tokens(loop_model):
    """A model that cycles through 7 tokens, default guard (n-gram ban 30 / window 90 + loop detector)."""
    req = GenerationRequest(prompt_ids=[20, 21, 22], max_tokens=4000)
    for drafter in ("mtp", "ngram", "none"):
        res = Engine(loop_model, EngineConfig(drafter=drafter)).generate([req])[0]
        assert res.finish_reason == "repetition", drafter
        assert len(res.token_ids) < 400, (drafter, len(res.token_ids))
    req = GenerationRequest(prompt_ids=[20, 21, 22], max_tokens=len(res.token_ids) + 5)
    ref = naive_generate(loop_model, req)
    assert ref.token_ids == res.token_ids and ref.finish_reason == "repetition"


def test_ban_breaks_short_loops(loop_model):
    """With the ban alone (detector off) the 7-token cycle cannot repeat a 30-gram inside the window."""
    guard = GuardConfig(loop_detection=False)
    res = Engine(loop_model, EngineConfig(drafter="mtp", guard=guard)).generate(
        [GenerationRequest(prompt_ids=[20, 21, 22], max_tokens=300)]
    )[0]
    toks = res.token_ids
    for i in range(len(toks) - 30):
        gram = tuple(toks[i : i + 30])
        window_end = i + 90
        later = [tuple(toks[j : j + 30]) for j in range(i + 1, min(window_end, len(toks)) - 29)]
        assert gram not in later
    assert len(toks) == 300
