"""Formula crops for the formula reader: grammar formulas that both mathtext and KaTeX accept, crops made
the same way from the same seed, and the target in the form the formula task writes."""

from __future__ import annotations

import random

import numpy as np

from jocr.checks.formula import tokens
from jocr.checks.math import renders
from jocr.synth.formula_crops import FormulaCropConfig, formula_crop, random_formula
from jocr.synth.formulas import render_math


def test_grammar_formulas_are_typeset_by_mathtext_and_parsed_by_katex():
    rng = random.Random(3)
    formulas = [random_formula(rng) for _ in range(40)]
    assert len(set(formulas)) == 40  # a grammar, not a short list
    for latex in formulas:
        coverage, _ = render_math(latex, 24, "cm")
        assert coverage.max() > 0, latex
        assert renders(latex), latex


def test_grammar_combines_constructs_no_template_holds():
    rng = random.Random(5)
    formulas = [random_formula(rng) for _ in range(300)]
    nested = [f for f in formulas if f.count("\\frac") + f.count("\\sqrt") >= 2]
    assert len(nested) >= 30
    for construct in ("\\left[", "\\left|", "\\mathbf{", "\\tilde{", "\\Delta", "\\in", "\\int_"):
        assert any(construct in f for f in formulas), construct


def test_a_crop_is_the_same_for_the_same_seed_and_its_target_is_the_formula_tasks_form():
    image, target = formula_crop(11)
    again, same = formula_crop(11)
    assert same == target and np.array_equal(np.asarray(image), np.asarray(again))
    assert target.startswith("$$\n") and target.endswith("\n$$")
    latex = target[3:-3]
    assert 0 < len(latex) <= FormulaCropConfig().max_chars and tokens(latex)
    grey = np.asarray(image.convert("L"))  # (H, W)
    assert image.mode == "RGB" and grey.min() < 100 and grey[0].mean() > 200  # ink inside, paper at the edge


def test_degraded_crops_differ_from_clean_ones_of_the_same_formula():
    clean_cfg = FormulaCropConfig(degrade_share=0.0)
    clean, target = formula_crop(4, cfg=clean_cfg)
    degraded, same = formula_crop(4, degrade=True, cfg=clean_cfg)
    assert same == target
    assert np.asarray(clean).shape != np.asarray(degraded).shape or not np.array_equal(
        np.asarray(clean), np.asarray(degraded)
    )
