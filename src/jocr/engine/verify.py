"""Verification of drafted tokens: which drafts a step keeps, and the bonus token after them.

A speculative step feeds each row [x_{n-1}, d_1 .. d_k] at positions n - 1 .. n - 1 + k (engine/batch.py
states the row layout) and gets the verifier's logits (B, k + 1, V).

Greedy rows: g_j = argmax of the verifier's logits at position n - 1 + j, after the repetition guard has
banned tokens for the history x + d_1..d_j (exactly what plain decoding would see had it committed those
drafts). The accepted length a is the longest prefix with d_{j+1} == g_j for j < a; the step commits
g_0 .. g_a: the a **accepted** drafts (which equal g_0 .. g_{a-1}) plus the **bonus** token g_a, the
verifier's own choice after them. Every committed token is therefore the verifier's greedy choice given
the committed history: the output equals plain greedy decoding token for token, whatever the drafts were,
provided the verifier's logits for a position do not depend on the pass that computed them (the
row-invariant kernels, model/kernels; docs/engine.md states where that holds).
(Stop conditions are applied token by token when the batch commits, so a stop inside a committed run
truncates it at the same token plain decoding would stop at.)

Sampled rows (temperature > 0) speculate only when their request asks (`spec=True`; see `sample_drafts`):
p_j is plain sampling's distribution at position j (`sampling_distribution`: temperature, top-p, the ban
for x + d_1..d_j). The drafters propose deterministically (a point mass on d_{j+1}), so the standard
rejection rule (Leviathan et al. 2023, Chen et al. 2023) reads: draft d_{j+1} is **accepted** with
probability p_j(d_{j+1}); at the first rejection the step commits a token drawn from p_j with d_{j+1}
removed (renormalised: the residual max(0, p_j - q_j)), and when all k are accepted the **bonus** token is
drawn from p_k. Each committed token then has exactly plain sampling's distribution given the committed
history (tests/engine/test_verify.py checks it with a chi-square test). The draws use the row's generator, so
a seed reproduces a request's tokens for a fixed k, but not across k (adaptive k follows timings) or with
speculation off. Other sampled rows commit one token sampled from the position-0 distribution and ignore
their drafts: their tokens are exactly plain sampling's, seed for seed. Rows that do not speculate
(`spec_ok` false) commit position 0's choice only.

A row whose own choice raises (sampling from a distribution torch.multinomial refuses) is failed alone
(`row.fail`, engine/batch.py's row isolation): it commits nothing and the other rows' choices stand.
"""

from __future__ import annotations

import torch


def sampling_distribution(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Plain sampling's distribution: softmax(logits / temperature) restricted to the top-p nucleus and
    renormalised by the sampler; logits (V,) -> probabilities (V,) float32 (not renormalised)."""
    logits = logits.float()
    # Shifted so the largest is 0 before dividing: a tiny temperature then gives -inf or 0, never inf - inf
    # (NaN), and the distribution tends to greedy as it should.
    probs = torch.softmax((logits - logits.max()) / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(descending=True)
        before = sorted_probs.cumsum(0) - sorted_probs  # mass strictly before each token
        # The most likely token always stays, so a top_p below float32's resolution cannot empty the nucleus.
        keep = before < top_p
        keep[0] = True
        sorted_probs = torch.where(keep, sorted_probs, torch.zeros_like(sorted_probs))
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
    return probs


def sample_drafts(
    logits: torch.Tensor, drafts: list[int], temperature: float, top_p: float, generator: torch.Generator
) -> list[int]:
    """Speculative sampling for one row (module docstring): logits (k + 1, V) after the bans, drafts d_1..d_k
    -> the committed tokens (the accepted drafts, then one drawn token)."""
    for j, draft in enumerate(drafts):
        probs = sampling_distribution(logits[j], temperature, top_p)
        p = probs / probs.sum()  # the distribution torch.multinomial draws from
        if torch.rand((), generator=generator) < p[draft]:
            continue  # accepted with probability p_j(d_{j+1})
        residual = probs.clone()
        residual[draft] = 0.0
        return drafts[:j] + [int(torch.multinomial(residual, 1, generator=generator))]
    bonus = sampling_distribution(logits[len(drafts)], temperature, top_p)
    return drafts + [int(torch.multinomial(bonus, 1, generator=generator))]


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
            spec = bool(k) and r.spec_ok
            try:
                if spec:
                    req = r.req
                    tokens = sample_drafts(logits[i], drafts[i], req.temperature, req.top_p, r.generator)
                    choices.append(tokens)
                else:
                    choices.append([r.choose(logits[i, 0])])
            except Exception as exc:  # this row's own failure, not the batch's
                r.fail(exc)
                choices.append([])
            accepted.append(len(choices[-1]) - 1 if spec and choices[-1] else None)
        elif k and r.spec_ok:
            a = accepted_length(drafts[i], greedy[i])
            choices.append(greedy[i][: a + 1])  # a accepted drafts + the bonus token
            accepted.append(a)
        else:
            choices.append(greedy[i][:1])
            accepted.append(None)
    return choices, accepted
