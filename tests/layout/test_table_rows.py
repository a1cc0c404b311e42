"""A model's table checked against the text layer's rows: prose lines around a table go back as text, a
real table's rows stay."""

from __future__ import annotations

from jocr.layout.geometry import Line
from jocr.layout.table_rows import grid_html, table_rows, table_segments

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
