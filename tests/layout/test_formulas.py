import json
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from jocr.checks.formula import exact_match
from jocr.layout.formula_glyphs import Glyph, Rule, decode_char
from jocr.layout.formula_latex import glyphs_latex
from jocr.layout.formulas import FormulaRegion, read_formula_region, read_glyphs, with_formulas
from jocr.layout.tree import FORMULA, PARAGRAPH, Block, PageTree, TreeLine

SET = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "formulas"


def _manifest():
    return [json.loads(line) for line in (SET / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]


def test_frozen_set_reads_back_exactly():
    rows = _manifest()
    exact = 0
    for row in rows:
        doc = pdfium.PdfDocument(str(SET / row["pdf"]))
        try:
            result = read_formula_region(doc[0])
        finally:
            doc.close()
        exact += exact_match(row["latex"], result.latex)
    assert len(rows) == 60
    assert exact >= 59  # measured 59/60 (one STIX \epsilon drawn as U+03B5, read \varepsilon)


@pytest.mark.parametrize("stem", ["f000", "f001", "f007"])
def test_nested_constructs(stem):
    row = next(r for r in _manifest() if r["id"] == stem)
    doc = pdfium.PdfDocument(str(SET / row["pdf"]))
    try:
        assert exact_match(row["latex"], read_formula_region(doc[0]).latex)
    finally:
        doc.close()


def test_region_without_formula_is_an_empty_answer_with_a_note():
    doc = pdfium.PdfDocument(str(SET / "f000.pdf"))
    try:
        result = read_formula_region(doc[0], region=(0, 0, 1, 1))
    finally:
        doc.close()
    assert result.latex == "" and result.note and result.markdown == ""


def test_page_without_text_layer():
    doc = pdfium.PdfDocument.new()
    page = doc.new_page(200, 100)
    result = read_formula_region(page)
    assert result.latex == "" and "text layer" in result.note


def _glyph(text, x, base, size=10.0, font="CMMI10"):
    return Glyph(text, font, size, (x, base - 0.7 * size, x + 0.5 * size, base), base)


def test_scripts_and_fraction_from_geometry():
    glyphs = [_glyph("x", 0, 20), _glyph("2", 5.5, 16, 7, "CMR7"), _glyph("+", 10, 20, font="CMR10")]
    glyphs += [_glyph("a", 22, 18), _glyph("b", 22, 28)]
    # the bar on the math axis, a little above the baseline
    rules = [Rule((20, 18.6, 30, 19.0))]
    assert exact_match(r"x^{2}+\frac{a}{b}", glyphs_latex(glyphs, rules))


def test_equation_number_is_left_out():
    glyphs = [_glyph("a", 0, 20), _glyph("=", 6, 20, font="CMR10"), _glyph("b", 12, 20)]
    glyphs += [_glyph(c, 200 + 5 * k, 20, font="CMR10") for k, c in enumerate("(3)")]
    result = read_glyphs(glyphs, [])
    assert exact_match("a=b", result.latex) and result.tag == "3"


def test_long_formula_is_bounded():
    glyphs = [_glyph("x" if k % 2 else "+", 6.0 * k, 20) for k in range(5000)]
    latex = glyphs_latex(glyphs, [])
    assert latex.count("x") == 2500


def test_tex_slots_decoded():
    assert decode_char(0xBE, "Cmmi10") == "σ"  # matplotlib's BaKoMa encoding
    assert decode_char(ord("X"), "Cmex10") == "∑"
    assert decode_char(0x2219, "Cmsy10") == "≤"
    assert decode_char(ord("."), "CMMI10") == "."  # a TeX Type 1 font's Unicode is kept
    assert decode_char(0x1B, "CMMI10") == "σ"
    assert decode_char(ord("x"), "Helvetica") == "x"


def test_formula_lines_become_a_formula_block():
    lines = [TreeLine("Before it", (0, 0, 100, 10)), TreeLine("x = y", (40, 20, 60, 30))]
    lines.append(TreeLine("after it.", (0, 40, 100, 50)))
    block = Block(PARAGRAPH, "Before it x = y after it.", "Before it x = y after it.", (0, 0, 100, 50), lines)
    tree = PageTree(200, 200, blocks=[block])
    out = with_formulas(tree, [FormulaRegion((38, 18, 62, 32), "x=y")])
    assert [b.type for b in out.blocks] == [PARAGRAPH, FORMULA, PARAGRAPH]
    assert out.blocks[1].markdown == "$$\nx=y\n$$"
    assert out.blocks[2].text == "after it."


def test_matrix_between_tall_parentheses():
    glyphs = [Glyph("(", "CMEX10", 10.0, (0, 0, 4, 30), 0), Glyph(")", "CMEX10", 10.0, (40, 0, 44, 30), 0)]
    for row, base in enumerate((10, 24)):
        for col, x in enumerate((8, 28)):
            glyphs.append(_glyph("abcd"[2 * row + col], x, base))
    assert exact_match(r"\begin{pmatrix}a & b \\ c & d\end{pmatrix}", glyphs_latex(glyphs, []))


def test_inline_formula_in_prose():
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    text = "where x = 5, too"
    glyphs = [_glyph(c, 6.0 * k, 20, font="CMR10") for k, c in enumerate("where")]
    glyphs += [_glyph("x", 40, 20), _glyph("=", 46, 20, font="CMR10"), _glyph("5", 52, 20, font="CMR10")]
    glyphs += [
        _glyph(",", 57, 20, font="CMR10"),
        _glyph("t", 62, 20, font="CMR10"),
        _glyph("o", 67, 20, font="CMR10"),
    ]
    glyphs += [_glyph("o", 72, 20, font="CMR10")]
    for g in glyphs:
        g.raw = g.text
    assert inline_text(text, glyphs, [], _math_glyph, 10.0) == "where $x=5$, too"
    assert inline_text("plain words", glyphs[:5], [], _math_glyph, 10.0) is None


def test_inline_formulas_only_when_asked():
    from jocr.layout.formulas import find_formulas
    from jocr.lines.types import Line

    glyphs = [_glyph(c, 6.0 * k, 20, font="CMR10") for k, c in enumerate("where")]
    glyphs += [_glyph("x", 40, 20), _glyph("=", 46, 20, font="CMR10"), _glyph("5", 52, 20, font="CMR10")]
    for g in glyphs:
        g.raw = g.text
    lines = [Line("where x = 5", (0, 10, 60, 21))]
    assert find_formulas(glyphs, [], lines) == []
    found = find_formulas(glyphs, [], lines, inline=True)
    assert [f.text for f in found] == ["where $x=5$"] and not found[0].display


def test_binomial_and_rows_of_a_display_stay_apart():
    glyphs = [Glyph("(", "CMEX10", 10.0, (0, 0, 4, 24), 0), Glyph(")", "CMEX10", 10.0, (14, 0, 18, 24), 0)]
    glyphs += [_glyph("n", 6, 9), _glyph("r", 6, 22)]
    assert exact_match(r"\binom{n}{r}", glyphs_latex(glyphs, []))
    rows = [_glyph("a", 2, 8), _glyph("b", 2, 20), _glyph("c", 2, 36), _glyph("d", 2, 48)]
    rules = [Rule((0, 10.6, 10, 11.0)), Rule((0, 38.6, 10, 39.0))]
    assert exact_match(r"\begin{gathered}\frac{a}{b} \\ \frac{c}{d}\end{gathered}", glyphs_latex(rows, rules))


def _prose(text, x0=0.0):
    """Glyphs of `text` in a text font, one per character (spaces left out), 6 pt apart."""
    out = []
    for k, c in enumerate(text):
        if c != " ":
            g = _glyph(c, x0 + 6.0 * k, 20, font="NimbusRomNo9L-Regu")
            g.raw = c
            out.append(g)
    return out


def test_prose_dashes_and_lone_signs_are_not_inline_math():
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    # a page range in a text font ("ACM, 31, 216–222") and a sign between code words ("size < limit")
    assert inline_text("ACM, 216–222.", _prose("ACM, 216–222."), [], _math_glyph, 10.0) is None
    assert inline_text("size < limit", _prose("size < limit"), [], _math_glyph, 10.0) is None
    # the same sign beside a math letter is math
    glyphs = _prose("size < ")
    glyphs.append(_glyph("n", 42, 20))
    glyphs[-1].raw = "n"
    assert inline_text("size < n", glyphs, [], _math_glyph, 10.0) == "size $<n$"


MATH_PAGES = Path(__file__).resolve().parents[2] / "data" / "frozen-real-math" / "pdfs"


def test_unicode_math_page_is_read():
    """A unicode-math page (XeLaTeX/LuaLaTeX: STIX Two Text prose, STIX Two Math math, math letters beyond
    the BMP such as 𝑓 U+1D453): its math letters are glyphs, its prose font is not a math font, and its
    display formula is found and read."""
    from jocr.layout.formula_glyphs import is_math_font, page_glyphs
    from jocr.layout.formulas import page_formulas
    from jocr.lines.textlayer import read_page

    assert not is_math_font("STIXTwoText-Bold") and is_math_font("STIXTwoMath")
    assert is_math_font("STIXGeneral-Italic")
    doc = pdfium.PdfDocument(str(MATH_PAGES / "multivar-p05.pdf"))
    try:
        page = doc[0]
        glyphs, _ = page_glyphs(page)
        assert any(g.raw == "\U0001d453" for g in glyphs)  # 𝑓
        layer = read_page(page)
        found = page_formulas(page, layer)
        inline = page_formulas(page, layer, inline=True)
    finally:
        doc.close()
    latex = [f.latex for f in found]
    assert any(exact_match(r"D=D(a,b)=f_{xx}(a,b)f_{yy}(a,b)-(f_{xy}(a,b))^{2}.", x) for x in latex), latex
    assert all(f.display for f in found) and len(found) <= 3, latex  # prose lines are not formulas
    assert any(not f.display and "$f:A^{k}\\mapsto B$" in f.text for f in inline)


def test_letters_of_a_text_italic_are_math_italic():
    """Math in a text face's italic (URW Palladio "-Ital", Times "-Italic"): plain letters, not \\mathrm."""
    glyphs = [_glyph("g", 0, 20, font="URWPalladioL-Ital"), _glyph("=", 6, 20, font="CMR10")]
    glyphs.append(_glyph("x", 12, 20, font="Times-Italic"))
    assert glyphs_latex(glyphs, []) == "g=x"
    assert glyphs_latex([_glyph("N", 0, 20, font="URWPalladioL-Roma")], []) == r"\mathrm{N}"


def test_tall_delimiters_pair_as_left_right():
    """A pair of delimiters taller than the row is written \\left..\\right (as the page sizes them); a
    subscript of a limit's last glyph stays in the limit (no double subscript after the operator)."""
    glyphs = [Glyph("[", "CMEX10", 12.0, (0, 0, 4, 36), 0), Glyph("]", "CMEX10", 12.0, (60, 0, 64, 36), 0)]
    glyphs += [Glyph("∑", "CMEX10", 16.7, (10, 10, 22, 25), 23)]
    glyphs += [_glyph("s", 8, 33, 9.0), _glyph("=", 13, 33, 9.0, "CMR10"), _glyph("I", 18, 33, 9.0, "CMSY10")]
    glyphs += [_glyph("i", 23, 35, 7.0)]
    glyphs += [_glyph("x", 26, 21, 12.0)]
    latex = glyphs_latex(glyphs, [])
    assert latex == r"\left[\sum_{s=\mathcal{I}_{i}}x\right]"


def test_inline_math_across_row_pieces_and_italic_variables():
    """The text layer breaks a row of prose where a script's baseline differs ("that λ = ∑", "k", "i=1",
    "c(g, R)."): the formula across the pieces is read from all their glyphs into the first piece, the others
    left empty; italic variables beside math ("c(g,") join it, an italic word alone ("is") does not."""
    from jocr.layout.formulas import find_formulas
    from jocr.lines.types import Line

    def word(text, x, base=20, size=12.0, font="URWPalladioL-Roma"):
        out = []
        for k, c in enumerate(text):
            g = _glyph(c, x + 0.6 * size * k, base, size, font)
            g.raw = c
            out.append(g)
        return out

    first = word("that", 0) + word("λ", 40, font="PazoMath-Italic") + word("=", 52, font="CMR10")
    first += word("∑", 64, font="PazoMath")
    upper, lower = word("k", 72, 15, 9.0, "URWPalladioL-Ital"), word("i=1", 72, 24, 9.0, "URWPalladioL-Ital")
    last = word("c(g,", 96, font="URWPalladioL-Ital") + word("ψ", 130, font="PazoMath-Italic")
    last += word(").", 137.2)
    lines = [
        Line("that λ = ∑", (0, 11, 71, 21)),
        Line("k", (72, 8.7, 77, 15)),
        Line("i=1", (72, 17.7, 88, 24)),
        Line("c(g, ψ).", (96, 11, 152, 21)),
    ]
    found = find_formulas(first + upper + lower + last, [], lines, inline=True)
    texts = [f.text for f in found if not f.display]
    assert texts[1:] == ["", "", ""]
    assert texts[0] == r"that $\lambda=\sum_{i=1}^{k}c(g,\psi)$."
    # an italic word of letters alone stays prose next to math
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    glyphs = word("α", 0, font="PazoMath-Italic") + word("is", 12, font="URWPalladioL-Ital")
    glyphs += word("small", 30)
    assert inline_text("α is small", glyphs, [], _math_glyph, 12.0) == r"$\alpha$ is small"


def test_display_in_a_text_italic_beside_the_other_column():
    """A slide's formula set in Times Italic (no math font) in the right column, at the height of a prose
    line of the left column: found as a display; the same formula inside that prose row is inline."""
    from jocr.layout.formulas import find_formulas
    from jocr.lines.types import Line

    def run(text, x, font, base=20, size=14.0):
        out = []
        for k, c in enumerate(text):
            if c != " ":
                g = _glyph(c, x + 0.6 * size * k, base, size, font)
                g.raw = c
                out.append(g)
        return out

    prose = run("Establishes that differentiation and", 0, "Tahoma")
    formula = run("a + b = c", 400, "Times-Italic")
    for g in formula:
        if g.text in "+=":
            g.font = "TimesNewRomanPSMT"
    lines = [
        Line("Establishes that differentiation and", (0, 10, 300, 21)),
        Line("a + b = c", (400, 10, 470, 21)),
    ]
    found = find_formulas(prose + formula, [], lines)
    assert [(f.latex, f.lines) for f in found] == [("a+b=c", [1])]
    near = [g for g in formula]
    for g in near:
        g.box = (g.box[0] - 90, g.box[1], g.box[2] - 90, g.box[3])
    lines[1] = Line("a + b = c", (310, 10, 380, 21))
    assert find_formulas(prose + near, [], lines) == []


def test_prime_after_a_subscript_is_the_subscripts():
    """`\\lambda_{g'}`: the prime sits on the row's baseline right after the subscript, raised over the
    subscript's own; a raised prime is written `^{\\prime}` (`^{'}` would be a prime on an empty base)."""
    glyphs = [_glyph("λ", 0, 20, 12.0, "PazoMath-Italic"), _glyph("g", 7, 22.5, 9.0, "URWPalladioL-Ital")]
    glyphs.append(Glyph("′", "CMSY10", 7.3, (12.0, 16.3, 13.7, 20.0), 19.9))
    assert glyphs_latex(glyphs, []) == r"\lambda_{g^{\prime}}"


def test_small_capitals_on_the_baseline_are_not_scripts():
    """Small glyphs count as scripts (math) only off the row's baseline: "GPT-4O" in small capitals stays
    prose, a lowered "i" is a subscript."""
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    glyphs = _prose("use ")
    for k, c in enumerate("GPT-4O"):
        g = _glyph(c, 30 + 5 * k, 20, 8.0, "NimbusRomNo9L-Regu")
        g.raw = c
        glyphs.append(g)
    assert inline_text("use GPT-4O", glyphs, [], _math_glyph, 10.0) is None
    glyphs = _prose("use ") + [
        _glyph("x", 30, 20, 10.0, "Times-Roman"),
        _glyph("i", 36, 22.5, 7.0, "Times-Roman"),
    ]
    for g in glyphs[-2:]:
        g.raw = g.text
    assert inline_text("use xi", glyphs, [], _math_glyph, 10.0) == r"use $\mathrm{x}_{\mathrm{i}}$"


def test_upright_constant_takes_its_exponent():
    """`\\mathrm{e}^{-z/2}`: the upright e is read as a word, and the row's size is still the e's, so the
    smaller, raised run after it is its exponent (it was the row's size, and no script was found)."""
    glyphs = [_glyph("e", 0, 20, 10.0, "CMR10"), _glyph("−", 5, 16, 7.0, "CMSY7")]
    glyphs += [_glyph("z", 10, 16, 7.0, "CMMI7"), _glyph("/", 14, 16, 7.0, "CMMI7")]
    glyphs.append(_glyph("2", 17, 16, 7.0, "CMR7"))
    assert glyphs_latex(glyphs, []) == r"\mathrm{e}^{-z/2}"


def test_tex_extension_slot_2_is_a_bracket():
    """PDFium gives CMEX's slot 2 (a big `[`) as 0x02, its own mark for a hyphen at a line's end: in a TeX
    extension font it is the bracket (statex2's `\\mathrm{P}\\left[|Z|>z\\right]=\\alpha` lost its `[`)."""
    from jocr.layout.formula_glyphs import page_glyphs

    path = Path(__file__).resolve().parents[2] / "data" / "frozen-real-math" / "heldout" / "pdfs"
    doc = pdfium.PdfDocument(str(path / "statex2-p3.pdf"))
    try:
        glyphs, _ = page_glyphs(doc[0])
    finally:
        doc.close()
    cmex = [g.text for g in glyphs if g.font == "CMEX10"]
    assert cmex.count("[") == cmex.count("]") >= 2
    assert decode_char(0x02, "CMEX10") == "["


def test_glyphs_pdfium_cannot_map_are_tex_slots():
    """Latin Modern's Type 1 math fonts name most glyphs as PDFium knows them (≤ is right) but not all:
    PDFium gives the code of `Rfractur` and `prime`, which is the OMS slot (ℜ, ′), not "<" and "0"."""
    assert decode_char(ord("<"), "LMMathSymbols10-Regular", unmapped=True) == "ℜ"
    assert decode_char(ord("0"), "LMMathSymbols6-Regular", unmapped=True) == "′"
    assert decode_char(ord("<"), "LMMathSymbols10-Regular") == "<"  # a named glyph keeps its Unicode
    assert decode_char(ord("P"), "LMMathExtension10-Regular", unmapped=True) == "∑"
    assert decode_char(0x20, "LMMathExtension10-Regular", unmapped=True) == "("
    assert decode_char(ord("<"), "NimbusRomNo9L-Regu", unmapped=True) == "<"  # not a TeX math font


def test_overline_over_a_numerator_as_wide_as_the_bar():
    """mismath's `\\frac{\\overline{z-y}}{\\overline{a}}`: the numerator's overline is a little wider than
    the fraction's bar and was read first, as an overline over the whole fraction."""
    glyphs = [_glyph("z", 0, 20), _glyph("−", 6, 20, font="CMSY10"), _glyph("y", 12, 20), _glyph("a", 6, 31)]
    rules = [Rule((-0.5, 12.0, 18.0, 12.4)), Rule((0.0, 22.8, 17.0, 23.2)), Rule((5.5, 23.8, 11.5, 24.2))]
    assert glyphs_latex(glyphs, rules) == r"\frac{\overline{z-y}}{\overline{a}}"


def _word(word, x0, base=20.0, font="SFRM1000", size=10.0):
    out = []
    for k, c in enumerate(word):
        g = _glyph(c, x0 + 6.0 * k, base, size, font)
        g.raw = c
        out.append(g)
    return out


def test_the_latex_logo_is_prose_not_a_script():
    """The LaTeX logo sets a small "A" raised between full-size letters of a text font: a word of prose,
    not `\\mathrm{LT}^{\\mathrm{A}}...`; a small letter ending a word ("xi") is still a script."""
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    glyphs = _prose("extend ") + _word("L", 42) + _word("A", 47, 17.9, "SFRM0700", 7.0)
    glyphs += _word("T", 52) + _word("E", 58, 22.0) + _word("X", 64)
    assert inline_text("extend LATEX", glyphs, [], _math_glyph, 10.0) is None


def test_a_note_sign_closing_a_word_of_prose_is_a_footnote_mark():
    """A title's "Floats∗" (the sign from TeX's math symbols font, set by \\thanks) is prose with its note
    mark; a math letter with the same sign ("x∗") is still math."""
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    glyphs = _prose("for Floats") + [Glyph("∗", "CMSY7", 7.0, (61, 12, 65, 16), 16.5, "∗")]
    assert inline_text("for Floats∗", glyphs, [], _math_glyph, 10.0) is None
    glyphs = [Glyph("∗", "CMSY7", 7.0, (0, 12, 4, 16), 16.5, "∗")] + _prose("The", 5.0)
    assert inline_text("∗The", glyphs, [], _math_glyph, 10.0) is None
    glyphs = _prose("for ") + [_glyph("x", 25, 20), Glyph("∗", "CMSY7", 7.0, (30, 12, 34, 16), 16.5, "∗")]
    glyphs[-2].raw = "x"
    assert inline_text("for x∗", glyphs, [], _math_glyph, 10.0) == "for $x^{*}$"


def test_monospace_glyphs_are_code_not_math():
    """`\\verb|...|` in a typewriter face inside prose is code: its "|" is no math sign."""
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    glyphs = _prose("type ") + _word("\\verb|...|", 30, font="SFTT1000")
    assert inline_text("type \\verb|...|", glyphs, [], _math_glyph, 10.0) is None


def test_note_numbers_and_brackets_around_words_of_prose_are_no_formulas():
    """A raised note number after or before a word of prose ("used.¹", "Migchielsen¹,∗", a footnote's
    "¹This", its "¹" alone before the text) and an address in a math font's "<" ">" are prose; a short
    word keeps its script ("cm²") and a variable its relation ("a<b")."""
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    def raised(text, x, font="NimbusRomNo9L-Regu"):
        return Glyph(text, font, 7.0, (x, 13.0, x + 3.5, 17.0), 16.5, text)

    glyphs = _prose("be used.") + [raised("1", 48)]
    assert inline_text("be used.1", glyphs, [], _math_glyph, 10.0) is None
    glyphs = _prose("Jos Migchielsen") + [raised("1", 90), raised(",", 94), raised("∗", 97, "CMSY7")]
    assert inline_text("Jos Migchielsen1,∗", glyphs, [], _math_glyph, 10.0) is None
    glyphs = [raised("1", 0)] + _prose("This", 4.0)
    assert inline_text("1This", glyphs, [], _math_glyph, 10.0) is None
    glyphs = [raised("1", 0)] + _prose(" If it", 0.0)
    assert inline_text("1 If it", glyphs, [], _math_glyph, 10.0) is None
    glyphs = _prose("to ") + [_glyph("<", 18, 20, font="Rpxmi")] + _prose("me@x.org", 24.0)
    glyphs += [_glyph(">", 72, 20, font="Rpxmi")]
    for g in glyphs:
        g.raw = g.text
    assert inline_text("to <me@x.org>", glyphs, [], _math_glyph, 10.0) is None
    glyphs = _prose("10 cm") + [raised("2", 30)]
    assert inline_text("10 cm2", glyphs, [], _math_glyph, 10.0) == "$10\\mathrm{cm}^{2}$"
    glyphs = [_glyph("a", 0, 20), _glyph("<", 6, 20), _glyph("b", 12, 20)]
    for g in glyphs:
        g.raw = g.text
    assert inline_text("a<b", glyphs, [], _math_glyph, 10.0) == "$a<b$"


def test_a_math_fonts_full_stop_or_angle_brackets_alone_make_no_formula():
    """TeX sets "v3.4"'s full stop and a placeholder's "⟨...⟩" from its math fonts: prose all the same. A
    middle dot of a text font ("史记·项羽本纪") is no `\\cdot` either."""
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    glyphs = _prose("Until v3") + [_glyph(".", 48, 20)] + _prose("4", 54.0)
    glyphs[-2].raw = "."
    assert inline_text("Until v3.4", glyphs, [], _math_glyph, 10.0) is None
    glyphs = _word("key=", 0, font="NimbusMonL-Regu") + [_glyph("⟨", 24, 20, font="CMSY10")]
    glyphs += _prose("name", 30.0) + [_glyph("⟩", 54, 20, font="CMSY10")]
    for g in glyphs:
        g.raw = g.text
    assert inline_text("key=⟨name⟩", glyphs, [], _math_glyph, 10.0) is None
    glyphs = _word("史记·项羽", 0, font="SourceHanSerif-Regular")
    assert inline_text("史记·项羽", glyphs, [], _math_glyph, 10.0) is None


def test_chinese_prose_keeps_its_note_marks_and_xits_text_faces_are_no_math():
    """A raised note number after a Chinese word and its full-width colon ("可得自¹："), one in parentheses
    alone between words ("站 ⁽¹⁾ 上") or opening a footnote ("⁽¹⁾网址：") is the note's mark; XITS's text
    faces (a bold "GRE", "§1.1") are no math font, its math face is."""
    from jocr.layout.formula_glyphs import is_math_font
    from jocr.layout.formula_inline import inline_text
    from jocr.layout.formulas import _math_glyph

    def raised(text, x):
        return Glyph(text, "XITS-Bold", 7.0, (x, 13.0, x + 3.5, 17.0), 16.5, text)

    song = "SimSun"
    glyphs = _word("又可得自", 0, font=song) + [raised("1", 24)] + _word("：", 28, font=song)
    assert inline_text("又可得自1：", glyphs, [], _math_glyph, 10.0) is None
    glyphs = _word("信息站", 0, font=song) + [raised(c, 22 + 4 * k) for k, c in enumerate("(1)")]
    glyphs += _word("上", 40, font=song)
    assert inline_text("信息站 (1) 上", glyphs, [], _math_glyph, 10.0) is None
    glyphs = [raised(c, 4 * k) for k, c in enumerate("(1)")] + _word("网址：", 14, font=song)
    assert inline_text("(1)网址：", glyphs, [], _math_glyph, 10.0) is None
    assert not is_math_font("XITS-Bold") and not is_math_font("XITS-Regular")
    assert is_math_font("XITSMath-Regular") and is_math_font("CMMI10")
    assert inline_text("GRE", _word("GRE", 0, font="XITS-Bold"), [], _math_glyph, 10.0) is None


def test_one_sign_over_and_over_makes_no_display_formula():
    """A table's column of "•" marks (a text font's bullets, a row a line, no prose beside them) is no
    display formula; the same column holding letters is one, and so are signs of more than one kind."""
    from jocr.layout.formulas import find_formulas
    from jocr.lines.types import Line

    def column(texts):
        glyphs, lines = [], []
        for r, text in enumerate(texts):
            g = _glyph(text, 440, 150 + 13 * r, 9.0, "TeXGyrePagella-Regular")
            g.raw = text
            glyphs.append(g)
            lines.append(Line(text, (440, 144 + 13 * r, 446, 153 + 13 * r)))
        return glyphs, lines

    glyphs, lines = column(["•", "•", "•", "•"])
    assert find_formulas(glyphs, [], lines) == []
    glyphs, lines = column(["α", "•", "β"])
    assert find_formulas(glyphs, [], lines) != []
    glyphs, lines = column(["⇒", "⇐"])
    assert find_formulas(glyphs, [], lines) != []
