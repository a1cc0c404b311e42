"""Papers' display formulas for the KaTeX crops: KaTeX typesets every one, a seed gives the same formula, the
constructs mathtext cannot draw occur, and each is written in the one spelling the formula checks compare."""

from __future__ import annotations

import random
import re

from jocr.checks.formula import tokens
from jocr.checks.math import renders
from jocr.synth.paper_formulas import long_paper_formula, paper_formula

_COMMAND = re.compile(r"\\[A-Za-z]+")
# Dropped by the normalisation (sizes and spaces): not a spelling to keep.
_DROPPED = {"\\left", "\\right", "\\big", "\\quad", "\\qquad"}


def _formulas(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [paper_formula(rng) for _ in range(n)]


def test_katex_parses_every_formula_and_a_seed_gives_the_same_ones():
    formulas = _formulas(7, 150)
    assert formulas == _formulas(7, 150) and len(set(formulas)) == 150
    refused = [f for f in formulas if not renders(f)]
    assert refused == []


def test_the_constructs_papers_print_and_mathtext_cannot_occur():
    formulas = _formulas(11, 600)
    for construct in (
        "\\text{",
        "\\begin{pmatrix}",
        "\\begin{cases}",
        "\\mathbb{",
        "\\mathcal{",
        "\\langle",
        "\\otimes",
        "\\mapsto",
        "\\mathrm{d}",
        "\\varepsilon",
        "\\partial_{",
        "\\left\\{",
        "''",
    ):
        assert any(construct in f for f in formulas), construct
    assert sum(f.endswith((",", ".")) for f in formulas) > 100  # display formulas end sentences


def test_every_command_is_written_in_the_spelling_the_checks_compare():
    for latex in _formulas(13, 300):
        kept = set(tokens(latex))
        for command in set(_COMMAND.findall(latex)) - _DROPPED:
            assert command in kept, (command, latex)


def test_long_formulas_are_long_chains_or_aligned_rows_that_katex_typesets_in_the_compared_spellings():
    rng = random.Random(17)
    formulas = [long_paper_formula(rng) for _ in range(300)]
    again = random.Random(17)
    assert [long_paper_formula(again) for _ in range(5)] == formulas[:5]
    aligned = [f for f in formulas if f.startswith("\\begin{aligned}")]
    assert 50 <= len(aligned) <= 100  # a quarter
    assert all(" \\\\ " in f and "&" in f for f in aligned)
    median, short_median = (sorted(map(len, group))[150] for group in (formulas, _formulas(17, 300)))
    assert median > 1.8 * short_median  # 169 against 93
    assert [f for f in formulas[:60] if not renders(f)] == []
    for latex in formulas[:100]:
        kept = set(tokens(latex))
        for command in set(_COMMAND.findall(latex)) - _DROPPED:
            assert command in kept, (command, latex)
