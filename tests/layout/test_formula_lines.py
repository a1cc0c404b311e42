"""Display formulas among a pixel page's OCR lines (`jocr.layout.formula_lines`)."""

from __future__ import annotations

from jocr.bbox import union
from jocr.layout.formula_lines import formula_regions, mark_formulas
from jocr.layout.render import page_markdown
from jocr.layout.tree import FORMULA, HEADING, PARAGRAPH, TABLE, Block, PageTree, TreeLine
from jocr.lines.types import Line

PROSE = "We can build larger regions out of pieces, by summing smaller integrals over them"


def _line(text, x0, y0, x1, conf=0.99) -> Line:
    return Line(text, (x0, y0, x1, y0 + 30), confidence=conf)


def _page(*middle: Line) -> list[Line]:
    """Prose lines 100-900 px wide above and below the given lines."""
    top = [_line(PROSE, 100, 100 + 40 * k, 900) for k in range(3)]
    bottom_y = max([ln.box[3] for ln in middle], default=220) + 20
    bottom = [_line(PROSE, 100, bottom_y + 40 * k, 900) for k in range(3)]
    return top + list(middle) + bottom


def test_a_centred_line_of_signs_between_prose_is_a_formula_and_prose_is_not():
    lines = _page(_line("x = r cos θ", 430, 230, 570))
    ((box, members),) = formula_regions(lines)
    assert members == [3] and box[0] < 430 and box[2] > 570
    assert formula_regions(_page(_line("the value of the sum over all parts", 300, 230, 700))) == []
    assert formula_regions(_page(_line("E = mc2", 100, 230, 200))) == []  # flush left: not set apart


def test_stacked_pieces_are_one_formula_and_rows_with_relations_are_two():
    fraction = _page(_line("∂f", 480, 230, 520), _line("∂a", 480, 262, 520))
    assert [m for _, m in formula_regions(fraction)] == [[3, 4]]
    rows = _page(_line("x = r cos θ", 430, 230, 570), _line("y = r sin θ", 430, 262, 570))
    assert [m for _, m in formula_regions(rows)] == [[3], [4]]
    side_by_side = _page(_line("A =", 400, 230, 450), _line("∫ f dx", 470, 230, 560))
    assert [m for _, m in formula_regions(side_by_side)] == [[3, 4]]


def test_limits_in_script_size_under_a_big_operator_join_it_even_with_a_relation():
    lines = _page(
        Line("Π(Σ bij xi) = (Π xi) per B", (430, 230, 760, 300), confidence=0.9),
        Line("i∈n j∈n", (430, 290, 530, 328), confidence=0.9),
        Line("i∈n", (610, 290, 660, 328), confidence=0.9),
    )
    assert [m for _, m in formula_regions(lines)] == [[3, 4, 5]]
    rows = _page(_line("x = r cos θ", 430, 230, 570), _line("y = r sin θ", 430, 262, 570))  # same size
    assert [m for _, m in formula_regions(rows)] == [[3], [4]]


def test_fragments_read_apart_join_the_formula_beside_or_above_them_and_short_words_do_not():
    operator = _page(_line("d", 440, 230, 462), _line("c= 0", 520, 230, 578))  # "d/dx c = 0" read in pieces
    assert [m for _, m in formula_regions(operator)] == [[3, 4]]
    fraction = _page(_line("1", 620, 230, 640), _line("f(x) = e−x2/2", 520, 262, 700))
    assert [m for _, m in formula_regions(fraction)] == [[3, 4]]
    cells = _page(_line("≈ Times", 430, 230, 560), _line("ptm", 600, 230, 660))  # a table row's cells
    assert formula_regions(cells) == []


def test_a_display_as_wide_as_its_column_is_a_formula_when_it_holds_signs_and_no_word():
    wide = _page(_line("det K(t1, t1, ..., tn) = ∑(−1)|I| tn−|I| ∏ ti", 110, 230, 890))
    assert [m for _, m in formula_regions(wide)] == [[3]]
    prose = _page(_line("where n > 0 and the sum of x + y over all α is ≤ 1", 110, 230, 890))
    assert formula_regions(prose) == []


def test_an_equation_number_is_not_a_formula_of_its_own():
    lines = _page(_line("x = r cos θ", 430, 230, 570), _line("(3.1)", 850, 230, 900))
    assert [m for _, m in formula_regions(lines)] == [[3]]


def _tree(unit: str = "px") -> PageTree:
    texts = [
        (PROSE, 100, 100, 900),
        (PROSE, 100, 140, 900),
        ("x = r cos θ", 430, 180, 570),
        (PROSE, 100, 220, 900),
    ]
    lines = [TreeLine(t, (x0, y0, x1, y0 + 30), source="ocr", confidence=0.99) for t, x0, y0, x1 in texts]
    first = Block(PARAGRAPH, text=" ".join(t for t, *_ in texts), lines=lines, bbox=(100, 100, 900, 250))
    last = Block(PARAGRAPH, text=PROSE, lines=[TreeLine(PROSE, (100, 300, 900, 330), source="ocr")])
    tree = PageTree(width=1000, height=1400, unit=unit, blocks=[first, last])
    tree.numbered()
    return tree


def test_a_formula_run_into_a_paragraph_is_cut_out_and_the_prose_kept_around_it():
    tree = _tree()
    assert mark_formulas(tree) == 1
    assert [b.type for b in tree.blocks] == [PARAGRAPH, FORMULA, PARAGRAPH, PARAGRAPH]
    assert [b.order for b in tree.blocks] == [0, 1, 2, 3]
    before, formula, after, _ = tree.blocks
    assert before.text == f"{PROSE} {PROSE}" and after.text == PROSE and formula.text == "x = r cos θ"
    assert formula.latex is None and formula.bbox[0] < 430 < 570 < formula.bbox[2]
    assert page_markdown(tree).split("\n\n")[1] == "x = r cos θ"  # its OCR text until it is read


def test_an_equation_number_beside_a_formula_is_left_out_and_one_elsewhere_kept():
    tree = _tree()
    number = Block(HEADING, text="(8)", lines=[TreeLine("(8)", (850, 182, 890, 208), source="ocr")])
    cited = Block(PARAGRAPH, text="(9)", lines=[TreeLine("(9)", (850, 300, 890, 330), source="ocr")])
    tree.blocks[1:1] = [number]
    tree.blocks.append(cited)
    assert mark_formulas(tree) == 1
    texts = [b.text for b in tree.blocks]
    assert "(8)" not in texts and "(9)" in texts and FORMULA in [b.type for b in tree.blocks]


def test_a_scanned_pdf_page_is_looked_at_and_a_text_layer_page_is_not():
    scanned = _tree("pt")  # OCR lines in points: a PDF page without a usable text layer
    assert mark_formulas(scanned) == 1 and FORMULA in [b.type for b in scanned.blocks]
    layer = _tree("pt")
    for block in layer.blocks:
        for tl in block.lines:
            tl.source = "textlayer"
    assert mark_formulas(layer) == 0 and len(layer.blocks) == 2


def test_code_markup_numbers_alone_and_table_cells_are_not_formulas():
    for text in ("> x <- c(10.4, 5.6)", "\\usepackage{textcomp}", "3/92", "2021/12/09", "DNS (BIND)"):
        assert formula_regions(_page(_line(text, 400, 230, 600))) == [], text
    cells = _page(_line("≈ Times", 430, 230, 560), _line("ptm", 700, 230, 760))  # a table row's cells
    assert formula_regions(cells) == []


def test_a_prime_read_as_an_apostrophe_is_math_and_a_quoted_word_is_not():
    prime = _page(_line("α' = max(a, c)", 430, 230, 570))
    assert [m for _, m in formula_regions(prime)] == [[3]]
    quoted = _page(_line("x = 'yes'", 430, 230, 570))  # code: a string
    assert formula_regions(quoted) == []


def test_prose_in_the_next_column_on_the_same_row_does_not_make_a_formula_a_table_row():
    left = [_line(PROSE[:40], 100, 100 + 40 * k, 480) for k in range(3)]
    left += [_line("x = r cos θ", 200, 230, 360)]
    left += [_line(PROSE[:40], 100, 290 + 40 * k, 480) for k in range(3)]
    right = [_line(PROSE[:40], 560, 100 + 40 * k, 940) for k in range(8)]  # one of them on the formula's row
    ((_, members),) = formula_regions(left + right)
    assert members == [3]
    beside = _page(_line("x = r cos θ", 430, 230, 570), _line("cells", 640, 230, 700))  # in its column
    assert formula_regions(beside) == []


def _table_tree(cells: list[tuple[str, float, float, float]]) -> PageTree:
    """Prose, a table block of the given cells (text, x0, y0, x1), prose."""
    above = [TreeLine(PROSE, (100, 100 + 40 * k, 900, 130 + 40 * k), source="ocr") for k in range(3)]
    below = [TreeLine(PROSE, (100, 330 + 40 * k, 900, 360 + 40 * k), source="ocr") for k in range(3)]
    cell_lines = [TreeLine(t, (x0, y0, x1, y0 + 30), source="ocr", confidence=0.9) for t, x0, y0, x1 in cells]
    blocks = [
        Block(PARAGRAPH, text=PROSE, lines=above, bbox=(100, 100, 900, 210)),
        Block(
            TABLE,
            text=" ".join(c[0] for c in cells),
            lines=cell_lines,
            bbox=union(tl.bbox for tl in cell_lines),
        ),
        Block(PARAGRAPH, text=PROSE, lines=below, bbox=(100, 330, 900, 440)),
    ]
    tree = PageTree(width=1000, height=1400, unit="px", blocks=blocks)
    tree.numbered()
    return tree


def test_a_small_table_of_a_formulas_pieces_becomes_the_formula_and_a_table_it_only_touches_stays():
    # multivar-p08's double integral as OCR read it: the left side, the integrand, the signs under them
    pieces = _table_tree([("f(x,y)dA =", 300, 240, 440), ("f(r cos θ,r sin θ)r dr dθ.", 500, 242, 720),
                          ("JJD", 270, 262, 310)])  # fmt: skip
    assert mark_formulas(pieces) == 1
    assert [b.type for b in pieces.blocks] == [PARAGRAPH, FORMULA, PARAGRAPH]
    table = _table_tree([("Name", 150, 240, 300), ("Value", 600, 240, 700),
                         ("alpha", 150, 272, 300), ("x = r cos θ", 600, 272, 740)])  # fmt: skip
    assert mark_formulas(table) == 0 and [b.type for b in table.blocks] == [PARAGRAPH, TABLE, PARAGRAPH]


def test_a_tilde_relation_is_math_and_a_display_set_close_to_the_prose_is_found():
    tilde = _page(_line("X∼F (n, m)", 430, 230, 570))
    assert [m for _, m in formula_regions(tilde)] == [[3]]
    # a compact page: 2 px between the display and the prose lines (OCR boxes are tight)
    lines = [_line(PROSE, 100, 100 + 32 * k, 900) for k in range(3)]
    lines += [_line("D = ε0 εr E", 430, 196, 570)]
    lines += [_line(PROSE, 100, 228 + 32 * k, 900) for k in range(3)]
    assert [m for _, m in formula_regions(lines)] == [[3]]
    touching = lines[:3] + [_line("D = ε0 εr E", 430, 194, 570)] + lines[4:]  # no gap at all: run into prose
    touching[4] = _line(PROSE, 100, 224, 900)
    assert formula_regions(touching) == []
