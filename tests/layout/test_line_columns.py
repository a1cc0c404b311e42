"""Reading order of OCR'd pages (`jocr.layout.line_columns`): a gutter narrower than the OCR boxes' height,
a page that lies askew, columns set close with flush left edges."""

from __future__ import annotations

import math

from jocr.layout.geometry import body_size, source_lines
from jocr.layout.line_columns import min_gutter, page_skew, reading_columns, reading_order
from jocr.lines.types import RAPIDOCR, Line

LEFT = [f"left column line {k} of the running text here" for k in range(12)]
RIGHT = [f"right column line {k} of the running text there" for k in range(12)]


def two_columns(gap: float, slope: float = 0.0, char: float = 10.0, height: float = 31.0) -> list[Line]:
    """Two columns of OCR lines (each box as long as its text, `char` pixels a character, its height the
    line's size) `gap` pixels apart, the page sheared by `slope` (x shift per pixel down)."""
    width = char * max(len(t) for t in LEFT)
    lines = []
    for k, (a, b) in enumerate(zip(LEFT, RIGHT, strict=True)):
        y = 100 + 40 * k
        shift = slope * y
        for x, text in ((100 + shift, a), (100 + width + gap + shift, b)):
            lines.append(Line(text, (x, y, x + char * len(text), y + height), height, 0, 0.9, RAPIDOCR))
    return lines


def columns_read(lines: list[Line]) -> list[str]:
    items = source_lines(lines, RAPIDOCR)
    return [" / ".join(ln.text for ln in group) for group in reading_order(items, body_size(items))]


def test_a_gutter_narrower_than_the_boxes_height_parts_columns():
    lines = two_columns(gap=20)  # 20 px: two characters, under 0.9 box heights (28 px)
    items = source_lines(lines, RAPIDOCR)
    assert min_gutter(items, body_size(items)) < 20
    assert columns_read(lines) == [" / ".join(LEFT), " / ".join(RIGHT)]


def test_a_page_askew_is_read_upright():
    slope = math.tan(math.radians(1.2))  # the right column's gutter edge slides 5.5 px over the page
    lines = two_columns(gap=20, slope=slope)
    items = source_lines(lines, RAPIDOCR)
    assert 0 < page_skew(items, body_size(items)) <= 1.5 * slope  # sheared the way the page lies
    assert columns_read(lines) == [" / ".join(LEFT), " / ".join(RIGHT)]


def test_text_layer_lines_are_never_sheared():
    lines = [Line(ln.text, ln.box, 12.0, 400, None, "textlayer") for ln in two_columns(gap=20, slope=0.02)]
    items = source_lines(lines, "textlayer")
    assert page_skew(items, body_size(items)) == 0.0


def test_columns_set_close_part_at_a_flush_left_edge():
    # three columns 4 px apart (a newspaper read from a small image): the middle and right columns'
    # lines all start at one x, which closes the narrow gap
    texts = [[f"column {c} line {k} of the news story" for k in range(10)] for c in range(3)]
    lines = []
    for c, column in enumerate(texts):
        for k, text in enumerate(column):
            x = 40 + c * (6 * 36 + 4)
            length = 6 * (len(text) - (k % 3))  # ragged right, never past the column
            lines.append(Line(text, (x, 60 + 12 * k, x + length, 70 + 12 * k), 10.0, 0, 0.9, RAPIDOCR))
    assert columns_read(lines) == [" / ".join(column) for column in texts]


def test_a_column_of_one_box_parts_when_few_rows_are_asked_for():
    # two boxes side by side (a region each, `jocr.layout.regions`): lines need three rows a side to part
    texts = ["a region of prose on the left side", "a region of prose on the right side"]
    lines = [
        Line(texts[0], (100, 100, 440, 400), 31.0, 0, 0.9, RAPIDOCR),
        Line(texts[1], (480, 100, 820, 400), 31.0, 0, 0.9, RAPIDOCR),
    ]
    items = source_lines(lines, RAPIDOCR)
    size = 31.0
    assert [[ln.text for ln in g] for g in reading_columns(items, size)] == [texts]
    assert [[ln.text for ln in g] for g in reading_columns(items, size, min_rows=1)] == [
        [texts[0]],
        [texts[1]],
    ]


def groups_read(lines: list[Line]) -> list[list[str]]:
    items = source_lines(lines, RAPIDOCR)
    return [[ln.text for ln in group] for group in reading_order(items, body_size(items))]


def cjk_columns(gap: float, top: float = 100.0, columns: int = 3, rows: int = 10) -> list[list[Line]]:
    """`columns` columns of Chinese OCR lines, 13 characters of 13 px each a line (a newspaper's narrow
    column), `gap` px apart, each line's box 14 px tall at a 16 px pitch."""
    out = []
    for c in range(columns):
        x = 20 + c * (12 * 13 + gap)
        column = []
        for k in range(rows):
            text = f"第{'一二三四'[c]}栏第{k:02d}行的新闻正文"
            column.append(
                Line(text, (x, top + 16 * k, x + 13 * len(text), top + 16 * k + 14), 14.0, 0, 0.9, RAPIDOCR)
            )
        out.append(column)
    return out


def test_narrow_chinese_columns_are_prose_and_part():
    # 11 CJK characters and two digits print as wide as 24 Latin letters: prose, though under 15 characters
    columns = cjk_columns(gap=16)
    assert all(len(ln.text) < 15 for column in columns for ln in column)
    assert groups_read([ln for column in columns for ln in column]) == [
        [ln.text for ln in c] for c in columns
    ]


def test_columns_under_a_headline_are_not_read_across():
    # a headline across three columns, well above them: cut off first; the first column read under it,
    # the next columns after it, each on its own (not row by row with the first)
    columns = cjk_columns(gap=16, top=140)
    headline = Line("财政助农福建茶农迎来又一春", (30, 80, 470, 120), 40.0, 0, 0.9, RAPIDOCR)
    lines = [headline] + [ln for column in columns for ln in column]
    first, *others = [[ln.text for ln in c] for c in columns]
    assert groups_read(lines) == [[headline.text, *first], *others]


def test_columns_set_close_under_a_headline_part_at_their_flush_edges():
    # columns 8 px apart (under the gutter width) right under a headline that crosses both gutters, with no
    # gap to cut it off at: the headline is read first, then each column
    columns = cjk_columns(gap=8, top=124, rows=14)
    headline = Line("二十一年砺神剑二十一次一级营", (40, 100, 440, 122), 22.0, 0, 0.9, RAPIDOCR)
    lines = [headline] + [ln for column in columns for ln in column]
    first, *others = [[ln.text for ln in c] for c in columns]
    assert groups_read(lines) == [[headline.text, *first], *others]


def _grid(columns: list[list[str]], x_step: float = 220.0, char: float = 10.0) -> list[Line]:
    """OCR lines of `columns` laid side by side, row k of every column at one height (a slide's lists)."""
    lines = []
    for c, column in enumerate(columns):
        for k, text in enumerate(column):
            x, y = 60 + c * x_step, 200 + 36 * k
            lines.append(Line(text, (x, y, x + char * len(text), y + 27), 27.0, 0, 0.9, RAPIDOCR))
    return lines


def test_lists_side_by_side_are_read_one_after_the_other():
    # a slide's bulleted list beside a numbered one, their items at the same heights: no prose either
    # side, so without the list markers the two read row by row as a table
    bullets = ["Items", "• Milk", "• Eggs", "• Potatos"]
    numbers = ["Enumerations", "1. First,", "2. Second and", "3. Last."]
    assert columns_read(_grid([bullets, numbers])) == [" / ".join(bullets), " / ".join(numbers)]


def test_a_list_with_values_beside_it_stays_one_group():
    # a price list: the values beside the items carry no list marker, so the two are not parted (the
    # group's rows are then read whole, item and value)
    items = ["• Milk", "• Eggs", "• Potatos", "• Bread"]
    values = ["1.20", "2.40", "0.90", "3.10"]
    assert len(columns_read(_grid([items, values], x_step=160))) == 1


def _placed(items: list[tuple[float, float, str]], char: float = 12.0, height: float = 20.0) -> list[Line]:
    """OCR lines at (x, y), each box as long as its text."""
    return [
        Line(text, (x, y, x + char * len(text), y + height), height, 0, 0.9, RAPIDOCR) for x, y, text in items
    ]


def test_a_sidebar_beside_the_body_is_read_apart():
    # a slide: a navigation sidebar of short entries, 26 px apart, beside the body's short items, 41 px
    # apart; no prose either side and rows that mostly do not line up: columns set apart, not a table
    nav = [(10, 190 + 26 * k, f"Part {k}") for k in range(12)]
    body = [(200, 200 + 41 * k, f"• Item {k}") for k in range(6)]
    groups = columns_read(_placed(nav + body))
    assert groups == [" / ".join(t for _, _, t in nav), " / ".join(t for _, _, t in body)]


def test_a_table_whose_rows_line_up_stays_one_group():
    # a table's columns hold no prose either, but its cells stand side by side row for row
    names = [(10, 200 + 30 * k, f"Name {k}") for k in range(8)]
    values = [(200, 200 + 30 * k, f"{k}.50") for k in range(8)]
    assert len(columns_read(_placed(names + values))) == 1


PROSE = [
    "Thus the designer of a new system must not only be the implementer and first",  # 0
    "large-scale user, and write the first user manual.",  # 1 ends short
    "The separation of any of these four components would have hurt the system",  # 2
    "significantly, and literally hundreds of improvements would never have been",  # 3
    "made, because nobody would have thought of them or perceived why they matter",  # 4
    "so the work stayed in one pair of hands until it was done.",  # 5 ends short
    "But a system cannot be successful if it is too strongly influenced by one person",  # 6
    "alone; the real test begins as others use it.",  # 7 ends short
]


def _body_and_notes(notes: list[tuple[int, str]], side: str = "right") -> list[Line]:
    """Prose lines 40 px apart (10 px a character; a short line ends its paragraph) and notes of one word
    beside given prose lines, in the margin at `side`."""
    body_x = 300 if side == "left" else 50
    items = [(body_x, 100 + 40 * k, text) for k, text in enumerate(PROSE)]
    note_x = 110 if side == "left" else 1000
    items += [(note_x, 100 + 40 * k + 5, word) for k, word in notes]
    return _placed(items, char=10.0, height=30.0)


def test_notes_in_the_margin_go_after_the_paragraph_they_stand_beside():
    # a tab of names down the right margin beside running prose was read row by row with it and taken
    # for a table; each run of notes (rows a line apart at most) now follows the paragraph it stands
    # beside, and no paragraph is cut
    groups = columns_read(_body_and_notes([(0, "Tufte"), (1, "Knuth"), (3, "Reich")]))
    assert groups == [
        " / ".join(PROSE[:2]),
        "Tufte / Knuth",
        " / ".join(PROSE[2:6]),
        "Reich",
        " / ".join(PROSE[6:]),
    ]


def test_notes_in_the_left_margin_follow_their_paragraph_too():
    groups = columns_read(_body_and_notes([(0, "Zapf"), (2, "Knuth"), (6, "Reich")], side="left"))
    assert groups == [
        " / ".join(PROSE[:2]),
        "Zapf",
        " / ".join(PROSE[2:6]),
        "Knuth",
        " / ".join(PROSE[6:]),
        "Reich",
    ]


def test_line_numbers_in_the_margin_go_after_the_text_they_count():
    groups = columns_read(_body_and_notes([(1, "5"), (3, "10"), (6, "15")], side="left"))
    assert groups == [" / ".join(PROSE), "5 / 10 / 15"]


def test_a_column_of_values_beside_prose_lines_that_pair_up_stays_a_table():
    # values that stand beside the prose row for row are a table's column, not notes in a margin
    groups = columns_read(_body_and_notes([(k, f"{k}.50") for k in range(8)]))
    assert len(groups) == 1


def test_notes_beside_a_body_of_two_columns_go_after_both_columns():
    # the body beside the margin has columns of its own: cutting it at the notes' heights would read
    # the columns band by band, so the body is read column by column and the notes come after it
    left = [(300, 100 + 40 * k, f"left column line {k} of the running text here") for k in range(8)]
    right = [(800, 100 + 40 * k, f"right column line {k} of the running text there") for k in range(8)]
    notes = [(110, 105 + 40 * k, word) for k, word in ((0, "Tufte"), (3, "Knuth"), (6, "Reich"))]
    groups = columns_read(_placed(left + right + notes, char=10.0, height=30.0))
    assert groups == [
        " / ".join(t for _, _, t in left),
        " / ".join(t for _, _, t in right),
        "Tufte / Knuth / Reich",
    ]
