"""What is no table (`jocr.layout.table_cells.not_a_table`): rows of cell texts read from a page's lines that
are prose, numbered lines, code or an index, and the tables that look like them but stay tables."""

from __future__ import annotations

from jocr.layout.table_cells import PROSE, not_a_table


def test_a_table_of_short_cells_is_a_table():
    rows = [["Name", "Size", "Kind"], ["alpha", "12", "file"], ["beta", "40", "folder"]]
    assert not_a_table(rows) == ""


def test_two_rows_of_prose_read_side_by_side_are_prose():
    # two columns of a paper whose gutter the reading order missed: each row two lines of prose
    rows = [
        ["The WGM evanescent field penetration depth into", "here a1 and b1 are scattering coefficients"],
        ["cuprous oxide adjacent crystal is much larger", "of the sphere, see the appendix for details"],
    ]
    assert not_a_table(rows) == PROSE


def test_a_glossary_of_terms_beside_definitions_stays_a_table():
    rows = [
        ["article", "a class for articles in scientific journals, reports"],
        ["report", "a class for longer reports with chapters and parts"],
        ["book", "a class for real books"],
    ]
    assert not_a_table(rows) == ""


def test_line_numbers_beside_text_are_numbered_lines():
    rows = [
        ["57", "", "1. line numbering and watermarking,"],
        ["58", "", "2. improved citations for third party data"],
        ["59", "3. easier construction of matrix figures", ""],
        ["BL", "4. figure set mark up for large collections"],  # an OCR misreading of "60"
        ["61", "5. color mark up to easily enable text"],
    ]
    assert not_a_table(rows) == "its rows are numbered lines"


def test_a_numbered_list_and_a_reference_list_are_numbered_lines():
    items = [["1.", "Install the package"], ["2.", "Run the tests"]]
    assert not_a_table(items) == "its rows are numbered lines"
    refs = [["[1]", "E. Author, J. Phys. 12 (2001) 3"], ["[2]", "F. Author, Nature 3 (2003) 7"]]
    assert not_a_table(refs) == "its rows are numbered lines"


def test_equations_with_their_numbers_are_numbered_lines():
    rows = [["E = mc^2", "(1)"], ["F = ma", "(2)"], ["p = mv", "(3a)"]]
    assert not_a_table(rows) == "its rows are numbered lines"


def test_numbers_that_do_not_count_up_or_beside_numbers_stay_a_table():
    years = [["1990", "Founded in Paris"], ["1995", "Opened an office in Lyon"], ["2001", "Listed"]]
    assert not_a_table(years) == ""
    values = [["1", "12.5"], ["2", "13.1"], ["3", "9.8"]]
    assert not_a_table(values) == ""
    # a numbered table of several columns
    assert not_a_table([["1", "alpha", "file"], ["2", "beta", "folder"]]) == ""


def test_code_cells_are_code_line_numbers_aside():
    listing = [["for i:=maxint to 0 do", "for i:=maxint to 0 do"], ["begin", "begin"], ["end;", "end;"]]
    assert not_a_table(listing) == "its cells are code"
    numbered = [  # the reader joined lines, so a cell holds several line numbers: no markers
        ["247 248", "\\bool_if:NTF \\l__zhlipsum_invalid_range_bool"],
        ["249 250", "{ \\__zhlipsum_warning:nnn { invalid-range } }"],
        ["251 252 253", "} \\seq_concat:NNN"],
    ]
    assert not_a_table(numbered) == "its cells are code"
    # a table of commands beside what they do is a table
    commands = [["\\textbf", "bold type"], ["\\textit", "italic type"], ["\\texttt", "typewriter type"]]
    assert not_a_table(commands) == ""


def test_rows_ending_in_leaders_and_page_numbers_are_an_index():
    rows = [
        ["形式。.", "51"],
        ["提供 TeXstudio 配置文件。", "7"],
        ["添加了若干环境检查与警告信息。", ".. 32"],
        ["Style options ......", "90"],
    ]
    assert not_a_table(rows) == "its rows are an index (text, leaders, page numbers)"
    # decimals in a table of correlations are no leaders
    assert not_a_table([["Anxiety", ".32", ".45"], ["Mood", ".12", ".50"]]) == ""


def test_one_column_is_no_table():
    assert not_a_table([["a paragraph"], ["", "its next line"]]) == "its text is one column"
