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
