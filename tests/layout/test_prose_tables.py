"""Tables of prose in an anchored model's output go back to paragraphs in the runs' order; real tables stay;
a table's leading and trailing rows of prose leave it; a window that starts inside a table gets its head."""

from __future__ import annotations

from jocr.layout.prose_tables import settled_tables, unwrap_prose_tables
from jocr.layout.request import page_text
from jocr.lines.references import resolve_references, without_open_reference

LINES = [
    "Corporate social responsibility (CSR) emerged from a",
    "realisation among transnational corporations of the need",
    "to account for and redress their adverse impact on society:",
    "specifically, on human rights, labour practices, and the",
    "environment. Two transnational tobacco companies have",
    "recently adopted CSR: Philip Morris, and British American",
]
CELLS = ["Source", "Tokens", "DCLM-Baseline", "3.71T", "arXiv", "20.8B"]
RUNS = {i: text for i, text in enumerate(LINES + CELLS, 1)}  # @1..@6 prose lines, @7..@12 short cells
ANCHOR = "\n".join(["page 612x792", *(f"@{i} 100,{10 * i} {t}" for i, t in RUNS.items())])


def table(*rows: list[str]) -> str:
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{body}</table>"


def test_two_columns_read_as_a_grid_come_back_in_the_runs_order():
    # the member's grid of a two-column page: row by row it would interleave the columns
    grid = table(["@1", "@4"], ["@2", "@5"], ["@3", "@6"])
    assert unwrap_prose_tables(f"# Title\n\n{grid}\n\nafter", RUNS) == (
        "# Title\n\n@1\n\n@2\n\n@3\n\n@4\n\n@5\n\n@6\n\nafter"
    )


def test_lines_of_a_narrow_column_are_prose_too():
    # a three-column page's lines are 35-38 characters (multi_column_miss.pdf); the last row leaves the table
    narrow = {1: "Over the past three decades increasing", 2: "pressure from non-governmental organi-"}
    runs = {**RUNS, **narrow}
    text = table(["@7", "@8"], ["@9", "@10"], ["@1", "@2"])
    assert unwrap_prose_tables(text, runs) == table(["@7", "@8"], ["@9", "@10"]) + "\n\n@1\n\n@2"


def test_a_real_table_stays_as_written():
    real = table(["@7", "@8"], ["@9", "@10"], ["@11", "@12"])
    assert unwrap_prose_tables(real, RUNS) == real
    # a cell the model wrote itself (no reference) counts by its own text
    wide = table(["Total", "x"], ["a", "b"])
    assert unwrap_prose_tables(wide, RUNS) == wide


def test_rows_of_prose_around_a_table_leave_it():
    # a caption line above, the paragraph below run into the table (vector synth pages)
    text = table(["@1"], ["@7", "@8"], ["@9", "@10"], ["@11", "@12"], ["@2", "@3"])
    assert unwrap_prose_tables(text, RUNS) == (
        "@1\n\n" + table(["@7", "@8"], ["@9", "@10"], ["@11", "@12"]) + "\n\n@2\n\n@3"
    )
    # what is left of a table after its prose rows leave is one row: no table either, all in the runs' order
    assert unwrap_prose_tables(table(["@7", "@8"], ["@1", "@2"]), RUNS) == "@1\n\n@2\n\n@7\n\n@8"


def test_a_table_of_runs_past_the_window_goes():
    # the model counting on past its window's 12 runs: every cell would resolve to nothing
    ghost = table(["@30", "@31"], ["@32", "@33"])
    assert unwrap_prose_tables(f"@11\n\n{ghost}", RUNS) == "@11\n\n"
    assert unwrap_prose_tables(table(["@7", "@30"], ["@9", "@10"]), RUNS) == table(
        ["@7", "@30"], ["@9", "@10"]
    )


def test_a_window_that_starts_inside_a_table_gets_its_head():
    rest = "</td><td>@8</td></tr><tr><td>@9</td><td>@10</td></tr></table>\n\n@1"
    out = unwrap_prose_tables(rest, RUNS)
    assert out == "<table><tr><td></td><td>@8</td></tr><tr><td>@9</td><td>@10</td></tr></table>\n\n@1"
    assert resolve_references(out, ANCHOR).startswith("<table><tr><td></td><td>Tokens</td></tr>")


def test_a_table_being_written_is_not_rewritten_yet():
    open_grid = "@7\n\n<table><tr><td>@1</td><td>@4</td></tr><tr><td>@2"
    assert settled_tables(open_grid) == "@7\n\n"
    assert settled_tables("</td><td>@8</td></tr><tr><td>@9") == ""  # a window started inside a table
    closed = open_grid + "</td><td>@5</td></tr></table>"
    assert settled_tables(closed) == closed
    # streaming: the page text of every prefix of the answer is a prefix of the final page text
    final = page_text([closed + "\n\n@8"], [ANCHOR], ["stop"])
    answer = closed + "\n\n@8"
    for end in range(len(answer)):
        partial = page_text([without_open_reference(answer[:end])], [ANCHOR], [None])  # as the server does
        cut = partial.rsplit(" ", 1)[0] if " " in partial else ""  # the word being written may still grow
        assert final.startswith(cut), (end, partial)


def test_a_glossary_of_short_terms_and_long_definitions_stays_a_table():
    # a two-column glossary: each row a term and a definition of prose; the terms column is no prose
    glossary = table(["@7", "@1"], ["@9", "@2"], ["@11", "@3"])
    assert unwrap_prose_tables(glossary, RUNS) == glossary
    assert unwrap_prose_tables(table(["@7", "@1"], ["@9", "@2"]), RUNS) == table(["@7", "@1"], ["@9", "@2"])
