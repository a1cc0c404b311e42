"""A page's tables scored against its true tables (jocr.checks.table_pages)."""

from jocr.checks.table_pages import html_tables, score_page

A = "<table><tr><td>Gnat</td><td>13.65</td></tr><tr><td>Emu</td><td>33.33</td></tr></table>"
B = "<table><tr><td>hello</td><td>mail</td></tr><tr><td>z</td><td>other</td></tr></table>"


def test_tables_are_matched_whatever_their_order():
    result = score_page([A, B], f"text\n\n{B}\n\nmore\n\n{A}")
    assert result.found == 2 and result.missed == 0 and result.false == 0
    assert [s[0] for s in result.scores] == [1.0, 1.0]


def test_a_missed_table_scores_zero_and_a_spare_one_is_false():
    result = score_page([A, B], A)
    assert (result.found, result.missed, result.false) == (1, 1, 0)
    assert sorted(s[0] for s in result.scores) == [0.0, 1.0]
    spare = score_page([], f"{A}\n\n{B}")
    assert (spare.found, spare.missed, spare.false, spare.scores) == (0, 0, 2, [])


def test_html_tables_finds_each_table():
    assert html_tables("x <table>1</table> y <TABLE>2</TABLE>") == ["<table>1</table>", "<TABLE>2</TABLE>"]
    assert html_tables("") == []
