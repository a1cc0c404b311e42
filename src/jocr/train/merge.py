"""Merging candidate checkpoints: linear and SLERP merges, merge weights searched under an evaluation budget.

The jina-ocr-v1 recipe merges each round's candidate checkpoints and searches the merge weights under a
fixed evaluation budget on unit-test and edit-distance scores (the jina-ocr-v1 report, post-training). Here a
merge is a pure function of state dicts; the search takes any `score_fn(state_dict) -> float` and spends at
most `budget` calls of it, so the caller fixes the evaluation cost (pages x evaluations).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

StateDict = dict[str, torch.Tensor]


def linear_merge(states: Sequence[StateDict], weights: Sequence[float]) -> StateDict:
    """sum_i w_i * theta_i per tensor (weights normalised to sum to 1); non-float tensors from the first."""
    if len(states) != len(weights) or not states:
        raise ValueError("linear_merge needs one weight per state dict and at least one state dict")
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("merge weights must sum to a positive number")
    ws = [float(w) / total for w in weights]
    _check_same_keys(states)
    out: StateDict = {}
    for key, ref in states[0].items():
        if not torch.is_floating_point(ref):
            out[key] = ref.clone()
            continue
        acc = torch.zeros_like(ref, dtype=torch.float32)
        for w, sd in zip(ws, states):
            acc.add_(sd[key].to(torch.float32), alpha=w)
        out[key] = acc.to(ref.dtype)
    return out


def slerp(a: torch.Tensor, b: torch.Tensor, t: float, eps: float = 1e-7) -> torch.Tensor:
    """Spherical interpolation of two tensors viewed as flat vectors; falls back to lerp when nearly parallel.

    The interpolated direction follows the great circle between the two unit vectors and the norm is
    interpolated linearly, so merging two similar fine-tunes does not shrink the weights as a lerp of
    diverging directions would.
    """
    a32, b32 = a.to(torch.float32).flatten(), b.to(torch.float32).flatten()
    na, nb = a32.norm(), b32.norm()
    if na < eps or nb < eps:
        return torch.lerp(a32, b32, t).view_as(a).to(a.dtype)
    ua, ub = a32 / na, b32 / nb
    dot = torch.clamp(torch.dot(ua, ub), -1.0, 1.0)
    omega = torch.arccos(dot)
    if omega.abs() < 1e-4:
        return torch.lerp(a32, b32, t).view_as(a).to(a.dtype)
    so = torch.sin(omega)
    direction = (torch.sin((1 - t) * omega) / so) * ua + (torch.sin(t * omega) / so) * ub
    norm = (1 - t) * na + t * nb
    return (direction * norm).view_as(a).to(a.dtype)


def slerp_merge(a: StateDict, b: StateDict, t: float) -> StateDict:
    """Per-tensor SLERP from a (t=0) to b (t=1); non-float tensors from a."""
    _check_same_keys([a, b])
    return {k: (slerp(v, b[k], t) if torch.is_floating_point(v) else v.clone()) for k, v in a.items()}


def _check_same_keys(states: Sequence[StateDict]) -> None:
    keys = set(states[0])
    for sd in states[1:]:
        if set(sd) != keys:
            missing = sorted(keys.symmetric_difference(sd))[:3]
            raise ValueError(f"state dicts differ in keys, e.g. {missing}")
        for k in keys:
            if sd[k].shape != states[0][k].shape:
                shapes = f"{tuple(sd[k].shape)} vs {tuple(states[0][k].shape)}"
                raise ValueError(f"shape mismatch for {k}: {shapes}")


@dataclass
class MergeTrial:
    method: str
    weights: list[float]
    score: float


@dataclass
class MergeSearchResult:
    best: MergeTrial
    trials: list[MergeTrial] = field(default_factory=list)


def candidate_weightings(n: int, method: str, budget: int) -> list[list[float]]:
    """The weightings to try, best-informed first, at most `budget` of them.

    Every single candidate is tried first (the merge must never lose to its parts on the validation split),
    then the uniform average, then for two candidates interpolation points t in a coarse-to-fine order
    (0.5, 0.25, 0.75, ...), and for more candidates pairwise midpoints.
    """
    trials: list[list[float]] = []
    for i in range(n):
        trials.append([1.0 if j == i else 0.0 for j in range(n)])
    if n == 1:
        return trials[:budget]
    if n == 2:
        ts, denom = [], 2
        while len(ts) < budget and denom <= 64:
            ts.extend(k / denom for k in range(1, denom, 2))
            denom *= 2
        trials.extend([[1 - t, t] for t in ts])
    else:
        if method != "linear":
            raise ValueError("slerp merges exactly two candidates; use linear for more")
        trials.append([1.0 / n] * n)
        for i in range(n):
            for j in range(i + 1, n):
                trials.append([0.5 if k in (i, j) else 0.0 for k in range(n)])
    return trials[:budget]


def merge_states(states: Sequence[StateDict], weights: Sequence[float], method: str) -> StateDict:
    nonzero = [i for i, w in enumerate(weights) if w > 0]
    if len(nonzero) == 1:
        return {k: v.clone() for k, v in states[nonzero[0]].items()}
    if method == "slerp":
        if len(states) != 2:
            raise ValueError("slerp merges exactly two candidates")
        t = float(weights[1]) / float(sum(weights))
        return slerp_merge(states[0], states[1], t)
    if method == "linear":
        return linear_merge(states, weights)
    raise ValueError(f"unknown merge method {method!r}; choose linear or slerp")


def search_merge(
    states: Sequence[StateDict],
    score_fn: Callable[[StateDict], float],
    method: str = "linear",
    budget: int = 6,
    log: Callable[[MergeTrial], None] | None = None,
) -> tuple[StateDict, MergeSearchResult]:
    """Try at most `budget` weightings (see `candidate_weightings`) and keep the best-scoring merge.

    Ties go to the earlier trial, so a merge that does not beat a single candidate is not chosen.
    """
    if budget < 1:
        raise ValueError("the evaluation budget must be at least 1")
    trials, best, best_state = [], None, None
    for weights in candidate_weightings(len(states), method, budget):
        merged = merge_states(states, weights, method)
        score = float(score_fn(merged))
        if math.isnan(score):
            score = -math.inf
        trial = MergeTrial(method=method, weights=[round(w, 4) for w in weights], score=score)
        trials.append(trial)
        if log is not None:
            log(trial)
        if best is None or score > best.score:
            best, best_state = trial, merged
    assert best is not None and best_state is not None
    return best_state, MergeSearchResult(best=best, trials=trials)
