import math

import pytest
import torch

from jocr.train.merge import candidate_weightings, linear_merge, search_merge, slerp, slerp_merge


def _sd(seed):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(4, 3, generator=g), "b": torch.randn(3, generator=g), "step": torch.tensor(seed)}


def test_linear_merge_matches_manual_average():
    a, b = _sd(0), _sd(1)
    m = linear_merge([a, b], [3, 1])
    assert torch.allclose(m["w"], 0.75 * a["w"] + 0.25 * b["w"])
    assert int(m["step"]) == 0  # integer tensors come from the first state dict


def test_slerp_endpoints_and_norm():
    a, b = torch.randn(50), torch.randn(50)
    assert torch.allclose(slerp(a, b, 0.0), a, atol=1e-5)
    assert torch.allclose(slerp(a, b, 1.0), b, atol=1e-5)
    mid = slerp(a, b, 0.5)
    assert math.isclose(float(mid.norm()), float((a.norm() + b.norm()) / 2), rel_tol=1e-4)
    # the direction is the normalised bisector of the two unit vectors
    bis = a / a.norm() + b / b.norm()
    assert torch.allclose(mid / mid.norm(), bis / bis.norm(), atol=1e-5)


def test_slerp_parallel_vectors_fall_back_to_lerp():
    a = torch.ones(8)
    assert torch.allclose(slerp(a, 2 * a, 0.5), 1.5 * a)


def test_slerp_merge_rejects_mismatched_shapes():
    a, b = _sd(0), _sd(1)
    b["w"] = torch.zeros(2, 2)
    with pytest.raises(ValueError):
        slerp_merge(a, b, 0.5)


def test_candidate_weightings_respect_budget_and_start_with_singles():
    w = candidate_weightings(2, "linear", 5)
    assert w[:2] == [[1.0, 0.0], [0.0, 1.0]]
    assert len(w) == 5 and [0.5, 0.5] in w
    assert len(candidate_weightings(3, "linear", 100)) == 3 + 1 + 3


def test_search_finds_the_best_interpolation_within_budget():
    a, b = {"x": torch.tensor([0.0])}, {"x": torch.tensor([1.0])}
    calls = []

    def score(sd):
        calls.append(1)
        return -abs(float(sd["x"]) - 0.25)

    merged, res = search_merge([a, b], score, method="linear", budget=6)
    assert len(calls) == 6
    assert math.isclose(float(merged["x"]), 0.25, abs_tol=1e-6)
    assert res.best.weights == [0.75, 0.25]


def test_search_never_loses_to_a_single_candidate():
    a, b = {"x": torch.tensor([0.0])}, {"x": torch.tensor([1.0])}
    merged, res = search_merge([a, b], lambda sd: float(sd["x"]), method="slerp", budget=4)
    assert float(merged["x"]) == 1.0 and res.best.weights == [0.0, 1.0]
