from jocr.checks.formula import edit_distance, exact_match, normalise_latex, render_match, score_formula


def test_one_spelling_per_construct():
    assert normalise_latex("$$x^2+y_i$$") == normalise_latex(r"x^{2} + y_{i}")
    assert exact_match(r"\left(\frac{a}{b}\right)", r"(\dfrac{a}{b})")
    assert exact_match(r"a \le b \ne c", r"a\leq b\neq c")
    assert exact_match(r"\int_{a}^{b} f \, dx", r"\int^{b}_{a} f dx")
    assert exact_match(r"f'(x)", r"f^{\prime}(x)")
    assert exact_match(r"f'(x)", r"f^{'}(x)")
    assert exact_match("α ≤ β", r"\alpha \leq \beta")
    assert exact_match(r"\[ x \tag{3} \]", "x")


def test_different_formulas_differ():
    assert not exact_match("x^{2}", "x_{2}")
    assert not exact_match(r"\frac{a}{b}", r"\frac{b}{a}")
    assert edit_distance("x^{2}", "x^{2}") == 0.0
    assert 0.0 < edit_distance(r"\frac{a}{b}", r"\frac{a}{c}") < 0.5
    assert edit_distance("x", "") == 1.0


def test_render_match_uses_katex():
    assert render_match(r"\frac{1}{2}", r"\dfrac{1}{2}")
    assert not render_match(r"\frac{1}{2}", r"\frac{2}{1}")
    assert not render_match("x", "")
    score = score_formula("x^2", "x^{2}")
    assert score.exact and score.rendered and score.edit == 0.0


def test_bare_arguments_are_braced():
    assert exact_match(r"\frac 1r \hat y_j", r"\frac{1}{r}\hat{y}_{j}")
    assert exact_match(r"i \not= j", r"i \neq j")
    assert exact_match(r"\sqrt x", r"\sqrt{x}")
