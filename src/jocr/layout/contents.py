"""A table of contents recognised from a page's lines (docs/layout.md, "Contents pages"): the text layer's
runs or OCR lines, before any model reads the page.

A contents page is a run of entries: a title (after a section number at most: "2.1", "A.3", "第二章") and
a page number at the right, after dot leaders or a wide gap. The page numbers are found two ways: at the
end of an entry's own line after leaders ("Vectors . . . . 8"), or as lines of their own at the right of
the page, each paired with the row it belongs to (`_paired`: in order, each number to one row, the
vertical offset between a number and its row changing slowly down the page, as on a photographed sheet
that lies askew). The entries are written as one nested list, a number and its title and page number one
item; the level is the section number's depth, or, for an unnumbered entry, that of the numbered entry
set nearest its indentation (else the rank of its indentation).

Not taken: rows whose page numbers go down (an index, a price list), rows of several number cells (a
table of figures), rows without page numbers (a glossary): `contents_split` returns None and the page
is read as it would be without this module.
"""

from __future__ import annotations

import bisect
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from jocr.layout.furniture import edge_furniture
from jocr.layout.geometry import Line, Row, body_size, join_text, rows_of, source_lines
from jocr.layout.tree import LIST_ITEM, PARAGRAPH, Block, union

# Dot leaders at a line's end (three dots or more, spaced or not), and a contents page number.
LEADERS = re.compile(r"\s*(?:[.·…_]\s*){3,}\s*$")
TOC_PAGE = re.compile(r"[0-9]{1,4}|[ivxlc]{1,6}")
# An entry's page number at the end of its own line, after leaders of two dots at least (a photo's OCR
# keeps few of them): "Vectors . . . 8", "Missing values.. 11".
_INLINE_PAGE = re.compile(r"(?P<title>.*?\S)\s*(?:[.·…_]\s*){2,}(?P<page>[0-9]{1,4}|[ivxlc]{1,6})")
# A page number line of its own: the number, and whatever leaders OCR kept before it (".18").
_PAGE_LINE = re.compile(r"[\s.·…_]*(?P<page>[0-9]{1,4}|[ivxlc]{1,6})")
# Section numbers an entry starts with: "2", "2.1", "2.1.3", "A.1", "第二章", "Chapter 3".
_NUMBER = re.compile(
    r"(?P<number>[0-9]{1,2}(?:\.[0-9]{1,2}){0,4}\.?|[A-Z](?:\.[0-9]{1,2}){1,4}\.?"
    r"|(?:Chapter|Part|Appendix|Section)\s+[0-9A-Z]{1,4}[.:]?)\s+(?P<title>\S.*)"
)
_CJK_SECTION = r"第\s?[0-9一二三四五六七八九十百零]{1,4}\s?[章节節部篇]"  # "第二章", "第 1 节"
_CJK_NUMBER = re.compile(rf"(?P<number>{_CJK_SECTION})\s*(?P<title>\S.*)")
_NUMBER_ONLY = re.compile(
    rf"[0-9]{{1,2}}(?:\.[0-9]{{1,2}}){{0,4}}\.?|[A-Z](?:\.[0-9]{{1,2}}){{1,4}}\.?|{_CJK_SECTION}"
)
_ABBREVIATIONS = {"etc", "al", "vs", "e.g", "i.e", "cf", "ibid", "approx"}
LETTER = re.compile(r"[^\W\d_]")  # a letter of any script
_INDEX_PAGES = re.compile(r"[0-9]+\s*[,–-]\s*[0-9]+|,\s*$")  # "12, 45", "12-14", a trailing comma
_TRAILING_LEADERS = re.compile(r"\s*(?:[.·…_]\s*){2,}$")

MIN_ENTRIES = 3  # entries with a page number a contents page has at least
PAGED_SHARE = 0.4  # of the rows between its first and last entry, at least this share have a page number
ENTRY_SHARE = 0.8  # ... and this share are entries (a page number, a section number or leaders)
MAX_DESCENTS = 0.1  # page numbers that go down (OCR misreading a digit), as a share of the entries
MAX_LOOSE_NUMBERS = 0.3  # right-hand numbers no row takes, as a share of the entries (a table's cells)


@dataclass
class Entry:
    """One row of a contents page: its section number ("" when none), title and page number ("" when the
    line source lost it, or the row has none: a part's title)."""

    row: Row
    number: str = ""
    title: str = ""
    page: str = ""
    leaders: bool = False
    page_line: Line | None = None
    level: int = 1

    @property
    def lines(self) -> list[Line]:
        return self.row.lines + ([self.page_line] if self.page_line is not None else [])

    @property
    def is_entry(self) -> bool:
        """Whether the row reads as a contents entry: a title with a page number, a section number or
        leaders."""
        return bool(self.title) and bool(self.page or self.number or self.leaders)

    @property
    def text(self) -> str:
        return " ".join(part for part in (self.number, self.title, self.page) if part)


# A page whose contents hold at least this share of its body lines is a contents page (read from its lines
# alone); below it, a page with contents and other text (a title page, the first section).
CONTENTS_PAGE_SHARE = 0.6


def is_contents_page(lines: Sequence, width: float, height: float) -> bool:
    """Whether a page's lines (any line type: `geometry.source_lines`) are a contents page, its edge
    furniture (running heads, page numbers) left out: contents (`contents_split`) that hold
    `CONTENTS_PAGE_SHARE` of its body lines at least. What a page's reading decides on before any model is
    asked (`jocr.layout.page_read.decide_page`)."""
    items = [ln for ln in source_lines(lines) if ln.text.strip()]
    kinds = edge_furniture(items, width, height)
    body = [ln for ln in items if ln.index not in kinds]
    found = contents_split(body, body_size(body or items))
    if found is None:
        return False
    held = sum(len(block.lines) for block in found[1])
    return held >= CONTENTS_PAGE_SHARE * len(body)


def with_contents(blocks: list[Block], lines: list[Line], furniture: dict[int, str]) -> list[Block]:
    """An answer's blocks (a model's, their lines the runs they name) with the page's contents, where its
    lines hold contents (`contents_split` over `lines` but `furniture`), written as the rules write them:
    the blocks that are mostly contents runs make way for the contents list, put where the first of them
    stood; their other runs come back as paragraphs of their own. Blocks without runs stay, and so does an
    answer none of whose blocks holds the contents runs (typed out, not named)."""
    body = [ln for ln in lines if ln.index not in furniture and ln.text.strip()]
    found = contents_split(body, body_size(body or lines)) if body else None
    if found is None:
        return blocks
    listed = found[1]
    runs = {ln.run for block in listed for ln in block.lines if ln.run is not None}
    by_run = {ln.index + 1: ln for ln in lines}
    out: list[Block] = []
    placed = False
    for block in blocks:
        own = [ln.run for ln in block.lines if ln.run is not None]
        inside = [run for run in own if run in runs]
        if not own or len(inside) * 2 < len(own):
            out.append(block)
            continue
        if not placed:
            out += listed
            placed = True
        out += [_paragraph([by_run[run]]) for run in own if run not in runs and run in by_run]
    return out if placed else blocks


def contents_split(lines: list[Line], size: float) -> tuple[list[Line], list[Block], list[Line]] | None:
    """The body lines of a page (furniture out) as (lines above its contents, the contents as list items,
    lines below), or None when they hold no contents (`MIN_ENTRIES`, `PAGED_SHARE`, `ENTRY_SHARE`, page
    numbers that never go down but for `MAX_DESCENTS`)."""
    lines = [ln for ln in lines if ln.text.strip() and not LEADERS.fullmatch(" " + ln.text)]
    if len(lines) < MIN_ENTRIES:
        return None
    left, right = min(ln.x0 for ln in lines), max(ln.x1 for ln in lines)
    middle = left + 0.5 * (right - left)
    numbers = [ln for ln in lines if ln.x0 > middle and _PAGE_LINE.fullmatch(ln.text)]
    marks = [ln for ln in lines if ln.x0 <= middle and _NUMBER_ONLY.fullmatch(ln.text.strip())]
    rows = _rows([ln for ln in lines if not any(ln is n for n in numbers + marks)], marks)
    entries = [_entry(row, size) for row in rows]
    loose = _paired(entries, sorted(numbers, key=lambda ln: ln.cy), size)
    paged = [k for k, e in enumerate(entries) if e.page and e.title]
    if len(paged) < MIN_ENTRIES:
        return None
    first, last = paged[0], paged[-1]
    span = entries[first : last + 1]
    digits = [int(e.page) for e in span if e.page.isdigit() and e.title]
    descents = sum(1 for a, b in zip(digits, digits[1:]) if b < a)
    if (
        len(paged) < PAGED_SHARE * len(span)
        or sum(e.is_entry for e in span) < ENTRY_SHARE * len(span)
        or descents > MAX_DESCENTS * len(digits)
        or len(loose) > MAX_LOOSE_NUMBERS * len(paged)
    ):
        return None
    span = _joined_continuations(span, size)
    _set_levels(span, size)
    blocks = [_item(e) for e in span]
    if loose:  # page numbers no row took: kept, as the line source read them
        blocks.append(_paragraph(loose))
    above = [ln for e in entries[:first] for ln in e.lines]
    below = [ln for e in entries[last + 1 :] for ln in e.lines]
    return above, blocks, below


def _rows(lines: list[Line], marks: list[Line]) -> list[Row]:
    """The rows of a contents page: its lines by baseline (`geometry.rows_of`), each section number set
    as a line of its own (`marks`) put before the row it overlaps most among those that start to its
    right. (Given to `rows_of` with the rest, a number could join the row above it on a photographed page,
    whose boxes are tall.) A number no row takes is a row of its own."""
    rows = rows_of(lines)
    taken: dict[int, Line] = {}
    alone: list[Line] = []
    for mark in sorted(marks, key=lambda ln: ln.cy):

        def overlap(row: Row, mark=mark) -> float:
            return min(row.y1, mark.y1) - max(row.y0, mark.y0)

        right = [k for k, row in enumerate(rows) if row.x0 > (mark.x0 + mark.x1) / 2 and k not in taken]
        best = max(right, key=lambda k: overlap(rows[k]), default=None)
        if best is None or overlap(rows[best]) < 0.5 * mark.height:
            alone.append(mark)
            continue
        taken[best] = mark
    for k, mark in taken.items():
        rows[k] = Row([mark, *rows[k].lines])
    return sorted(rows + [Row([m]) for m in alone], key=lambda row: (row.y0 + row.y1) / 2)


def _entry(row: Row, size: float) -> Entry:
    """A row read as a contents entry (its fields empty where it is not one)."""
    entry = Entry(row=row)
    cells = row.cells(max(row.size, size, 1.0))
    text = join_text([ln.text for ln in row.lines]).strip()
    inline = _INLINE_PAGE.fullmatch(text)
    if inline:
        text, entry.page, entry.leaders = inline.group("title"), inline.group("page"), True
    elif _TRAILING_LEADERS.search(text):
        text, entry.leaders = _TRAILING_LEADERS.sub("", text), True
    numbered = _NUMBER.fullmatch(text) or _CJK_NUMBER.fullmatch(text)
    if numbered:
        entry.number, text = numbered.group("number"), numbered.group("title")
    # a row of more cells than a number and its title is a table's, and an index lists pages in its text
    if len(cells) > (2 if entry.number else 1) or _INDEX_PAGES.search(text) or not LETTER.search(text):
        entry.page, entry.leaders, entry.number = "", False, ""
        entry.title = ""
        return entry
    entry.title = _without_trailing_dots(text.strip())
    return entry


def _without_trailing_dots(title: str) -> str:
    """A title without what is left of its leaders: dots after a space, or one dot after a word that is no
    abbreviation ("etc.")."""
    title = re.sub(r"\s+[.·…_]+$", "", title)
    last = title.split()[-1].rstrip(".").lower() if title.split() else ""
    if title.endswith(".") and not title.endswith("..") and last not in _ABBREVIATIONS:
        title = title[:-1]
    return title


def _paired(entries: list[Entry], numbers: list[Line], size: float) -> list[Line]:
    """Page number lines of their own (top to bottom) given to the rows without one, in order, each row at
    most one: the pairing that keeps each number near its row and the offset between them steady (the
    sum of both, in line pitches, plus `SKIP` for each number left out). Returns the numbers left out."""
    open_rows = [k for k, e in enumerate(entries) if e.title and not e.page]
    if not numbers or not open_rows:
        return numbers
    steps = [_cy(b.row) - _cy(a.row) for a, b in zip(entries, entries[1:])]
    pitch = statistics.median(steps) if steps else 1.2 * size
    pitch = max(pitch, 1.0)
    if len(numbers) > 3 * len(open_rows) + 10:  # a page of figures: no contents, left as they are
        return numbers
    # the offset is measured against the numbered rows (or with leaders) where most rows are: a heading
    # above the entries ("Contents") would let every number slip one row up
    marked = [k for k in open_rows if entries[k].number or entries[k].leaders]
    basis = marked if 2 * len(marked) >= len(open_rows) else open_rows
    shift = _offset(numbers, sorted(_cy(entries[k].row) for k in basis), pitch)
    # candidate rows of each number: within a pitch of it, once the page's offset is taken off
    cands = [
        [k for k in open_rows if abs(numbers[i].cy - shift - _cy(entries[k].row)) <= pitch]
        for i in range(len(numbers))
    ]
    best: dict[tuple[int, int], tuple[float, tuple[int, int] | None]] = {}
    for i in range(len(numbers)):
        before = [(pi, pk) for pi in range(max(0, i - LOOK_BACK), i) for pk in cands[pi] if (pi, pk) in best]
        for k in cands[i]:
            dy = (numbers[i].cy - shift - _cy(entries[k].row)) / pitch
            cost, back = SKIP * i + NEAR * abs(dy), None
            for pi, pk in before:
                pcost = best[(pi, pk)][0]
                if pk < k:
                    pdy = (numbers[pi].cy - shift - _cy(entries[pk].row)) / pitch
                    step = pcost + SKIP * (i - pi - 1) + NEAR * abs(dy) + abs(dy - pdy)
                    if step < cost:
                        cost, back = step, (pi, pk)
            best[(i, k)] = (cost, back)
    if not best:
        return numbers
    end = min(best, key=lambda s: best[s][0] + SKIP * (len(numbers) - 1 - s[0]))
    used = set()
    state: tuple[int, int] | None = end
    while state is not None:
        i, k = state
        entries[k].page = _PAGE_LINE.fullmatch(numbers[i].text).group("page")
        entries[k].page_line = numbers[i]
        used.add(i)
        state = best[state][1]
    return [n for i, n in enumerate(numbers) if i not in used]


def _offset(numbers: list[Line], rows: list[float], pitch: float) -> float:
    """How far the right-hand numbers sit below (or, negative, above) their rows: of the offsets within
    `MAX_OFFSET` pitches, in eighths of a pitch, the one that puts the most numbers within a quarter pitch
    of a row (the smallest such). A photographed sheet turned a few degrees shifts the right-hand column
    by more than a row pitch (physics-p1's photo: 1.6 pitches up)."""
    best, found = 0.0, -1
    for step in sorted(range(-8 * MAX_OFFSET, 8 * MAX_OFFSET + 1), key=abs):
        shift = step * pitch / 8
        near = 0
        for number in numbers:
            at = bisect.bisect_left(rows, number.cy - shift)
            gaps = [abs(rows[j] - (number.cy - shift)) for j in (at - 1, at) if 0 <= j < len(rows)]
            near += min(gaps) <= 0.25 * pitch
        if near > found:
            best, found = shift, near
    return best


MAX_OFFSET = 2  # line pitches


def _cy(row: Row) -> float:
    return (row.y0 + row.y1) / 2


LOOK_BACK = 4  # a number links to the pairings of the few numbers above it (a page of figures stays fast)
SKIP = 1.0  # the cost of leaving a page number line unpaired, in line pitches
NEAR = 0.3  # the weight of a number's distance from its row, against the change of offset (weight 1)


def _joined_continuations(span: list[Entry], size: float) -> list[Entry]:
    """An entry's title wrapped over two rows is one entry: a row without a page number followed by an
    indented row without a section number that has one."""
    out: list[Entry] = []
    k = 0
    while k < len(span):
        entry = span[k]
        nxt = span[k + 1] if k + 1 < len(span) else None
        if (
            nxt is not None
            and entry.title
            and not entry.page
            and nxt.page
            and not nxt.number
            and nxt.row.x0 > entry.row.x0 + 0.5 * size
            and nxt.row.y0 - entry.row.y1 < size
        ):
            nxt.row = Row(entry.row.lines + nxt.row.lines)
            nxt.number, nxt.title = entry.number, join_text([entry.title, nxt.title])
        else:
            out.append(entry)
        k += 1
    return out


def _set_levels(span: list[Entry], size: float) -> None:
    """Levels: a section number's depth ("2" 1, "2.1" 2; "第二章" 1, "第二节" 2 below chapters); an
    unnumbered entry that of the numbered entry whose indentation is nearest its own, or, on a page
    without numbers, the rank of its indentation (lines within an em one level)."""
    numbered = [e for e in span if e.number]
    chapters = any(e.number.startswith("第") and e.number[-1] in "章部篇" for e in numbered)
    for entry in numbered:
        entry.level = _depth(entry.number, chapters)
    for entry in span:
        if entry.number:
            continue
        if numbered:
            near = min(
                numbered, key=lambda e: (abs(e.row.x0 - entry.row.x0), abs(_cy(e.row) - _cy(entry.row)))
            )
            entry.level = near.level
        else:
            entry.level = _indent_rank(entry, span, size)


def _depth(number: str, chapters: bool) -> int:
    """A section number's depth; "第三节" (a section) is 2 under chapters ("第二章"), else the top level."""
    if number.startswith("第"):
        return 1 if number[-1] in "章部篇" or not chapters else 2
    if " " in number:  # "Chapter 3", "Part II"
        return 1
    return min(6, number.rstrip(".").count(".") + 1)


def _indent_rank(entry: Entry, span: list[Entry], size: float) -> int:
    starts: list[float] = []
    for x in sorted(e.row.x0 for e in span):
        if not starts or x - starts[-1] > size:
            starts.append(x)
    return min(6, 1 + sum(1 for s in starts[1:] if s <= entry.row.x0 + 1e-6 and s > starts[0]))


def _item(entry: Entry) -> Block:
    lines = entry.lines
    if not entry.title:  # a row between entries that reads as none: its text, at its place in the list
        entry.title = join_text([ln.text for ln in entry.row.lines]).strip()
    block = Block(type=LIST_ITEM, text=entry.text, marker="-", level=entry.level)
    block.bbox, block.lines = union(ln.box for ln in lines), [ln.tree_line() for ln in lines]
    block.markdown = "  " * (entry.level - 1) + f"- {block.text}"
    return block


def _paragraph(lines: list[Line]) -> Block:
    text = " ".join(ln.text for ln in lines)
    return Block(type=PARAGRAPH, text=text, markdown=text, bbox=union(ln.box for ln in lines),
                 lines=[ln.tree_line() for ln in lines])  # fmt: skip
