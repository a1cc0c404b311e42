"""Source lines as the tree's rules read them (`jocr.layout.line_rules`, `jocr.layout.answer_tree`): any
line type with `text`, `box` (x0, y0, x1, y1, top-left origin) and, where known, `size` (points), `weight`,
`mono`, `source` and `confidence` (`jocr.lines.types.Line`, from the text layer or OCR), plus
rows (the lines of one
baseline) and the page's body font size."""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from jocr.bbox import BoxEdges
from jocr.cjk import CJK_PUNCT, FULLWIDTH, HAN, HAN_COMPAT, HANGUL, KANA
from jocr.layout.tree import BBox, TreeLine, line_source, union
from jocr.lines.hyphens import SOFT_HYPHEN, PageWords, keeps_hyphen

BOLD = 520  # a weight at least this is bold (TeX's bold extended fonts report 545, regular ones 345-400)
# CJK characters and their punctuation (ideographic comma and full stop, corner brackets, full-width forms):
# lines of Chinese meet without a space where they wrap, punctuation included.
_WIDE = re.compile(f"[{CJK_PUNCT}{KANA}{HAN}{HANGUL}{HAN_COMPAT}{FULLWIDTH}]")
# A list item's line: a bullet, or a number, letter or roman numeral with its stop, then the item's text
# (group 2). Read by the rules' row kinds (`jocr.layout.line_rules`) and by the column cuts
# (`jocr.layout.line_columns`: lists side by side).
LIST_BULLET = re.compile(r"([•◦▪‣∙·●○■□▸►➢✓–*-])\s+(\S.*)")
LIST_NUMBER = re.compile(r"(\(?[0-9]{1,2}[.)]|\(?[a-z][.)]|\(?[ivx]{1,4}[.)])\s+(\S.*)")


@dataclass
class Line(BoxEdges):
    """One source line: `index` its place in the source's order (the anchor's run number - 1)."""

    index: int
    text: str
    box: BBox
    size: float
    weight: int = 0
    mono: bool = False
    source: str = "textlayer"
    confidence: float | None = None
    estimated: bool = False  # box read back from an anchor's position, its extent guessed

    @property
    def height(self) -> float:
        return max(self.box[3] - self.box[1], 1e-3)

    @property
    def bold(self) -> bool:
        return self.weight >= BOLD

    def tree_line(self) -> TreeLine:
        return TreeLine(
            text=self.text.replace(SOFT_HYPHEN, "-"),
            bbox=self.box,
            source="anchor" if self.estimated else line_source(self.source),
            run=self.index + 1,
            confidence=self.confidence,
            size=self.size,
            weight=self.weight,
            mono=self.mono,
        )


def source_lines(lines: Sequence, default_source: str = "textlayer") -> list[Line]:
    """`Line`s of any line objects (`jocr.lines.types.Line`s, from the text layer or OCR), in their
    order; a line without a font size gets 0.8 of its box's height."""
    out = []
    for index, line in enumerate(lines):
        box = tuple(float(v) for v in line.box)
        size = float(getattr(line, "size", 0.0) or 0.0) or 0.8 * max(box[3] - box[1], 0.0)
        out.append(
            Line(
                index=index,
                text=str(line.text),
                box=box,
                size=size,
                weight=int(getattr(line, "weight", 0) or 0),
                mono=bool(getattr(line, "mono", False)),
                source=str(getattr(line, "source", None) or default_source),
                confidence=getattr(line, "confidence", None),
            )
        )
    return out


@dataclass
class Row:
    """The lines of one baseline within a column, left to right."""

    lines: list[Line] = field(default_factory=list)

    @property
    def box(self) -> BBox:
        return union(line.box for line in self.lines)

    @property
    def x0(self) -> float:
        return min(line.x0 for line in self.lines)

    @property
    def x1(self) -> float:
        return max(line.x1 for line in self.lines)

    @property
    def y0(self) -> float:
        return min(line.y0 for line in self.lines)

    @property
    def y1(self) -> float:
        return max(line.y1 for line in self.lines)

    @property
    def size(self) -> float:
        return max(self.lines, key=lambda line: len(line.text)).size

    @property
    def bold(self) -> bool:
        return all(line.bold for line in self.lines)

    @property
    def mono(self) -> bool:
        return all(line.mono for line in self.lines)

    @property
    def text(self) -> str:
        return " ".join(line.text for line in self.lines)

    def cells(self, em: float) -> list[list[Line]]:
        """The row's lines grouped where they are at least `em` apart (table cells, a leader's page
        number)."""
        groups: list[list[Line]] = []
        for line in self.lines:
            if groups and line.x0 - groups[-1][-1].x1 < em:
                groups[-1].append(line)
            else:
                groups.append([line])
        return groups


def rows_of(lines: Sequence[Line]) -> list[Row]:
    """Lines grouped into rows, top to bottom: a line joins the row whose first line its box overlaps by at
    least half the shorter height (measured against the first line, so that the lines of two columns set
    at different pitches never chain into one tall row), unless it lies under a line of the row that its
    box overlaps as much (`_stacked_over`): lines on one row sit side by side. A photographed page
    that lies askew has tall axis-aligned OCR boxes that overlap the next line's by more than half."""
    rows: list[Row] = []
    for line in sorted(lines, key=lambda ln: (ln.y0, ln.x0)):
        row = rows[-1] if rows else None
        if row is not None and not any(_stacked_over(other, line) for other in row.lines):
            first = min(row.lines, key=lambda ln: (ln.y0, ln.x0))
            overlap = min(first.y1, line.y1) - max(first.y0, line.y0)
            if overlap >= 0.5 * min(line.height, first.height):
                row.lines.append(line)
                row.lines.sort(key=lambda ln: ln.x0)
                continue
        rows.append(Row([line]))
    return rows


def side_by_side(a, b) -> bool:
    """Whether two lines or rows (anything with `y0`, `y1`) share at least half the shorter one's height:
    one printed row. Boxes of no height (an anchor's positions) share a row only at the same top."""
    return min(a.y1, b.y1) - max(a.y0, b.y0) >= 0.5 * min(a.y1 - a.y0, b.y1 - b.y0)


def _stacked_over(a: Line, b: Line) -> bool:
    """Whether two lines whose boxes overlap by half the shorter height are one over the other, not side by
    side: their x-extents overlap by half the narrower's width. (Lines joined to a row only through a tall
    first line, beside a drop cap, do not overlap each other and keep their row.)"""
    x_overlap = min(a.x1, b.x1) - max(a.x0, b.x0)
    y_overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    return x_overlap > 0.5 * min(a.x1 - a.x0, b.x1 - b.x0) and y_overlap >= 0.5 * min(a.height, b.height)


def body_size(lines: Sequence[Line]) -> float:
    """The page's body font size: the size most characters are set in (rounded to half a point)."""
    weights: dict[float, int] = {}
    for line in lines:
        key = round(line.size * 2) / 2
        weights[key] = weights.get(key, 0) + len(line.text)
    return max(weights, key=lambda k: (weights[k], -k)) if weights else 10.0


def line_pitch(rows: Sequence[Row], size: float) -> float:
    """The median step between consecutive rows of about `size` (a body line's pitch)."""
    steps = [
        b.y0 - a.y0
        for a, b in zip(rows, rows[1:], strict=False)
        if abs(a.size - size) <= 0.15 * size and 0.5 * size < b.y0 - a.y0 < 3 * size
    ]
    return statistics.median(steps) if steps else 1.2 * size


def list_item(text: str) -> bool:
    """Whether a line's text is a list item (`LIST_BULLET` or `LIST_NUMBER`, the whole line)."""
    text = text.strip()
    return bool(LIST_BULLET.fullmatch(text) or LIST_NUMBER.fullmatch(text))


def text_width(text: str) -> int:
    """The text's width in columns as it prints: a CJK (East Asian wide or full-width) character counts two,
    so that a line of 15 Chinese characters is as much prose as one of 30 Latin letters."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def joined_without_space(left: str, right: str) -> bool:
    """Whether two lines of one paragraph meet without a space: the first ends and the second starts with a
    CJK character or CJK punctuation (Chinese and Japanese put no space between words, nor where a line
    wraps)."""
    left, right = left.rstrip(), right.lstrip()
    return bool(left and right and _WIDE.match(left[-1]) and _WIDE.match(right[0]))


def join_text(parts: Sequence[str], words: PageWords | None = None) -> str:
    """Lines of one block joined: a space between words, none between two CJK characters, a word broken
    at a soft hyphen joined back with or without its hyphen (`jocr.lines.hyphens.keeps_hyphen`, over the
    page's `words`, the parts' own when not given), and a hyphen at a line's end kept with the next word
    ("non-" "governmental")."""
    out = ""
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if not out:
            out = part
        elif out.endswith(SOFT_HYPHEN):
            if words is None:
                words = PageWords(parts)
            out = out[:-1] + ("-" if keeps_hyphen(out[:-1], part, words) else "") + part
        elif (out.endswith("-") and part[:1].islower()) or joined_without_space(out, part):
            out += part
        else:
            out += " " + part
    return out.replace(SOFT_HYPHEN, "-")
