"""The table reader (jocr.layout.tables) on hand-built geometry, and its sources (tables_sources) on the
frozen synthetic table set and on drawn images."""

import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from jocr.checks.teds import teds
from jocr.documents.pages import LoadOptions, open_source
from jocr.layout.elements import read_table_region
from jocr.layout.tables import ALIGNMENT, RULES, Piece, Rule, read_table
from jocr.layout.tables_sources import image_rules, line_pieces
from jocr.lines.types import Line, Word

TABLE_SET = Path(__file__).resolve().parents[2] / "data/frozen-test/tables"


def grid(rows, x0=10.0, y0=10.0, w=60.0, h=14.0):
    """Pieces of a table with one piece per cell (None: empty), and the rules of a full grid."""
    pieces = []
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            if text:
                pieces.append(
                    Piece(
                        text,
                        (x0 + c * w + 4, y0 + r * h + 3, x0 + c * w + 4 + 6 * len(text), y0 + r * h + 11),
                    )
                )
    n_rows, n_cols = len(rows), max(len(r) for r in rows)
    rules = [Rule(x0, y0 + r * h, x0 + n_cols * w, y0 + r * h) for r in range(n_rows + 1)]
    rules += [Rule(x0 + c * w, y0, x0 + c * w, y0 + n_rows * h) for c in range(n_cols + 1)]
    return pieces, rules


def test_ruled_grid_reads_cells_and_header():
    pieces, rules = grid([["Name", "Cost"], ["Oslo", "12"], ["Lyon", "7"]])
    table = read_table(pieces, rules)
    assert table.method == RULES
    assert table.html == (
        "<table><tr><th>Name</th><th>Cost</th></tr><tr><td>Oslo</td><td>12</td></tr>"
        "<tr><td>Lyon</td><td>7</td></tr></table>"
    )


def test_missing_rule_makes_a_colspan():
    pieces, rules = grid([["Group", None], ["A", "B"], ["1", "2"]])
    # no rule between the two slots of the first row: one cell spanning both
    rules = [r for r in rules if not (r.x0 == r.x1 == 70.0 and r.y0 < 24)]
    rules.append(Rule(70.0, 24.0, 70.0, 52.0))
    table = read_table(pieces, rules)
    assert '<th colspan="2">Group</th>' in table.html


def test_unruled_columns_from_alignment_and_booktabs_header():
    rows = [
        ["Item", "Mass", "Year"],
        ["Gene", "1.5 kg", "1990"],
        ["Plan", "20.25 kg", "2001"],
        ["Nurse", "3 kg", "1977"],
    ]
    pieces, _ = grid(rows)
    rules = [Rule(10, 9, 190, 9), Rule(10, 24, 190, 24), Rule(10, 67, 190, 67)]  # top, mid, bottom rules
    table = read_table(pieces, rules)
    assert table.method == ALIGNMENT
    assert (table.n_rows, table.n_cols) == (4, 3)
    assert [c.text for c in table.cells if c.header] == ["Item", "Mass", "Year"]


def test_wrapped_cell_joins_the_row_above():
    pieces = [
        Piece("Name", (10, 10, 40, 20)), Piece("Value", (100, 10, 130, 20)),
        Piece("Long label", (10, 30, 70, 40)), Piece("12", (100, 30, 112, 40)),
        Piece("goes on", (22, 41, 60, 51)),
        Piece("Short", (10, 61, 40, 71)), Piece("7", (100, 61, 106, 71)),
        Piece("Other", (10, 81, 40, 91)), Piece("9", (100, 81, 106, 91)),
    ]  # fmt: skip
    table = read_table(pieces, [])
    assert table.n_rows == 4
    assert "Long label goes on" in [c.text for c in table.cells]


def _key_text_rows(rows, text_x: float, char_w: float) -> list[Piece]:
    """Pieces of (key, text) rows 20 apart, the key (None: empty) at x 10 and the text at `text_x`, each
    `char_w` wide a character."""
    pieces = []
    for k, (key, text) in enumerate(rows):
        y = 10 + 20 * k
        if key:
            pieces.append(Piece(key, (10, y, 10 + 6 * len(key), y + 10)))
        pieces.append(Piece(text, (text_x, y, text_x + char_w * len(text), y + 10)))
    return pieces


def test_cell_wrapped_at_the_row_pitch_joins_its_row():
    """A paragraph cell wrapped at its column's width, its second line as far below as rows are (TeX,
    HTML): the rest joins the row; a row whose first cell is empty and whose short cells do not reach
    their column's width stays a row."""
    rows = [("article", "A document class for articles and"), (None, "reports."),
            ("book", "Books, with chapters."), ("proc", "Proceedings, one class.")]  # fmt: skip
    table = read_table(_key_text_rows(rows, text_x=100, char_w=6), [])
    assert table.n_rows == 3
    assert "A document class for articles and reports." in [c.text for c in table.cells]
    formats = [("TeX", "DVI", "tex"), ("pdfTeX", "DVI", "latex"), (None, "PDF", "pdflatex"),
               ("XeTeX", "PDF", "xelatex")]  # fmt: skip
    pieces = [Piece(t, (10 + 80 * c, 10 + 20 * r, 10 + 80 * c + 6 * len(t), 20 + 20 * r))
              for r, row in enumerate(formats) for c, t in enumerate(row) if t]  # fmt: skip
    assert read_table(pieces, []).n_rows == 4


def test_a_ragged_cells_sentence_going_on_joins_its_row():
    """A description cell set ragged right, its first line short of the column's widest: the next line,
    alone in that column and starting lower-case after a sentence that has not ended, is the rest of the
    cell; a new row's capitalised sentence, or a value under a key that is no sentence, stays a row."""
    rows = [("driverfallback", "Its value is used as driver option"), (None, "if the driver is not given."),
            ("dvipdfm", "Sets up hyperref for use with the dvipdfm driver, the widest line."),
            ("dvips", "Sets up hyperref for dvips."), (None, "Another sentence of its own."),
            ("colours", "red"), (None, "blue")]  # fmt: skip
    table = read_table(_key_text_rows(rows, text_x=120, char_w=5), [])
    texts = [c.text for c in table.cells]
    assert "Its value is used as driver option if the driver is not given." in texts
    assert "Another sentence of its own." in texts and "blue" in texts
    assert table.n_rows == 6


def test_no_table_gives_a_note():
    assert read_table([], []).note == "no text in the region"
    one_line = read_table([Piece("Just one line of prose here", (0, 0, 200, 10))], [])
    assert one_line.empty and "no table" in one_line.note
    outside = read_table(
        [Piece("a", (0, 0, 5, 5)), Piece("b", (50, 0, 55, 5))], [], region=(100, 100, 200, 200)
    )
    assert outside.empty


def test_rules_through_the_middle_of_text_are_letter_ink():
    """A blurred photo's word strokes give dark runs as long as a short rule, through the text's middle:
    they are no cell borders (a rule between rows passes beside the text)."""
    rows = [["Animal", "Price", "Note"], ["gnu", "92.50", "stuffed"], ["emu", "33.33", "frozen"]]
    pieces, rules = grid(rows)
    # a photographed row slants: its pieces sit a little lower from left to right
    pieces = [Piece(p.text, (p.box[0], p.box[1] + 0.01 * p.box[0], p.box[2], p.box[3] + 0.01 * p.box[0]))
              for p in pieces]  # fmt: skip
    clean = read_table(pieces, rules)
    price = next(p for p in pieces if p.text == "92.50")
    ink = Rule(price.box[0], price.cy, price.box[2], price.cy)  # between the row's slanted centres
    blurred = read_table(pieces, rules + [ink])
    assert blurred.html == clean.html and clean.n_rows == 3 and clean.n_cols == 3


def test_ocr_words_split_at_column_gaps():
    words = [Word("Oslo", (0, 0, 30, 10)), Word("12", (120, 0, 135, 10)), Word("kg", (138, 0, 150, 10))]
    line = Line("Oslo 12 kg", (0, 0, 200, 10), words=words)
    assert [p.text for p in line_pieces([line])] == ["Oslo", "12 kg"]


def test_image_rules_find_drawn_lines():
    image = Image.new("RGB", (400, 200), "white")
    draw = ImageDraw.Draw(image)
    draw.line((20, 50, 380, 50), fill="black", width=2)
    draw.line((200, 20, 200, 180), fill="black", width=1)
    draw.text((40, 60), "text is no rule", fill="black")
    rules = image_rules(image, scale=2.0, origin=(5.0, 5.0))
    horizontal = [r for r in rules if r.horizontal]
    vertical = [r for r in rules if not r.horizontal]
    assert len(horizontal) == 1 and len(vertical) == 1
    assert horizontal[0].x0 == pytest.approx(15.0, abs=1) and horizontal[0].y0 == pytest.approx(30.0, abs=1)
    assert vertical[0].x0 == pytest.approx(105.0, abs=1)


def test_frozen_table_set_scores_as_measured():
    """TEDS of the reader on the committed set (0.985 measured; one page per style here, the benchmark
    scores all)."""
    rows = [json.loads(line) for line in (TABLE_SET / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and {r["style"] for r in rows} == {"grid", "booktabs", "plain", "wrapped"}
    chosen = {r["style"]: r for r in rows[8:12]}
    scores = []
    for row in chosen.values():
        with open_source(str(TABLE_SET / row["pdf"]), LoadOptions()) as source:
            result = read_table_region(source, 0, tuple(row["region"]))
        assert result.method.startswith("textlayer+")
        scores.append(teds(result.markdown, row["html"]))
    assert min(scores) >= 0.85 and sum(scores) / len(scores) >= 0.95


def test_a_rule_between_equal_groups_of_rows_marks_no_header():
    """Rows above a table's first inner rule are its header (booktabs' midrule) when they are one row or
    fewer than the rows below; a rule parting a list into two groups of three rows marks none."""
    names = ["article", "report", "book", "proc", "slides", "minimal"]
    pieces = []
    for r, name in enumerate(names):
        y = 110 + 20 * r + (10 if r >= 3 else 0)
        pieces += [Piece(name, (105, y, 160, y + 9)), Piece(f"what {name} is for", (200, y, 330, y + 9))]
    rules = [Rule(100, 100, 340, 100), Rule(100, 173, 340, 173), Rule(100, 240, 340, 240)]
    table = read_table(pieces, rules)
    assert table.n_rows == 6 and "<th>" not in table.html
    ys = (110, 130, 160, 180, 200, 220)  # two rows above the midrule (at 150), four below
    pieces = [Piece(p.text, (p.box[0], ys[k // 2], p.box[2], ys[k // 2] + 9)) for k, p in enumerate(pieces)]
    midrule = [Rule(100, 100, 340, 100), Rule(100, 150, 340, 150), Rule(100, 240, 340, 240)]
    header = read_table(pieces, midrule)
    assert "<th>article</th>" in header.html and "<th>report</th>" in header.html
    assert "<th>book</th>" not in header.html


def test_one_header_rule_and_a_column_rule_are_no_grid():
    """A table with a rule under its header and one between its two column groups, and none between its
    body rows, reads each body text line as a row; a fully ruled grid keeps a row per band."""
    rows = [["Abbrev.", "Spelled", "Abbrev.", "Spelled"], ["1,", "thin", "!", "negthin"],
            ["1:", "med", "", "negmed"], [";", "thick", "", "negthick"], ["", "quad", "", ""]]  # fmt: skip
    pieces, full = grid(rows)
    header_rule = Rule(10, 24, 250, 24)
    column_rule = Rule(130, 10, 130, 80)
    table = read_table(pieces, [header_rule, column_rule])
    assert (table.n_rows, table.n_cols) == (5, 4)
    assert [c.text for c in table.cells if c.header] == ["Abbrev.", "Spelled", "Abbrev.", "Spelled"]
    assert read_table(pieces, full).n_rows == 5
    # the same rules around a header and one body row of a wrapped cell: the rule's band is one row
    two = [Piece("Name", (14, 13, 40, 21)), Piece("Note", (74, 13, 100, 21)), Piece("Oslo", (14, 27, 40, 35)),
           Piece("long text", (74, 27, 128, 35)), Piece("wrapped", (74, 38, 120, 46))]  # fmt: skip
    table = read_table(two, [Rule(10, 24, 130, 24), Rule(70, 10, 70, 50)])
    assert table.n_rows == 2 and "long text wrapped" in table.html
