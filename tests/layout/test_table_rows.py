"""A model's table checked against the text layer's rows: prose lines around a table go back as text, a
real table's rows stay."""

from __future__ import annotations

from jocr.layout.geometry import Line
from jocr.layout.table_rows import answer_cells, grid_html, table_rows, table_segments

PROSE = "mathpple is a predecessor to mathpazo, using also a set of virtual math fonts to"


def _run(index, x, y, text, mono=False):
    return Line(index, text, (x, y, x + 5.0 * len(text), y + 10), 10.0, mono=mono)


def _table(y=100):
    """Three rows of two or three cells, the table's left edge at x=232."""
    cells = [["package", "roman", "math"], ["times", "Times"], ["mathptm", "Times", "≈ Times"]]
    runs, k = [], 0
    for r, row in enumerate(cells):
        for c, text in enumerate(row):
            runs.append(_run(k, 232 + 80 * c, y + 17 * r, text))
            k += 1
    return runs


def test_rows_are_the_runs_that_share_a_line():
    rows = table_rows(_table())
    assert [[ln.text for ln in row] for row in rows] == [
        ["package", "roman", "math"], ["times", "Times"], ["mathptm", "Times", "≈ Times"]
    ]  # fmt: skip


def test_a_real_table_stands_as_written():
    assert table_segments(_table(), 10.0) is None


def test_prose_lines_after_a_table_go_back_as_text():
    runs = _table()
    n = len(runs)
    runs += [_run(n, 205, 160, "9.3 The package mathpple"), _run(n + 1, 205, 180, PROSE)]
    runs += [_run(n + 2, 224, 200, "•"), _run(n + 3, 250, 200, "The spacing within numbers is too loose.")]
    segments = table_segments(runs, 10.0)
    assert [(is_table, len(rows)) for is_table, rows in segments] == [(True, 3), (False, 3)]
    # the list marker and its line share a row: one row of the text, not a row of cells
    assert [ln.text for ln in segments[1][1][2]] == ["•", "The spacing within numbers is too loose."]


def test_short_lines_between_rows_stay_in_the_table_and_one_row_is_no_table():
    runs = _table()
    # a short single cell under the table: no prose, the table's last row
    runs.append(_run(len(runs), 232, 151, "utopia"))
    assert table_segments(runs, 10.0) is None
    # prose before a single row of cells: nothing of it is a table
    runs = [_run(0, 205, 80, PROSE), _run(1, 232, 100, "times"), _run(2, 312, 100, "Times")]
    assert [is_table for is_table, _ in table_segments(runs, 10.0)] == [False, False]


def test_code_with_a_comment_set_apart_is_no_row_of_cells():
    runs = [
        _run(0, 193, 100, PROSE),
        _run(1, 193, 120, "set.seed(1)", True),
        _run(2, 300, 120, "# example", True),
    ]
    segments = table_segments(runs, 10.0)
    assert [is_table for is_table, _ in segments] == [False]


def test_grid_html_puts_each_run_in_its_column():
    html = grid_html(table_rows(_table()), 10.0)
    assert html == (
        "<table><tr><td>package</td><td>roman</td><td>math</td></tr>"
        "<tr><td>times</td><td>Times</td><td></td></tr>"
        "<tr><td>mathptm</td><td>Times</td><td>≈ Times</td></tr></table>"
    )


def _tree_with_header_above():
    """A table whose header row the table pass took in from the headings the model wrote above it."""
    from jocr.layout.tree import Block, PageTree

    old = "<table><tr><td>times</td><td>Times</td></tr><tr><td>utopia</td><td>Utopia</td></tr></table>"
    new = "<table><tr><th>package</th><th>roman</th></tr>" + old.removeprefix("<table>")
    blocks = [
        Block("paragraph", "Table 4: Obsolete packages", "Table 4: Obsolete packages", (72, 60, 300, 70)),
        Block("heading", "package roman", "### package roman", (100, 80, 200, 90)),
        Block("table", "", new, (100, 95, 300, 130), html=new),
        Block("paragraph", "package roman again below", "package roman again below", (72, 140, 300, 150)),
    ]
    return PageTree(612, 792, blocks=blocks), old


def test_a_header_row_the_table_pass_took_in_is_not_printed_above_the_table_too():
    from jocr.layout.table_rows import headers_taken_in

    tree, old = _tree_with_header_above()
    table = tree.blocks[2]
    gone = headers_taken_in(tree, {id(table): old})
    assert [b.text for b in gone] == ["package roman"]
    # the caption (words the table does not hold) and the paragraph below stay
    assert [b.type for b in tree.blocks] == ["paragraph", "table", "paragraph"]
    assert tree.blocks[1].bbox == (100, 80, 300, 130)


def test_blocks_above_a_table_the_pass_left_as_it_was_stay():
    from jocr.layout.table_rows import headers_taken_in

    tree, _ = _tree_with_header_above()
    table = tree.blocks[2]
    assert headers_taken_in(tree, {id(table): table.html}) == []
    # a block holding a word the pass did not bring in stays too
    tree.blocks[1].text = "package roman fonts"
    assert headers_taken_in(tree, {id(table): "<table></table>"}) == []
    assert len(tree.blocks) == 4


def test_answer_cells_are_the_runs_each_cell_names():
    table = "<table><tr><th>@1</th><th>@2 @3</th></tr><tr><td>@4@5</td><td></td></tr></table>"
    assert answer_cells(table) == [[[1], [2, 3]], [[4, 5], []]]


def test_a_line_of_prose_the_text_layer_broke_at_its_punctuation_is_no_row_of_cells():
    # a Chinese line in three touching runs ("，" and a closing quote set apart), under a real table
    runs = _table()
    n = len(runs)
    line, x = [], 232.0
    pieces = ["本宏包还支持按照 Microsoft Word 进行“多倍行距", "”", "排版，它依赖于下面这些宏包"]
    for k, text in enumerate(pieces):
        line.append(_run(n + k, x, 160, text))
        x = line[-1].x1 + 2.0  # 0.2 em apart
    segments = table_segments(runs + line, 10.0)
    assert segments is not None and segments[-1][0] is False
    assert [ln.text for row in segments[-1][1] for ln in row] == [ln.text for ln in line]
