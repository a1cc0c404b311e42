"""Tables found in a page's geometry (jocr.layout.tables_detect): ruled stacks, aligned runs, and prose
in two columns left alone."""

from PIL import Image, ImageDraw

from jocr.layout.tables import Piece, Rule
from jocr.layout.tables_detect import DetectConfig, aligned_regions, find_tables, ruled_regions
from jocr.layout.tables_pages import image_page_tables, page_with_tables
from jocr.layout.tree import PARAGRAPH, TABLE, Block, PageTree, TreeLine

ROWS = [
    ["Item", "Mass", "Year"],
    ["Gene", "1.5 kg", "1990"],
    ["Plan", "20.25 kg", "2001"],
    ["Nurse", "3 kg", "1977"],
]
PROSE = "A paragraph of prose that runs across the whole width of the column, as prose does."


def table_pieces(top: float = 100) -> list[Piece]:
    out = []
    for r, row in enumerate(ROWS):
        for c, text in enumerate(row):
            y = top + r * 14
            out.append(Piece(text, (20 + c * 80, y, 20 + c * 80 + 6 * len(text), y + 9)))
    return out


def page_pieces() -> list[Piece]:
    above = [Piece(PROSE, (10, 20 + 14 * k, 400, 29 + 14 * k)) for k in range(4)]
    below = [Piece(PROSE, (10, 200 + 14 * k, 400, 209 + 14 * k)) for k in range(3)]
    return above + table_pieces() + below


def test_booktabs_rules_make_a_region():
    rules = [Rule(15, 97, 260, 97), Rule(15, 112, 260, 112), Rule(15, 154, 260, 154)]
    (region,) = ruled_regions(rules, 9.0, DetectConfig())
    assert region[1] < 97 < 154 < region[3] and region[0] < 15 and region[2] > 260
    (table,) = find_tables(page_pieces(), rules)
    assert (table.n_rows, table.n_cols) == (4, 3) and "<th>Item</th>" in table.html


def test_unruled_table_from_aligned_columns_between_paragraphs():
    (region,) = aligned_regions(page_pieces(), 9.0, DetectConfig())
    assert region[1] == 100 and region[3] == 100 + 3 * 14 + 9
    (table,) = find_tables(page_pieces(), [])
    assert (table.n_rows, table.n_cols) == (4, 3)
    assert "<td>20.25 kg</td>" in table.html


def test_an_unruled_table_with_a_narrow_column_gap_is_found():
    """A two-column list of manuals (names, then titles) whose column gap is 0.8 of an OCR line's height
    (OCR boxes are taller than the letters: about an em) is a table."""
    names = ["'R-FAQ'", "'R-intro'", "'R-data'", "'R-admin'", "'R-exts'"]
    pieces = []
    for r, name in enumerate(names):
        y = 100 + 45 * r
        pieces.append(Piece(name, (185, y, 185 + 11 * len(name), y + 26)))
        pieces.append(Piece(f"The manual {r}", (309, y, 480, y + 26)))
    (table,) = find_tables(pieces, [])
    assert (table.n_rows, table.n_cols) == (5, 2) and "<td>'R-admin'</td>" in table.html


def test_two_columns_of_prose_are_no_table():
    left = [
        Piece("words of a sentence running on and on " * 2, (10, 20 + 14 * k, 290, 29 + 14 * k))
        for k in range(12)
    ]
    right = [
        Piece("more words of another sentence and on " * 2, (310, 20 + 14 * k, 590, 29 + 14 * k))
        for k in range(12)
    ]
    assert find_tables(left + right, []) == []


def test_lone_rules_make_no_region():
    rules = [Rule(15, 97, 260, 97), Rule(300, 300, 500, 300)]
    assert ruled_regions(rules, 9.0, DetectConfig()) == []


def _tree() -> PageTree:
    def block(pieces):
        lines = [TreeLine(p.text, p.box, "ocr") for p in pieces]
        text = " ".join(p.text for p in pieces)
        box = (min(p.box[0] for p in pieces), min(p.box[1] for p in pieces),
               max(p.box[2] for p in pieces), max(p.box[3] for p in pieces))  # fmt: skip
        return Block(type=PARAGRAPH, text=text, markdown=text, bbox=box, lines=lines)

    rows = table_pieces()
    blocks = [block([Piece(PROSE, (10, 20, 400, 29))])] + [block(rows[k : k + 3]) for k in range(0, 12, 3)]
    return PageTree(width=500, height=700, unit="px", blocks=blocks).numbered()


def test_image_page_pass_puts_a_table_block_into_the_tree():
    tree = _tree()
    image = Image.new("RGB", (500, 700), "white")
    assert image_page_tables(tree, image) == 1
    assert [b.type for b in tree.blocks] == [PARAGRAPH, TABLE]
    assert "<td>Nurse</td>" in tree.blocks[1].html and tree.blocks[1].lines


def test_page_with_tables_takes_an_image_page():
    image = Image.new("RGB", (1000, 1400), "white")  # twice the tree's size: rules mapped back by 2
    draw = ImageDraw.Draw(image)
    for y in (97, 112, 154):
        draw.line((30, 2 * y, 520, 2 * y), fill="black", width=2)
    markdown = page_with_tables(_tree(), "unchanged", image=image)
    assert markdown.startswith(PROSE) and "<th>Item</th>" in markdown
    assert page_with_tables(None, "unchanged", image=image) == "unchanged"


def test_prose_or_a_caption_between_rules_parts_two_tables():
    first = [Rule(100, 100, 300, 100), Rule(100, 115, 300, 115), Rule(100, 160, 300, 160)]
    second = [Rule(100, 250, 300, 250), Rule(100, 265, 300, 265), Rule(100, 310, 300, 310)]
    prose = [Piece("a line of the page's prose, wider than the tables", (40, 200, 560, 209))]
    assert len(ruled_regions(first + second, 9.0, DetectConfig(), prose)) == 2
    caption = [Piece("Table 6. Example of cells", (130, 200, 270, 209))]
    assert len(ruled_regions(first + second, 9.0, DetectConfig(), caption)) == 2
    rows = [Piece("Gene", (110, 200, 140, 209)), Piece("1.5 kg", (200, 200, 240, 209))]
    assert len(ruled_regions(first + second, 9.0, DetectConfig(), rows)) == 1  # rows between: one table


def test_a_charts_axis_labels_between_rules_part_two_tables():
    """A sidebar's key-data table under its section's rule, then the next section's rule over a chart whose
    axis values ("10%", "5%", "0%") stand alone line after line: the rules above and below the chart do
    not join the table's. A wrapped cell's long lines, or two short lone lines, do not part them."""
    first = [Rule(100, 100, 300, 100), Rule(100, 150, 300, 150)]
    second = [Rule(100, 260, 300, 260), Rule(100, 300, 300, 300)]
    rows = [Piece("Total", (110, 120, 140, 129)), Piece("2,741", (250, 120, 290, 129))]
    axis = [
        Piece(t, (105, 170 + 15 * k, 125, 179 + 15 * k)) for k, t in enumerate(["10%", "5%", "0%", "-5%"])
    ]
    assert len(ruled_regions(first + second, 9.0, DetectConfig(), rows + axis)) == 2
    wrapped = [
        Piece("a cell's text wrapped over lines", (105, 170 + 15 * k, 250, 179 + 15 * k)) for k in range(4)
    ]
    assert len(ruled_regions(first + second, 9.0, DetectConfig(), rows + wrapped)) == 1
    assert len(ruled_regions(first + second, 9.0, DetectConfig(), rows + axis[:2])) == 1


def test_a_wide_cell_beside_its_row_label_does_not_part_the_rules():
    """A table whose second column holds sentences (a list of document classes) has cells nearly as wide
    as its rules; with the row's label beside it such a piece is a cell, not a line of prose between two
    tables, and the top, middle and bottom rules stay one region. The same piece alone on its line
    parts them."""
    rules = [Rule(100, 100, 500, 100), Rule(100, 160, 500, 160), Rule(100, 220, 500, 220)]
    rows = []
    for k, y in enumerate((110, 130, 170, 190)):
        rows.append(Piece(f"name{k}", (105, y, 150, y + 9)))
        rows.append(Piece("a sentence describing it, running nearly the rules' width", (160, y, 495, y + 9)))
    (region,) = ruled_regions(rules, 9.0, DetectConfig(), rows)
    assert region[1] < 100 and region[3] > 220
    alone = [p for p in rows if not p.text.startswith("name")]
    assert len(ruled_regions(rules, 9.0, DetectConfig(), alone)) == 0


def test_a_partial_rule_joins_its_tables_rules():
    """Two `\\cline` rules under a spanning head made a second region (a second table) inside the first."""
    full = [Rule(100, 100, 400, 100), Rule(100, 130, 400, 130), Rule(100, 190, 400, 190)]
    partial = [Rule(250, 115, 400, 115), Rule(250, 160, 400, 160)]
    (region,) = ruled_regions(sorted(full + partial, key=lambda r: r.y0), 9.0, DetectConfig())
    assert region[0] < 100 and region[1] < 100 and region[2] > 400 and region[3] > 190


def test_a_rule_through_a_line_of_text_is_no_table_rule():
    """A blurred photo's letters merge into a dark run as long as a rule; with the real rule below it
    made a ruled region over the paragraph."""
    rules = [Rule(100, 104, 300, 104), Rule(100, 140, 300, 140)]
    words = [Piece("a paragraph line whose letters merged", (90, 100, 310, 109))]
    assert len(ruled_regions(rules, 9.0, DetectConfig())) == 1
    assert ruled_regions(rules, 9.0, DetectConfig(), words) == []


def test_a_page_head_rule_above_a_table_is_not_its_rule():
    """A running head's rule, longer than the table's rules, with the table's caption between them: the
    region starts at the table's top rule."""
    head = Rule(50, 20, 600, 20)
    rules = [head, Rule(150, 100, 450, 100), Rule(150, 115, 450, 115), Rule(150, 160, 450, 160)]
    caption = [Piece("表 1.2: 引擎与格式", (220, 80, 380, 90))]
    for pieces in ([], caption):
        (region,) = ruled_regions(rules, 9.0, DetectConfig(), pieces)
        assert 95 < region[1] < 100 and region[0] > 140 and region[2] < 460


def test_column_rules_that_start_and_end_together_make_a_grid():
    """A table whose row rules are lost among a notepad's ruled lines keeps its column borders: four
    vertical rules from the first row's top to the last row's bottom (one drawn a little short) with
    text between them make a region, read as the table; a box's two sides, rules of other extents, short
    rules, or rules with no text between them (a figure's strokes) do not. A grid whose row rules make a
    stack is that stack's region alone."""
    borders = [Rule(x, 96 + (6 if x == 95 else 0), x, 155) for x in (15, 95, 175, 255)]
    pieces = page_pieces()
    (region,) = ruled_regions(borders, 9.0, DetectConfig(), pieces)
    assert region[0] < 15 < 255 < region[2] and region[1] < 97 and 155 < region[3] < 158
    (table,) = find_tables(pieces, borders)
    assert (table.n_rows, table.n_cols) == (4, 3) and "Nurse" in table.html
    assert ruled_regions(borders, 9.0, DetectConfig()) == []  # no text between them
    assert ruled_regions(borders[::3], 9.0, DetectConfig(), pieces) == []  # a box's two sides
    ragged = [Rule(15, 96, 15, 155), Rule(95, 40, 95, 155), Rule(175, 96, 175, 300)]
    assert ruled_regions(ragged, 9.0, DetectConfig(), pieces) == []
    short = [Rule(x, 96, x, 110) for x in (15, 95, 175)]
    assert ruled_regions(short, 9.0, DetectConfig(), pieces) == []
    row_rules = [Rule(12, y, 258, y) for y in (97, 112, 154)]
    (stack,) = ruled_regions(row_rules, 9.0, DetectConfig(), pieces)
    assert ruled_regions(row_rules + borders, 9.0, DetectConfig(), pieces) == [stack]
