"""Tables of prose in an anchored model's output, put back as text (docs/parsing.md, "Tables of prose").

The bundled anchored member sometimes reads lines of body text as a table: two columns of a paper laid out
as a grid of their lines (`multi_column_miss.pdf` of the olmOCR-Bench sample), or a real table that runs on
into the paragraphs below it (vector synth pages). Each cell then holds a whole line of prose, which no
table holds, and the text comes out in the grid's order instead of the page's. Here a cell is prose when
its text is at least `PROSE_WIDTH` columns wide (a CJK character counts two, as it prints); a table whose
non-empty cells are at least half prose is not a table, and leading or trailing rows that are are not
part of it, except in a glossary (`_glossary`: a column of short terms beside a column of definitions),
which is a real table however much prose it holds. Their cells go back as paragraphs in the order of the
runs they name, which is the text layer's order (`jocr.lines.anchor`), the order the model itself follows
elsewhere.
"""

from __future__ import annotations

import re

from jocr.layout.geometry import text_width
from jocr.lines.references import REFERENCES, referenced_numbers

PROSE_WIDTH = 30  # a 30-column cell: about 5 words of English, 15 CJK characters
_TABLE = re.compile(r"<table>(.*?)(?:</table>|\Z)", re.S)
_ROW = re.compile(r"<tr>(.*?)(?:</tr>|(?=<tr>)|\Z)", re.S)
_TAG = re.compile(r"<[^>]*>")
_ORPHAN_HEAD = "<table><tr><td>"
_TABLE_TAG = re.compile(r"</?(?:table|tr|td|th)\b[^>]*>")


def unwrap_prose_tables(text: str, runs: dict[int, str]) -> str:
    """`text` (a window's output, references unresolved) with its tables of prose turned back into
    paragraphs; `runs` are the window's runs (`references.anchor_runs`)."""
    if _starts_inside_table(text) and "</table>" in text:
        # A window that starts inside a table (the window before it holds the table's head) opens with
        # the rest of a row: made whole here so that its rows read, and the page's Markdown has the table.
        text = _ORPHAN_HEAD + text
    if "<table>" not in text or not runs:
        return text
    return _TABLE.sub(lambda m: _rewrite(m.group(0), m.group(1), runs), text)


def settled_tables(text: str) -> str:
    """The part of a window's unfinished output that `unwrap_prose_tables` will not rewrite when more of it
    arrives: all of it up to a table still open, and nothing while the rows of a window that started
    inside a table are still coming (streaming)."""
    if _starts_inside_table(text) and "</table>" not in text:
        return ""
    start = text.rfind("<table>")
    return text[:start] if start >= 0 and "</table>" not in text[start:] else text


def _starts_inside_table(text: str) -> bool:
    """Whether the first table tag of `text` is a row's or a cell's (or a closing one), not `<table>`."""
    first = _TABLE_TAG.search(text)
    return first is not None and first.group(0) != "<table>"


def _rewrite(whole: str, body: str, runs: dict[int, str]) -> str:
    raw_rows = _ROW.findall(body)
    rows = [_cells(row, runs) for row in raw_rows]
    if not rows:
        return whole
    if _glossary(rows, runs):
        return whole
    prose = [not cells or _is_prose(cells, runs) for cells in rows]  # empty rows go with their neighbours
    all_cells = [c for cells in rows for c in cells]
    if _prose_share(all_cells, runs) >= 0.5:
        return _paragraphs(all_cells)
    start, end = 0, len(rows)
    while start < end and prose[start]:
        start += 1
    while end > start and prose[end - 1]:
        end -= 1
    if start == 0 and end == len(rows):
        return whole
    if end - start < 2:  # what is left is no table either
        return _paragraphs(all_cells)
    before = _paragraphs([c for cells in rows[:start] for c in cells])
    after = _paragraphs([c for cells in rows[end:] for c in cells])
    table = "<table>" + "".join(f"<tr>{row}</tr>" for row in raw_rows[start:end]) + "</table>"
    return "\n\n".join(part for part in (before, table, after) if part)


def _cells(row: str, runs: dict[int, str]) -> list[str]:
    """A row's non-empty cell contents, tags removed. A cell whose references name no run of the window is
    empty: the model counting on past its window's last run writes whole tables of them."""
    return [part.strip() for part in _TAG.split(row) if _resolved(part, runs).strip()]


def _resolved(cell: str, runs: dict[int, str]) -> str:
    return REFERENCES.sub(lambda m: " ".join(runs.get(n, "") for n in referenced_numbers(m.group(0))), cell)


def _prose_share(cells: list[str], runs: dict[int, str]) -> float:
    if not cells:
        return 0.0
    return sum(text_width(_resolved(c, runs)) >= PROSE_WIDTH for c in cells) / len(cells)


def _is_prose(cells: list[str], runs: dict[int, str]) -> bool:
    return _prose_share(cells, runs) >= 0.5


def _glossary(rows: list[list[str]], runs: dict[int, str]) -> bool:
    """Whether the table is a glossary, a real table however much prose it holds: two rows at least, each
    with two cells or more, a column of short cells (at most a fifth prose: the terms) beside a column of
    prose (at least four fifths: the definitions). A grid of a page's lines mixes the two in each column."""
    if len(rows) < 2 or any(len(cells) < 2 for cells in rows):
        return False
    columns = [[cells[k] for cells in rows if k < len(cells)] for k in range(max(map(len, rows)))]
    shares = [_prose_share(column, runs) for column in columns if len(column) >= 2]
    return bool(shares) and min(shares) <= 0.2 and max(shares) >= 0.8


def _first_run(cell: str) -> float:
    numbers = referenced_numbers(cell)
    return min(numbers, default=float("inf"))


def _paragraphs(cells: list[str]) -> str:
    """Cells as paragraphs, in the order of the first run each names (cells naming none keep their place
    after the cell before them)."""
    keyed, key = [], 0.0
    for index, cell in enumerate(cells):
        first = _first_run(cell)
        key = first if first != float("inf") else key
        keyed.append((key, index, cell))
    return "\n\n".join(cell for _, _, cell in sorted(keyed))
