"""Normalised edit distance of a page's Markdown to hand-checked ground-truth Markdown, blocks included.

OmniDocBench's text edit distance (`jocr.checks.omnidoc`) needs block annotations; the reward's text term
(`reward.text_score`) flattens the page into one line, so a paragraph split in two, a heading written as body
text or a list written as prose cost nothing. Here both pages are first rewritten to one canonical line per
block, so those differences count as the few characters they change:

- paragraph: its lines joined (with a space, or nothing between two CJK characters), olmOCR normalisation
  (emphasis markers, whitespace, typographic quotes and dashes, `jocr.checks.text.normalize_text`);
- heading (`#` .. `######`, any level): `# ` + text (a heading is a heading; its level is a matter of taste);
- list item (`-`, `*`, `+`, `1.`, `1)`; nested or not): `- ` + text, each item its own block;
- code block (``` fences): a line ```` ``` ```` then its lines as written (trailing spaces dropped);
- table (HTML or a pipe table): one line per row, `| cell | cell |`, spans expanded as the table tests read
  them (`jocr.checks.table`), so an HTML table and the same pipe table are equal;
- display formula (`$$..$$`, `\\[..\\]`): `$$` + its LaTeX with spaces removed;
- images, HTML comments and the page-split marker are dropped.

`markdown_edit_distance(prediction, reference)` is the Levenshtein distance between the two canonical
texts (blocks joined by newlines) divided by the longer one's length: 0 is identical, 1 shares nothing.
Block marks are a few characters of a long page, so `structure_edit_distance` scores the block kinds
alone: the edit distance between the two sequences of kinds over the longer one's length.
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Levenshtein

from jocr.checks.table import parse_html_tables, parse_markdown_tables
from jocr.checks.text import normalize_text

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+(.*)$")
_PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_OPEN = re.compile(r"<table\b", re.I)
_TABLE_CLOSE = re.compile(r"</table\s*>", re.I)
_DISPLAY_ONE_LINE = re.compile(r"^\s*(\$\$|\\\[)(.*?)(\$\$|\\\])\s*$")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_PAGE_SPLIT = re.compile(r"^\s*<--- Page Split --->\s*$", re.M)
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def _join_lines(lines: list[str]) -> str:
    out = ""
    for line in (s.strip() for s in lines):
        if not line:
            continue
        if out and not (_CJK.match(out[-1]) and _CJK.match(line[0])):
            out += " "
        out += line
    return out


def _text(lines: list[str]) -> str:
    return normalize_text(_join_lines(lines)) or ""


def _table_rows(html_or_pipe: str, pipe: bool) -> list[str]:
    tables = parse_markdown_tables(html_or_pipe) if pipe else parse_html_tables(html_or_pipe)
    rows: list[str] = []
    for table in tables:
        by_row: dict[int, list[tuple[int, str]]] = {}
        for r, c in table.cells:
            by_row.setdefault(r, []).append((c, table.normalized((r, c))))
        for r in sorted(by_row):
            cells = [text for _, text in sorted(by_row[r])]
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def typed_blocks(markdown: str) -> list[tuple[str, str]]:
    """The page as (kind, canonical text) blocks; kinds: paragraph, heading, item, code, row, formula."""
    text = _PAGE_SPLIT.sub("", _COMMENT.sub("", _IMAGE.sub("", markdown.replace("\r\n", "\n"))))
    lines = text.split("\n")
    blocks: list[tuple[str, str]] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            joined = _text(paragraph)
            if joined:
                blocks.append(("paragraph", joined))
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            flush()
            j = i + 1
            while j < len(lines) and not _FENCE.match(lines[j]):
                j += 1
            code = [s.rstrip() for s in lines[i + 1 : j] if s.strip()]
            blocks.append(("code", "\n".join(["```"] + code)))
            i = j + 1
            continue
        if _TABLE_OPEN.search(line):
            flush()
            j = i
            while j < len(lines) and not _TABLE_CLOSE.search(lines[j]):
                j += 1
            blocks.extend(("row", r) for r in _table_rows("\n".join(lines[i : j + 1]), pipe=False))
            i = j + 1
            continue
        if _PIPE_ROW.match(line) and i + 1 < len(lines) and _PIPE_ROW.match(lines[i + 1]):
            flush()
            j = i
            while j < len(lines) and _PIPE_ROW.match(lines[j]):
                j += 1
            blocks.extend(("row", r) for r in _table_rows("\n".join(lines[i:j]), pipe=True))
            i = j
            continue
        one_line = _DISPLAY_ONE_LINE.match(line)
        if one_line or line.strip() in ("$$", "\\["):
            flush()
            if one_line:
                body, i = one_line.group(2), i + 1
            else:
                close = "$$" if line.strip() == "$$" else "\\]"
                j = i + 1
                while j < len(lines) and lines[j].strip() != close:
                    j += 1
                body, i = " ".join(lines[i + 1 : j]), j + 1
            blocks.append(("formula", "$$" + re.sub(r"\s+", "", body)))
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            blocks.append(("heading", "# " + _text([heading.group(1)])))
            i += 1
            continue
        item = _LIST_ITEM.match(line)
        if item:
            flush()
            paragraph.append(item.group(1))
            # An item runs on over its indented or unmarked continuation lines, up to a blank line.
            j = i + 1
            while (
                j < len(lines)
                and lines[j].strip()
                and not _LIST_ITEM.match(lines[j])
                and not _HEADING.match(lines[j])
                and not _FENCE.match(lines[j])
            ):
                paragraph.append(lines[j])
                j += 1
            blocks.append(("item", "- " + _text(paragraph)))
            paragraph.clear()
            i = j
            continue
        if not line.strip():
            flush()
        else:
            paragraph.append(line)
        i += 1
    flush()
    return blocks


def canonical_markdown(markdown: str) -> str:
    return "\n".join(text for _, text in typed_blocks(markdown))


def markdown_edit_distance(prediction: str, reference: str) -> float:
    """Normalised edit distance in [0, 1] between the canonical forms of two Markdown pages."""
    a, b = canonical_markdown(prediction), canonical_markdown(reference)
    longest = max(len(a), len(b))
    return Levenshtein.distance(a, b) / longest if longest else 0.0


def structure_edit_distance(prediction: str, reference: str) -> float:
    """Normalised edit distance in [0, 1] between the two pages' sequences of block kinds (paragraph,
    heading, list item, code, table row, formula): a paragraph split in two, a heading read as body text or
    a list read as one paragraph each cost one block of the longer sequence, however short its text."""
    a = [kind for kind, _ in typed_blocks(prediction)]
    b = [kind for kind, _ in typed_blocks(reference)]
    longest = max(len(a), len(b))
    return Levenshtein.distance(a, b) / longest if longest else 0.0
