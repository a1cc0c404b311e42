"""A page's document tree from its source lines alone (the text layer's or OCR lines, every line in order):
what a page gets when no model answer is there, the part of an answer that ran out of room, and the
control the model is measured against (docs/layout.md, "Rules over lines").

- Furniture: `jocr.layout.furniture.edge_furniture` (kept in the tree, marked).
- Reading order (`jocr.layout.line_columns`): the body is cut into groups at gutters with prose on both
  sides and at wide gaps between rows, the groups read one after the other, lines that cross a gutter
  (titles, full-width paragraphs) in between.
- Within a column: rows (lines of one baseline) become blocks. A paragraph wrapped over rows is one
  block: a new paragraph starts after a step of more than `PARAGRAPH_STEP` line pitches, at a change of
  font size or weight, at an indented first line, or after a short line that ends a sentence; a word
  broken by a soft hyphen always goes on. Headings: rows set at least `HEADING_SIZE` times the body size,
  or bold rows in a regular body that are short and end without a full stop (never a body line);
  numbering ("2.1") sets a heading's level, else its size's rank. List items start with a bullet or a
  number; code is set in a monospace font (`Line.mono`) with its indentation kept; footnotes are small
  rows below the body starting with a number or a note sign; captions start "Figure 3", "Table 2";
  rows split into cells become a table, or, when their last cell is a page number (a table of contents),
  list items.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import replace

from jocr.layout.contents import LEADERS as _LEADERS
from jocr.layout.contents import TOC_PAGE as _TOC_PAGE
from jocr.layout.contents import contents_split
from jocr.layout.furniture import edge_furniture
from jocr.layout.geometry import (
    LIST_BULLET,
    LIST_NUMBER,
    Line,
    Row,
    body_size,
    join_text,
    line_pitch,
    list_item,
    rows_of,
    source_lines,
)
from jocr.layout.line_columns import reading_order
from jocr.layout.regions import Region, region_blocks, region_units
from jocr.layout.table_cells import PROSE, not_a_table
from jocr.layout.tree import (
    CAPTION,
    CAPTION_START,
    CODE,
    FIGURE,
    FOOTER,
    FOOTNOTE,
    FROM_LINES,
    HEADER,
    HEADING,
    LIST_ITEM,
    PARAGRAPH,
    TABLE,
    TITLE,
    Block,
    PageTree,
    TreeLine,
    union,
)
from jocr.lines.hyphens import SOFT_HYPHEN, PageWords

PARAGRAPH_STEP = 1.35  # line pitches: a larger step between rows starts a new paragraph
HEADING_SIZE = 1.15  # times the body size
TITLE_SIZE = 1.3
FOOTNOTE_SIZE = 0.9
MAX_HEADING_CHARS = 150
_TYPOGRAPHIC_BULLET = re.compile(r"[•◦▪‣∙●○■□▸►➢✓]\s")  # a bullet no code line starts with
_SECTION_NUMBER = re.compile(r"([0-9]{1,2}(?:\.[0-9]{1,2}){0,4}|[A-Z](?:\.[0-9]{1,2}){1,4})\.?\s+\S")
_CAPTION = CAPTION_START
FOOTNOTE_START = re.compile(r"(?:[0-9]{1,3}|[*†‡§¶]|[¹²³⁴⁵⁶⁷⁸⁹⁰]+)(?:\s|[.)]|\S)")
SENTENCE_END = re.compile(r"[.!?:;。！？][\"'”’)\]]*$")  # a line that ends a sentence


def lines_tree(
    lines: Sequence,
    width: float,
    height: float,
    unit: str = "pt",
    page: int = 1,
    source: str = "textlayer",
    repeated: dict[int, str] | None = None,
    paper: Sequence[float] | None = None,
    regions: Sequence[Region] | None = None,
) -> PageTree:
    """The page's tree from its lines alone (any line type: `geometry.source_lines`); `repeated` (line index
    -> kind) are lines the document's other pages show to be furniture (`repeated_furniture`); `paper`
    (top, bottom) where the sheet lies in a photographed page (`jocr.lines.ocr.paper_rows`); `regions` a
    layout detector's regions of the page (`jocr.layout.regions`), in the lines' units."""
    items = [ln for ln in source_lines(lines, source) if ln.text.strip()]
    furniture = None
    if repeated:
        furniture = {**edge_furniture(items, width, height, paper), **repeated}
    blocks = line_blocks(items, width, height, furniture, paper, regions)
    tree = PageTree(width=width, height=height, unit=unit, source=FROM_LINES, blocks=blocks, page=page)
    tree.table_regions = [r.box for r in regions or () if r.label == TABLE and r.kind_sure]
    return tree.numbered()


def tree_of_lines(data: dict, unit: str, page: int = 1, regions: Sequence[Region] | None = None) -> PageTree:
    """The tree of a page from its lines as plain data (`PageLines.to_dict()`: width, height, source and
    lines, each with text, box and, where known, size, weight and confidence), and its regions if any."""
    from jocr.lines.types import Line as SourceLine

    source = str(data.get("source") or "textlayer")
    lines = [
        SourceLine(
            text=str(d["text"]),
            box=tuple(float(v) for v in d["box"]),
            size=float(d.get("size") or 0.0),
            weight=int(d.get("weight") or 0),
            confidence=d.get("confidence"),
            source=str(d.get("source") or source),
        )
        for d in data.get("lines", [])
    ]
    paper = (data.get("stats") or {}).get("paper")
    return lines_tree(
        lines, float(data["width"]), float(data["height"]), unit, page, source, paper=paper, regions=regions
    )


def document_trees(pages: Sequence[tuple[Sequence, float, float]], first_page: int = 1) -> list[PageTree]:
    """The trees of a document's pages read from their lines alone, (lines, width, height) each: running
    headers and footers that repeat across pages are furniture wherever they sit (`repeated_furniture`)."""
    items = [[ln for ln in source_lines(lines) if ln.text.strip()] for lines, _, _ in pages]
    repeated = repeated_furniture([(page, h) for page, (_, _, h) in zip(items, pages, strict=True)])
    return [
        lines_tree(lines, w, h, page=first_page + k, repeated=repeated[k])
        for k, (lines, w, h) in enumerate(pages)
    ]


REPEAT_BAND = 0.15  # a repeated line within this share of the page's top or bottom edge is furniture
_DIGITS = re.compile(r"[0-9]+")


def repeated_furniture(pages: Sequence[tuple[Sequence[Line], float]]) -> list[dict[int, str]]:
    """For each page (its `Line`s in source order, as `source_lines` numbers them, and its height), the lines
    within `REPEAT_BAND` of its top or bottom edge whose text, numbers aside ("Page 3", "Chapter 2"), comes
    back near the same edge on at least half of the document's pages, and on two at least: running headers
    and footers further in than one page's rules can tell (`edge_furniture`)."""

    def key(line: Line, height: float) -> tuple[str, str] | None:
        edge = (
            "top"
            if line.y0 < REPEAT_BAND * height
            else "bottom"
            if line.y1 > (1 - REPEAT_BAND) * height
            else ""
        )
        text = " ".join(_DIGITS.sub("#", line.text).lower().split())
        return (edge, text) if edge and text.strip("# ") else None

    counts: dict[tuple[str, str], int] = {}
    for lines, height in pages:
        for found in {key(ln, height) for ln in lines} - {None}:
            counts[found] = counts.get(found, 0) + 1
    needed = max(2, (len(pages) + 1) // 2)
    out = []
    for lines, height in pages:
        marks = {}
        for line in lines:
            found = key(line, height)
            if found is not None and counts[found] >= needed:
                marks[line.index] = HEADER if found[0] == "top" else FOOTER
        out.append(marks)
    return out


def line_blocks(
    items: list[Line],
    width: float,
    height: float,
    furniture: dict[int, str] | None = None,
    paper: Sequence[float] | None = None,
    regions: Sequence[Region] | None = None,
    size: float | None = None,
) -> list[Block]:
    """Blocks in reading order from `Line`s; `furniture` (index -> kind) when already known; `paper` as
    for `lines_tree`; with `regions`, the body's lines grouped and ordered by them
    (`jocr.layout.regions.region_units`); `size`: the page's body size where `items` are a part of a page
    (else the size most of their characters are set in)."""
    if not items:
        return []
    own_sizes = {id(ln): ln.size for ln in items}
    items = snapped_ocr_sizes(items)
    given = size
    size = given or body_size(items)
    marks = [ln for ln in items if _decoration(ln, size)]
    items = [ln for ln in items if not _decoration(ln, size)]
    if furniture is None:
        # The edge bands judge a group by its lines' own sizes: snapping is for the paragraphs, and a slide
        # title whose OCR box is 1.2 times the body's (a photo's boxes vary) is still a title, not furniture.
        own = [replace(ln, size=own_sizes[id(ln)]) for ln in items]
        kinds = edge_furniture(own, width, height, paper)
    else:
        kinds = furniture
    body = [ln for ln in items if ln.index not in kinds]
    size = given or body_size(body or items)
    words = PageWords(ln.text for ln in items)  # how the page spells the words it breaks at a hyphen
    blocks: list[Block] = []
    top = [ln for ln in items if ln.index in kinds and ln.y0 < height / 2]
    bottom = [ln for ln in items if ln.index in kinds and ln.y0 >= height / 2]
    blocks += [_furniture_block(ln, kinds[ln.index]) for ln in sorted(top, key=lambda ln: (ln.y0, ln.x0))]
    contents = contents_split(body, size)  # a contents page: its entries one list (`jocr.layout.contents`)
    if contents is not None:
        above, entries, below = contents
        body_blocks = _ordered_blocks(above, size, height, words, regions) + entries
        body_blocks += _ordered_blocks(below, size, height, words, regions)
    else:
        body_blocks = _ordered_blocks(body, size, height, words, regions)
    set_heading_levels(body_blocks, size)
    blocks += body_blocks
    blocks += [_furniture_block(ln, kinds[ln.index]) for ln in sorted(bottom, key=lambda ln: (ln.y0, ln.x0))]
    for line in marks:  # in the tree, out of the text: a figure of text without an image of its own
        blocks.append(
            Block(type=FIGURE, text=line.text, markdown="", bbox=line.box, lines=[line.tree_line()])
        )
    return blocks


def _ordered_blocks(
    lines: list[Line], size: float, height: float, words: PageWords, regions: Sequence[Region] | None
) -> list[Block]:
    """Blocks of body lines in reading order: grouped and ordered by a layout detector's `regions`
    (`regions.region_units`), else column by column (`line_columns.reading_order`)."""
    blocks: list[Block] = []
    if not lines:
        return blocks
    if regions:
        for region, column in region_units(lines, list(regions), size):
            blocks += region_blocks(region, _column_blocks(column, size, height, words), size)
        return blocks
    for column in reading_order(lines, size):
        blocks += _column_blocks(column, size, height, words)
    return blocks


# An OCR line's size is its box's height, which varies with the glyphs it holds (ascenders, descenders,
# accents): lines within these factors of the page's median height are taken as set in one size.
OCR_SIZE_SPREAD = (0.75, 1.3)


def snapped_ocr_sizes(items: list[Line]) -> list[Line]:
    """OCR lines (any source but the text layer, which knows its font sizes) whose height is within
    `OCR_SIZE_SPREAD` of the median OCR line height get that median as their size, so that a line with
    descenders is neither a heading nor a change of font; the others keep their own."""
    heights = [ln.size for ln in items if ln.source != "textlayer" and ln.size > 0]
    if not heights:
        return items
    median = statistics.median(heights)
    low, high = OCR_SIZE_SPREAD
    for ln in items:
        if ln.source != "textlayer" and low * median <= ln.size <= high * median:
            ln.size = median
    return items


def _decoration(line: Line, body: float) -> bool:
    """Text set as decoration, not read: rotated or vertical (its box far taller than its font size and
    than it is wide: a watermark, an archive's stamp in the margin; a line with a drop cap is tall but
    wide) or a watermark's giant letters."""
    width = line.x1 - line.x0
    return (line.height > 2.5 * max(line.size, 1.0) and width < line.height) or line.size > 5 * body


def _furniture_block(line: Line, kind: str) -> Block:
    text = line.text.replace(SOFT_HYPHEN, "-")
    return Block(type=kind, text=text, markdown=text, bbox=line.box, lines=[line.tree_line()])


# -- blocks of one column -------------------------------------------------------------------------------


def _column_blocks(
    lines: list[Line], size: float, page_height: float, words: PageWords | None = None
) -> list[Block]:
    """A column's rows as blocks; `words` the page's, for words broken at a line's end (`join_text`)."""
    rows = rows_of(lines)
    if not rows:
        return []
    pitch = line_pitch(rows, size)
    right = _right_edge(rows)
    left = min(r.x0 for r in rows)
    last_body = max((r.y1 for r in rows if r.size > FOOTNOTE_SIZE * size), default=0.0)
    blocks: list[Block] = []
    current: list[Row] = []
    kind = PARAGRAPH
    index = 0
    as_text = 0  # rows before this index were read as rows of cells that are text (`_table_or_contents`)
    while index < len(rows):
        row = rows[index]
        em = max(row.size, 1.0)
        row_kind = _row_kind(row, size, page_height, last_body)
        heading_goes_on = kind == HEADING and bool(current) and current[-1].bold == row.bold
        if row_kind == HEADING and not heading_goes_on and not _heading_room(rows, index, size, pitch):
            row_kind = PARAGRAPH
        cells = row.cells(em)
        run = _cell_rows(rows, index, em, size) if len(cells) >= 2 and row_kind != HEADING else 0
        table = _table_or_contents(rows[index : index + run], em) if run and index >= as_text else None
        if table:
            if current:
                blocks.append(_text_block(kind, current, words))
                current = []
            blocks.extend(table)
            index += run
            continue
        if run:
            as_text = index + run
        if current and _continues(current, kind, row, row_kind, pitch, right, left):
            current.append(row)
        else:
            if current:
                blocks.append(_text_block(kind, current, words))
            current, kind = [row], row_kind
        index += 1
    if current:
        blocks.append(_text_block(kind, current, words))
    return _inline_code(blocks, size)


def _heading_room(rows: list[Row], index: int, size: float, pitch: float) -> bool:
    """Whether a heading found by weight alone (a bold row of the body's size) stands as headings do: first
    in its column, numbered, or with more room above it than a line pitch (a bold line inside a block of
    text, such as an algorithm's keyword, is no heading)."""
    row = rows[index]
    if row.size >= HEADING_SIZE * size or index == 0 or _SECTION_NUMBER.match(row.text):
        return True
    return row.y0 - rows[index - 1].y0 > 1.2 * pitch


def _inline_code(blocks: list[Block], size: float) -> list[Block]:
    """One monospace line set tight below a paragraph and flush with its left edge (a URL or a command in
    the text) goes back into the paragraph: code stands apart or is indented."""
    out: list[Block] = []
    for block in blocks:
        previous = out[-1] if out else None
        tight = previous is not None and block.bbox[1] - previous.bbox[3] < 0.6 * size
        flush = previous is not None and abs(block.bbox[0] - previous.bbox[0]) < 0.5 * size
        if tight and flush and previous.type == PARAGRAPH and block.type == CODE and len(block.lines) == 1:
            previous.text = join_text([previous.text, block.text])
            previous.lines += block.lines
            previous.bbox = union([previous.bbox, block.bbox])
            previous.markdown = _markdown(previous)
            continue
        near = previous is not None and block.bbox[1] - previous.bbox[3] < 2.5 * size
        if near and previous.type == CODE and block.type == CODE:  # one listing with blank lines in it
            out[-1] = code_block(previous.lines + block.lines)
            continue
        out.append(block)
    return out


def code_block(lines: list[TreeLine]) -> Block:
    """A code block from its lines: rows top to bottom, each indented by its distance from the leftmost
    row in a monospace character's width (0.6 em), a blank line where rows are more than a pitch and a
    half apart."""
    rows: list[list[TreeLine]] = []
    for line in sorted(lines, key=lambda ln: (ln.bbox[1], ln.bbox[0])):
        if rows and line.bbox[1] < (rows[-1][0].bbox[1] + rows[-1][0].bbox[3]) / 2:
            rows[-1].append(line)
        else:
            rows.append([line])
    size = max(ln.size for ln in lines) or 10.0
    left = min(ln.bbox[0] for ln in lines)
    steps = [b[0].bbox[1] - a[0].bbox[1] for a, b in zip(rows, rows[1:], strict=False)]
    pitch = statistics.median(steps) if steps else size
    out = []
    for k, row in enumerate(rows):
        if k and row[0].bbox[1] - rows[k - 1][0].bbox[1] > 1.5 * pitch:
            out.append("")
        indent = " " * max(0, round((row[0].bbox[0] - left) / (0.6 * size)))
        out.append(indent + " ".join(ln.text for ln in sorted(row, key=lambda ln: ln.bbox[0])))
    text = "\n".join(out)
    return Block(type=CODE, text=text, markdown=f"```\n{text}\n```", bbox=union(ln.bbox for ln in lines),
                 lines=list(lines))  # fmt: skip


def _right_edge(rows: list[Row]) -> float:
    ends = sorted(r.x1 for r in rows)
    return ends[int(0.9 * (len(ends) - 1))]


def _row_kind(row: Row, size: float, page_height: float, last_body: float) -> str:
    text = row.text.strip()
    if row.mono and not _TYPOGRAPHIC_BULLET.match(text):
        return CODE
    if list_item(text):
        big = row.size >= HEADING_SIZE * size or (row.bold and len(text) < 80)
        return HEADING if big and LIST_NUMBER.fullmatch(text) else LIST_ITEM
    if row.size >= HEADING_SIZE * size and len(text) <= MAX_HEADING_CHARS:
        return HEADING
    if row.size <= FOOTNOTE_SIZE * size and row.y0 >= last_body - 1 and row.y0 > 0.6 * page_height:
        if FOOTNOTE_START.match(text):
            return FOOTNOTE
    if row.bold and len(text) <= 80 and not SENTENCE_END.search(text):
        return HEADING
    if _CAPTION.match(text):
        return CAPTION
    return PARAGRAPH


def _continues(
    current: list[Row], kind: str, row: Row, row_kind: str, pitch: float, right: float, left: float
) -> bool:
    """Whether `row` goes on the block of `current` rows (of kind `kind`)."""
    last = current[-1]
    step = row.y0 - last.y0
    if step <= 0 or step > PARAGRAPH_STEP * max(pitch, last.size * 1.1):
        return False
    if last.text.endswith(SOFT_HYPHEN):
        return True  # a word broken across the lines
    if abs(row.size - last.size) > 0.1 * last.size or row.bold != last.bold or row.mono != last.mono:
        return False
    if kind == CODE:
        return row_kind == CODE
    if row_kind in (LIST_ITEM, CAPTION) or (row_kind == FOOTNOTE and kind != FOOTNOTE):
        return False
    if kind == HEADING:
        return row_kind == HEADING and len(current) < 3 and not _SECTION_NUMBER.match(row.text)
    if kind == FOOTNOTE:
        return row_kind != FOOTNOTE or not FOOTNOTE_START.match(row.text)
    em = last.size
    if kind == LIST_ITEM:
        first = current[0]
        return row.x0 > first.x0 + 0.3 * em or last.x1 >= right - 3 * em
    first = current[0]
    if len(current) >= 2 and current[1].x0 > first.x0 + 0.8 * em and row.x0 < current[1].x0 - 0.8 * em:
        return False  # back out of a hanging indent: the next entry of a reference list or change log
    if row.x0 > last.x0 + 0.8 * em and row.x0 > left + 0.8 * em:
        # an indented first line starts the next paragraph, unless it follows a block's first line that
        # fills the measure without ending a sentence: a hanging indent, the entry's next line
        full = last.x0 <= left + 0.8 * em and last.x1 >= right - 3 * em
        return len(current) == 1 and full and not SENTENCE_END.search(last.text)
    short = last.x1 < right - max(3 * em, 0.12 * (right - left))
    return not (short and SENTENCE_END.search(last.text))


def _text_block(kind: str, rows: list[Row], words: PageWords | None = None) -> Block:
    lines = [ln for row in rows for ln in row.lines]
    tree_lines = [ln.tree_line() for ln in lines]
    bbox = union(ln.box for ln in lines)
    if kind == CODE:
        return code_block(tree_lines)
    text = join_text([r.text for r in rows], words)
    block = Block(type=kind, text=text, bbox=bbox, lines=tree_lines)
    if kind == LIST_ITEM:
        match = LIST_BULLET.fullmatch(text) or LIST_NUMBER.fullmatch(text)
        if match:
            block.marker, block.text = match.group(1), match.group(2)
    if kind == PARAGRAPH and _CAPTION.match(text):
        block.type = CAPTION
    block.level = None
    block.markdown = _markdown(block)
    return block


def _markdown(block: Block) -> str:
    from jocr.layout.render import block_markdown

    return block_markdown(block)


def _cell_rows(rows: list[Row], start: int, em: float, size: float) -> int:
    """How many rows from `start` are rows of cells (two or more groups of lines an em apart, not a heading
    whose number stands apart from its title), when at least two in a row are; else 0."""
    end = start
    while end < len(rows) and len(rows[end].cells(em)) >= 2:
        if end > start and (rows[end].y0 - rows[end - 1].y1 > 3 * em or abs(rows[end].size - em) > 0.1 * em):
            break
        if _row_kind(rows[end], size, float("inf"), 0.0) == HEADING:
            break
        end += 1
    return end - start if end - start >= 2 else 0


def _table_or_contents(rows: list[Row], em: float) -> list[Block] | None:
    """Rows of cells: a table of contents (most rows end in a page number after a title) as list items,
    columns of prose as paragraphs (`_prose_columns`), None where the cells are text read row by row
    (numbered lines, code: `jocr.layout.table_cells.not_a_table`), else a table."""
    cells = [[join_text([ln.text for ln in c]) for c in row.cells(em)] for row in rows]
    cells = [[c for c in row if not _LEADERS.fullmatch(" " + c)] or row for row in cells]
    if is_contents(cells):
        left = min(r.x0 for r in rows)
        out = []
        for row, row_cells in zip(rows, cells, strict=True):
            title = _LEADERS.sub("", " ".join(row_cells[:-1])).strip()
            depth = min(6, 1 + round((row.x0 - left) / (2 * em)))
            block = Block(type=LIST_ITEM, text=f"{title} {row_cells[-1]}", marker="-", level=depth)
            block.bbox, block.lines = row.box, [ln.tree_line() for ln in row.lines]
            block.markdown = "  " * (depth - 1) + f"- {block.text}"
            out.append(block)
        return out
    starts = _column_starts([row.cells(em) for row in rows], em)
    grid: list[list[str]] = []
    members: list[list[list[Line]]] = [[] for _ in starts]
    for row in rows:
        slots = [""] * len(starts)
        for cell in row.cells(em):
            at = min(range(len(starts)), key=lambda k: abs(starts[k] - cell[0].x0))
            slots[at] = (slots[at] + " " + join_text([ln.text for ln in cell])).strip()
            members[at].append(cell)
        grid.append(slots)
    filled = [len(c) for slots in grid for c in slots if c]
    why = not_a_table(grid)
    if (len(rows) >= PROSE_TABLE_ROWS and statistics.median(filled) >= PROSE_CELL_CHARS) or why == PROSE:
        return _prose_columns(members)
    if why:
        return None
    body = ["<tr>" + "".join(f"<td>{_escape(s)}</td>" for s in slots) + "</tr>" for slots in grid]
    html = "<table>" + "".join(body) + "</table>"
    lines = [ln for row in rows for ln in row.lines]
    text = "\n".join(" | ".join(c) for c in cells)
    return [Block(type=TABLE, text=text, markdown=html, html=html, bbox=union(ln.box for ln in lines),
                  lines=[ln.tree_line() for ln in lines])]  # fmt: skip


# Rows of cells whose cells hold prose (this many characters in the median, over this many rows at least)
# are columns of text no gutter split (lines run over a narrow gutter), not a table: read column by column.
PROSE_CELL_CHARS = 25
PROSE_TABLE_ROWS = 4


def _prose_columns(members: list[list[list[Line]]]) -> list[Block]:
    """Each column's cells, top to bottom, as one paragraph, the columns left to right."""
    out = []
    for cells in members:
        lines = [ln for cell in cells for ln in cell]
        if not lines:
            continue
        text = join_text([join_text([ln.text for ln in cell]) for cell in cells])
        block = Block(type=PARAGRAPH, text=text, bbox=union(ln.box for ln in lines),
                      lines=[ln.tree_line() for ln in lines])  # fmt: skip
        block.markdown = _markdown(block)
        out.append(block)
    return out


def is_contents(cells: list[list[str]]) -> bool:
    """Whether rows of cells are a table of contents: most rows are a title (after a section number at
    most) and a page number, and the page numbers never go down."""
    numbers = []
    for row in cells:
        title = row[1:-1] if len(row) == 3 and _SECTION_NUMBER.match(row[0] + " x") else row[:-1]
        if len(title) == 1 and _TOC_PAGE.fullmatch(row[-1]) and re.search(r"[^\W\d_]", title[0]):
            numbers.append(row[-1])
    digits = [int(n) for n in numbers if n.isdigit()]
    return len(numbers) >= max(2, 0.6 * len(cells)) and digits == sorted(digits)


def _column_starts(rows_cells: list[list[list[Line]]], em: float) -> list[float]:
    starts: list[float] = []
    for cells in rows_cells:
        for cell in cells:
            if not any(abs(s - cell[0].x0) < 1.5 * em for s in starts):
                starts.append(cell[0].x0)
    return sorted(starts)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- headings -------------------------------------------------------------------------------------------


def set_heading_levels(blocks: list[Block], size: float) -> None:
    """Levels: the page's largest heading, at least `TITLE_SIZE` times the body size, first among its
    headings and the only one of its size, is its title (level 1); numbered headings take their depth
    ("2.1": 3); the others rank by size (larger first, from 2)."""
    headings = [b for b in blocks if b.type == HEADING]
    if not headings:
        return
    # a heading without lines (written by a model, not found in the line source) counts as body size
    sizes = {id(b): max((ln.size for ln in b.lines), default=size) for b in headings}
    largest = max(sizes.values())
    ranks = sorted({round(s * 2) / 2 for s in sizes.values()}, reverse=True)
    first = headings[0]
    for block in headings:
        number = _SECTION_NUMBER.match(block.text)
        alone = sum(1 for s in sizes.values() if abs(s - largest) < 0.5) == 1
        if (
            block is first
            and sizes[id(block)] == largest
            and largest >= TITLE_SIZE * size
            and alone
            and not number
        ):
            block.type, block.level = TITLE, 1
        elif number:
            block.level = min(6, 2 + number.group(1).count("."))
        else:
            block.level = min(
                6,
                2
                + ranks.index(round(sizes[id(block)] * 2) / 2)
                - (1 if ranks[0] >= TITLE_SIZE * size else 0),
            )
            block.level = max(2, block.level)
        block.markdown = _markdown(block)
