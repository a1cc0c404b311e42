"""Sampling parameters outside the ranges that are safe end to end are refused at submission."""

from __future__ import annotations

import pytest

from jocr.engine import GenerationRequest


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 1e-40),
        ("temperature", float("nan")),
        ("temperature", float("inf")),
        ("top_p", 1e-300),
        ("top_p", float("nan")),
        ("seed", 2**63),
        ("seed", -1),
    ],
)
def test_sampling_parameters_outside_safe_ranges_are_refused(field, value):
    req = GenerationRequest(prompt_ids=[5], **{"temperature": 0.5, field: value})
    with pytest.raises(ValueError, match=field):
        req.validate()


def test_edges_of_the_ranges_are_accepted():
    for temperature, top_p, seed in ((0.0, 1.0, None), (1e-3, 1e-6, 0), (100.0, 1.0, 2**63 - 1)):
        GenerationRequest(prompt_ids=[5], temperature=temperature, top_p=top_p, seed=seed).validate()
