from __future__ import annotations

from jocr.checks.omnidoc_split import clean_text, normalize_formula, normalize_table_html, split_markdown


def test_split_markdown_kinds():
    md = (
        "# Title\n\nSome text with $x^2$ inline.\n\n$$E = mc^2$$\n\n<table><tr><td>a</td></tr></table>\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |"
    )
    kinds = [(b.kind, b.inline) for b in split_markdown(md)]
    assert ("table", False) in kinds and kinds.count(("table", False)) == 2
    assert ("formula", False) in kinds and ("formula", True) in kinds
    assert ("text", False) in kinds


def test_formula_normalisation_drops_fonts_delimiters_and_sizing():
    assert normalize_formula("$$\\mathrm{d} x \\left( y \\right)$$") == normalize_formula("\\[{d} x(y)\\]")
    assert normalize_formula("\\begin{aligned} A \\tag{1} \\end{aligned}") == "a"


def test_clean_text_keeps_words_and_reads_inline_greek_as_letters():
    assert clean_text("Energy $\\alpha$-rays, 5 kg!") == "Energy\u03b1rays5kg"


def test_table_html_normal_form():
    html = (
        '<table><thead><tr><th>a</th></tr></thead><tbody><tr><td style="x">1 &amp; <sup>2</sup></td></tr>'
        "</tbody></table>"
    )
    cells = "<tr><td>a</td></tr><tr><td>1 & 2</td></tr>"
    expected = f'<html><body><table border="1" >{cells}</table></body></html>'
    assert normalize_table_html(html) == expected
    assert normalize_table_html("no table here") == ""
