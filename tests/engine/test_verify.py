"""Draft verification (engine/verify.py): accepted drafts plus one bonus token, per row."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from jocr.engine.verify import accepted_length, verify


def _row(spec_ok=True, generator=None):
    return SimpleNamespace(spec_ok=spec_ok, generator=generator, ban_active=False)


def _logits(choices: list[list[int]], vocab: int = 8) -> torch.Tensor:
    """(B, k + 1, V) whose argmax at each position is the given id."""
    out = torch.zeros(len(choices), len(choices[0]), vocab)
    for i, row in enumerate(choices):
        for j, t in enumerate(row):
            out[i, j, t] = 1.0
    return out


def test_accepted_length_is_the_matching_prefix():
    assert accepted_length([3, 4, 5], [3, 4, 5, 6]) == 3
    assert accepted_length([3, 9, 5], [3, 4, 5, 6]) == 1
    assert accepted_length([9, 4, 5], [3, 4, 5, 6]) == 0
    assert accepted_length([], [3]) == 0


def test_verify_commits_accepted_drafts_and_the_bonus_token():
    rows = [_row(), _row(), _row(spec_ok=False)]
    logits = _logits([[1, 2, 3], [1, 2, 3], [5, 6, 7]])
    drafts = [[1, 2], [1, 7], [5, 6]]
    choices, accepted = verify(rows, logits, drafts, k=2)
    assert choices == [[1, 2, 3], [1, 2], [5]]  # all accepted + bonus; one accepted + bonus; no speculation
    assert accepted == [2, 1, None]


def test_plain_step_commits_the_argmax():
    choices, accepted = verify([_row()], _logits([[4]]), [[]], k=0)
    assert choices == [[4]] and accepted == [None]


def test_a_sampled_row_whose_choice_raises_is_failed_alone():
    def refuse(logits):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")

    failed = []
    sampled = SimpleNamespace(
        spec_ok=False, generator=object(), ban_active=False, choose=refuse, fail=failed.append
    )
    logits = _logits([[1, 2], [3, 4], [5, 6]])
    choices, accepted = verify([_row(), sampled, _row()], logits, [[1], [], [0]], k=1)
    assert choices == [[1, 2], [], [5]]  # the others' choices stand; the failed row commits nothing
    assert accepted == [1, None, 0]
    assert len(failed) == 1 and "nan" in str(failed[0])


def _chi_square(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """Pearson's statistic of observed counts against expected probabilities (categories with mass only)."""
    expected = probs / probs.sum() * counts.sum()
    keep = expected > 0
    assert counts[~keep].sum() == 0  # nothing drawn outside the support
    return float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())


def test_speculative_sampling_keeps_the_target_distribution():
    """Rejection sampling over deterministic drafts: the first committed token follows p_0 and, after an
    accepted first draft, the second follows p_1 (chi-square, 15,000 steps, fixed seed, 6 tokens), whether the
    drafts are likely or unlikely under the target; acceptance of d_1 happens at rate p_0(d_1)."""
    from jocr.engine.verify import sample_drafts, sampling_distribution

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 6, generator=g) * 1.5  # (k + 1, V): positions 0, 1, 2
    temperature, top_p, steps = 0.8, 0.95, 15_000
    p0 = sampling_distribution(logits[0], temperature, top_p)
    p1 = sampling_distribution(logits[1], temperature, top_p)
    p0, p1 = p0 / p0.sum(), p1 / p1.sum()
    # chi-square critical value at df = 5 and p = 0.001: 20.52 (df = number of tokens - 1, at most)
    for drafts in ([int(p0.argmax()), int(p1.argmax())], [int(p0.argmin()), 2]):
        first, second = torch.zeros(6), torch.zeros(6)
        for _ in range(steps):
            tokens = sample_drafts(logits, drafts, temperature, top_p, g)
            first[tokens[0]] += 1
            if tokens[0] == drafts[0] and len(tokens) > 1:
                second[tokens[1]] += 1
        assert _chi_square(first, p0) < 20.52, drafts
        assert abs(first[drafts[0]] / steps - p0[drafts[0]]) < 0.015
        if second.sum() > 100:
            assert _chi_square(second, p1) < 20.52, drafts


def test_sampled_rows_speculate_only_when_asked(cycle_model):
    """spec=True: a sampled request speculates (its steps commit several tokens); by default it does not."""
    from jocr.engine import Engine, EngineConfig, GenerationRequest

    prompt = [20, 21, 22, 23]
    for spec, speculated in ((None, False), (True, True)):
        engine = Engine(cycle_model, EngineConfig(drafter="mtp", num_draft_tokens=3))
        req = GenerationRequest(prompt_ids=prompt, max_tokens=30, temperature=0.3, seed=5, spec=spec)
        result = engine.generate([req])[0]
        assert len(result.token_ids) == 30
        assert (engine.stats.spec_steps > 0) == speculated
