"""Verification of drafted tokens: which drafts a step keeps, and the bonus token after them.

A speculative step feeds each row [x_{n-1}, d_1 .. d_k] at positions n - 1 .. n - 1 + k (engine/batch.py
states the row layout) and gets the verifier's logits (B, k + 1, V).

Greedy rows: g_j = argmax of the verifier's logits at position n - 1 + j, after the repetition guard has
banned tokens for the history x + d_1..d_j (exactly what plain decoding would see had it committed those
drafts). The accepted length a is the longest prefix with d_{j+1} == g_j for j < a; the step commits
g_0 .. g_a: the a **accepted** drafts (which equal g_0 .. g_{a-1}) plus the **bonus** token g_a, the
verifier's own choice after them. Every committed token is therefore the verifier's greedy choice given
the committed history: the output equals plain greedy decoding token for token, whatever the drafts were.
(Stop conditions are applied token by token when the batch commits, so a stop inside a committed run
truncates it at the same token plain decoding would stop at.)

Sampled rows (temperature > 0) fall back to plain decoding inside a speculative step: they commit one token
sampled from the position-0 distribution and ignore their drafts, so their output distribution is exactly
that of plain sampling. Rows that do not speculate (`spec_ok` false) commit g_0 only.

A row whose own choice raises (sampling from a distribution torch.multinomial refuses) is failed alone
(`row.fail`, engine/batch.py's row isolation): it commits nothing and the other rows' choices stand.
"""

from __future__ import annotations

import torch


def accepted_length(drafts: list[int], greedy: list[int]) -> int:
    """a: the length of the longest prefix of `drafts` (d_1..d_k) equal to `greedy` (g_0..g_{k-1})."""
    a = 0
    while a < len(drafts) and drafts[a] == greedy[a]:
        a += 1
    return a


def ban_repeats(rows, logits: torch.Tensor, drafts: list[list[int]], k: int) -> None:
    """Mask, in place, the tokens each row's repetition guard bans at each verified position j, given the
    history extended by the drafts before it. logits: (B, k + 1, V)."""
    for i, r in enumerate(rows):
        if r.ban_active:
            for j in range(k + 1 if r.spec_ok else 1):
                banned = r.guard.banned(drafts[i][:j])
                if banned:
                    logits[i, j, list(banned)] = float("-inf")


def verify(
    rows, logits: torch.Tensor, drafts: list[list[int]], k: int
) -> tuple[list[list[int]], list[int | None]]:
    """(tokens to commit per row, accepted length per row or None for a row that did not speculate).

    logits: (B, k + 1, V) after `ban_repeats`; drafts: per row its k drafted ids (empty when k = 0)."""
    greedy = logits.argmax(-1).tolist()  # (B, k + 1)
    choices: list[list[int]] = []
    accepted: list[int | None] = []
    for i, r in enumerate(rows):
        if r.generator is not None:  # sampled row
            try:
                choices.append([r.choose(logits[i, 0])])
            except Exception as exc:  # this row's own failure, not the batch's
                r.fail(exc)
                choices.append([])
            accepted.append(None)
        elif k and r.spec_ok:
            a = accepted_length(drafts[i], greedy[i])
            choices.append(greedy[i][: a + 1])  # a accepted drafts + the bonus token
            accepted.append(a)
        else:
            choices.append(greedy[i][:1])
            accepted.append(None)
    return choices, accepted
