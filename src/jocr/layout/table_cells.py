"""Whether rows of cell texts are a table or text laid out in columns (docs/elements.md, "What is no
table"): the one test that the table reader (`jocr.layout.tables`) and the rules over lines
(`jocr.layout.line_rules`) apply to the grid they read.

Lines of a page fall into columns in many things that are not tables: two columns of prose read side by
side, a numbered list or a reference list whose numbers stand apart from the text, line numbers in the
margin of a manuscript or a code listing, equations with their numbers at the right, code set in two
columns. A grid is no table when

- fewer than two rows hold two filled cells (a paragraph, a list);
- most of its cells are lines of prose (`PROSE_WIDTH` columns wide: about five English words);
- every row is a marker (a line or item number, a bullet, a reference label "[3]", or at the right an
  equation number "(3)") and one cell of text beside it: a numbered list, numbered lines. Numbers that
  mark lines count up, a few at a step (years 1990, 1995, 2001 beside events are a table's column), and
  a column of numbers beside a column of numbers is a table;
- most of its cells are code (`CODE`: a TeX control word, a statement ending in ";" or a brace, an
  assignment ":=", a lone brace): a listing, or a listing beside its output.
"""

from __future__ import annotations

import re

from jocr.layout.geometry import text_width
from jocr.layout.prose_tables import PROSE_WIDTH

PROSE = "its cells are lines of prose"
# A marker that starts a numbered line or item: a line number, "1." "2)" "(3)" "[4]" "a)" "iv.", a bullet.
MARKER = re.compile(
    r"\(?[0-9]{1,4}[.)]?|\[[0-9]{1,4}\]|\(?[a-z][.)]|\([a-z]\)|[ivx]{1,5}[.)]|[•·◦▪‣∙●○■□\-–*>→]"
)
SHARE_MISREAD = 0.1  # a tenth of the rows may break a pattern (OCR misreadings)
MAX_STEP = 5  # numbered lines skip at most this many numbers between two rows of cells (wrapped lines)
# An equation number at the right: "(3)", "(2.1)", "(4a)".
EQUATION_NUMBER = re.compile(r"\([0-9]{1,3}(?:\.[0-9]{1,3})?[a-z]?\)")
NUMBER = re.compile(r"[-+−(]?[$€£¥]?[0-9][0-9.,:/%\s]*[)%]?")
NUMBERS = re.compile(r"[0-9]{1,4}(?:\s+[0-9]{1,4})*")  # line numbers, several when lines were joined
# A page number after leader dots, as OCR reads them: "…… 72", "。.. 51", "。 .32".
LEADER_PAGE = re.compile(r"(?:[.·…]\s*){2,}[0-9]{1,4}\b|。\s*[.·]+\s*[0-9]{1,4}\b")
# Code: a TeX control word, a statement closed by ";" or a brace, an assignment, a comparison, a lone
# bracket or brace.
CODE = re.compile(r"\\[A-Za-z@_]{2,}|[;{}]\s*$|^\s*[{}()\[\]]+\s*$|:=|==|!=|->|=>|&&|\|\|")


def not_a_table(rows: list[list[str]]) -> str:
    """Why rows of cell texts (each row its cells left to right, empty strings for empty slots) are no
    table, "" when they are one (module docstring)."""
    filled = [[c.strip() for c in row if c.strip()] for row in rows]
    filled = [row for row in filled if row]
    if sum(len(row) >= 2 for row in filled) < 2:
        return "its text is one column"
    texts = [c for row in filled for c in row]
    if sum(text_width(t) >= PROSE_WIDTH for t in texts) > 0.5 * len(texts):
        return PROSE
    if numbered_lines(filled):
        return "its rows are numbered lines"
    words = [t for t in texts if not NUMBERS.fullmatch(t)]  # line numbers beside a listing are no code
    if sum(bool(CODE.search(t)) for t in words) > 0.5 * len(words):
        return "its cells are code"
    if contents_rows(filled):
        return "its rows are an index (text, leaders, page numbers)"
    return ""


def numbered_lines(rows: list[list[str]]) -> bool:
    """Whether the rows (their filled cells) that hold two cells or more are markers and one cell of
    text: markers first (`MARKER`: a line number, then an item's number) or one equation number last
    (`EQUATION_NUMBER`), the text not a number. Rows of one cell (a wrapped line) may lie between; a few
    rows may break the pattern (`misread`)."""
    pairs = [row for row in rows if len(row) >= 2]
    if len(pairs) < 2:
        return False
    first = [
        row[0]
        for row in pairs
        if all(MARKER.fullmatch(c) for c in row[:-1]) and not NUMBER.fullmatch(row[-1])
    ]
    last = [
        row
        for row in pairs
        if len(row) == 2 and EQUATION_NUMBER.fullmatch(row[1]) and not NUMBER.fullmatch(row[0])
    ]
    enough = len(pairs) - misread(len(pairs))
    return (len(first) >= enough and _counts_up(first)) or len(last) >= enough


def misread(n: int) -> int:
    """How many of `n` rows may break a pattern: one in ten, and one where there are three or more (an OCR
    misreading "78" as "BL")."""
    return max(int(SHARE_MISREAD * n), 1 if n >= 3 else 0)


def _counts_up(markers: list[str]) -> bool:
    """Whether the numbers among `markers` go up by one to `MAX_STEP` from each to the next (all but a
    share `SHARE_MISREAD` of the steps)."""
    numbers = [int(m) for m in (re.sub(r"\D", "", m) for m in markers) if m]
    steps = [0 < b - a <= MAX_STEP for a, b in zip(numbers, numbers[1:], strict=False)]
    return sum(steps) >= len(steps) - misread(len(steps))


def contents_rows(rows: list[list[str]]) -> bool:
    """Whether half the rows of two cells or more (their filled cells) hold a page number after leader
    dots (`LEADER_PAGE`): an index, a change log or a table of contents, in whatever order its page
    numbers come, two columns of it read across."""
    rows = [row for row in rows if len(row) >= 2]
    return len(rows) >= 2 and sum(bool(LEADER_PAGE.search(" ".join(row))) for row in rows) >= 0.5 * len(rows)
