"""Tables inside the page pipeline (docs/elements.md, "Tables in pages"): where a page's tree has a table
block (marked by the rules over lines or by the model), the table reader (`jocr.layout.tables`) reads the
block's region again from the page's geometry, and its HTML replaces the block's when it is the better
table (`better`); and a document-level pass joins a table that runs on over a page break
(`merge_continued_tables`).

The region read is the block's box grown to the horizontal rules just above and below it (a booktabs top
rule sits above a header row that the line rules, which see only rows of cells, leave out) and to the rows
of pieces between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from jocr.bbox import overlap_area
from jocr.cjk import WORDS
from jocr.layout.contents import LETTER, TOC_PAGE
from jocr.layout.geometry import Line, body_size
from jocr.layout.line_rules import is_contents, line_blocks
from jocr.layout.table_cells import misread
from jocr.layout.tables import Piece, Rule, Table, TableConfig, read_table
from jocr.layout.tables_sources import PAGE_SPLIT, SplitConfig
from jocr.layout.tree import FROM_ANCHORED, LIST_ITEM, TABLE, PageTree

_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S)


@dataclass
class TablePassConfig:
    """When the reader's table replaces a block's."""

    grow_lines: float = 2.5  # a rule this many line heights above/below the block bounds its region
    min_words_kept: float = 0.9  # the reader's table keeps at least this share of the block's words
    max_words_added: float = 4.0  # and adds at most this share more (a region that swallowed prose)
    header_lines: int = 4  # lines above a table block taken in as its header rows, at most
    header_share: float = 0.45  # a piece wider than this share of the table's width is prose, no header
    # page images: each table found is read again from its crop's own OCR words ("none": from the page's
    # OCR lines, each line one piece); the crop is the region grown by `crop_pad` line heights
    crop_ocr: str = "auto"
    crop_pad: float = 0.5
    # a table found in the pixels inside a table block of the rules at most this share of the block's area
    # splits it (`_split_host`)
    host_share: float = 0.5
    # how a page's OCR lines with word boxes are split into pieces (only at gaps lined up with other rows)
    page_split: SplitConfig = field(default_factory=lambda: PAGE_SPLIT)


def improve_tables(tree: PageTree, pieces: list[Piece], rules: list[Rule],
                   config: TablePassConfig | None = None) -> list[tuple[str, str]]:  # fmt: skip
    """Replace the HTML of `tree`'s table blocks (boxes in the unit of `pieces`) by the reader's where it
    is better; the (old Markdown, new Markdown) of each block replaced. On an anchored page, a model's table
    where the reader finds no table of two rows and two columns gives way to the blocks the rules make of
    its lines (`_given_way`; its new Markdown then ""): the member writes tables over a title block beside
    a sidebar, field lists run into the next section, headings with their numbers, a paragraph the text
    layer broke at its punctuation, where the page's own pieces hold none."""
    config = config or TablePassConfig()
    replaced = []
    for block in list(tree.blocks):
        if block.type != TABLE or block.bbox is None or _code(block):
            continue
        region = grown_region(block.bbox, pieces, rules, config)
        table = read_table(pieces, rules, region, TableConfig())
        if better(table, block.html or block.markdown, config):
            replaced.append((block.markdown, table.html))
            block.html = block.markdown = table.html
            block.text = table.text
        elif tree.source == FROM_ANCHORED and (table.empty or table.n_rows < 2 or table.n_cols < 2):
            if _given_way(tree, block):
                replaced.append((block.markdown, ""))
    return replaced


def _given_way(tree: PageTree, block) -> bool:
    """Puts the blocks the rules over lines make of a table block's lines (`line_rules.line_blocks`, at the
    page's body size, none taken for furniture) in its place; False where its lines have no boxes."""
    lines = _measured(block.lines)
    if not lines:
        return False
    _replace(tree, block, _laid_out(tree, lines))
    tree.numbered()
    return True


def _laid_out(tree: PageTree, lines: list[Line]) -> list:
    """The blocks the rules over lines make of some of a page's `lines` (`line_rules.line_blocks`), at the
    page's body size, none taken for furniture."""
    size = body_size(_measured([ln for b in tree.blocks if not b.furniture for ln in b.lines]))
    return line_blocks(lines, tree.width, tree.height, furniture={}, size=size)


def _replace(tree: PageTree, block, blocks: list) -> None:
    """`blocks` in `block`'s place in the tree (found by identity: blocks compare by value)."""
    at = next(k for k, b in enumerate(tree.blocks) if b is block)
    tree.blocks[at : at + 1] = blocks


def _measured(lines) -> list[Line]:
    """The tree lines with boxes as the rules' `Line`s (a run's number as its index)."""
    return [
        Line(ln.run - 1 if ln.run else k, ln.text, ln.bbox, ln.size, ln.weight, ln.mono, ln.source)
        for k, ln in enumerate(lines)
        if ln.bbox is not None
    ]


def _code(block) -> bool:
    """A block set mostly in a monospace font: a code listing (line numbers beside code read as a table),
    whose wide spaces are no column gaps."""
    lines = block.lines or []
    return bool(lines) and sum(bool(getattr(ln, "mono", False)) for ln in lines) >= 0.5 * len(lines)


def has_tables(tree: PageTree | None) -> bool:
    return tree is not None and any(b.type == TABLE and b.bbox is not None for b in tree.blocks)


def page_with_tables(
    tree: PageTree | None, markdown: str, pieces=None, rules=None, image=None, lines=None
) -> str:
    """A finished page's Markdown after its table pass (the tree is changed in place). For a tree in points
    over a PDF page's text layer, given the page's `pieces` and `rules` (its one read): `improve_tables`,
    and each table read again replaces its old HTML in `markdown`, or, where an old table's text is not
    found there, the Markdown is rendered again from the tree. For a tree read from pixels (`from_pixels`: an
    image's, or a scanned PDF page's in points) and its page `image` (the page as its tree's lines were read
    from, any scale): the tables found in the image (`image_page_tables`; the
    page's OCR `lines`, where given, lend their word boxes), the Markdown rendered again when any was.
    The one table pass of `jocr parse`, `jocr batch` and the exported models' `infer` (through
    `jocr.layout.page_read.tables_markdown`)."""
    from jocr.layout.render import page_markdown

    if tree is None:
        return markdown
    if tree.from_pixels:  # an image, or a scanned PDF page read from its OCR lines (in points)
        if image is None or not image_page_tables(tree, image, lines=lines):
            return markdown
        return page_markdown(tree)
    if pieces is None or not has_tables(tree):
        return markdown
    out = markdown
    for old, new in improve_tables(tree, pieces, rules or []):
        if not old or not new or old not in out:
            return page_markdown(tree)
        out = out.replace(old, new, 1)
    return out


def image_page_tables(tree: PageTree, image, config=None, lines=None) -> int:
    """Tables found in a page image (`jocr.layout.tables_detect.find_tables` over the tree's OCR lines as
    pieces and the rules in the image's pixels) put into the tree in place: the blocks inside a table's
    region give way to one table block where the first of them stood. A table block already there is read
    again only when the found table is `better`. `lines`: the source lines the tree was built from
    (`jocr.lines.types.Line`, same unit), whose word boxes split a line that bridges a table's columns
    (`tree_pieces`). Returns the number of tables put in. Never raises for what the page holds (a page the
    detector cannot read keeps its tree)."""
    from jocr.layout.tables_detect import find_tables
    from jocr.layout.tables_sources import image_rules

    config = config or TablePassConfig()
    body = _table_body(tree)
    pieces = tree_pieces(body, lines, config)
    if len(pieces) < 4 or not tree.width:
        return 0
    scale = image.width / tree.width  # pixels per tree unit
    line_h = sorted(p.height for p in pieces)[len(pieces) // 2]
    tables = find_tables(
        pieces, image_rules(image, scale), read_again=lambda t: crop_table(image, scale, t, line_h, config)
    )
    put = 0
    for table in tables:
        put += _put_table(tree, table, config)
    for region in tree.table_regions:  # a detector's table the rules over the page's lines did not find
        if _found_there(tree, region):
            continue
        if _a_list(tree, region):
            continue
        table = region_table(image, scale, region, line_h, config)
        if table is not None:
            put += _put_table(tree, table, config)
    if put:
        tree.numbered()
    return put


def _found_there(tree: PageTree, region) -> bool:
    """Whether the rules' tables already read a detector's table region: a table block overlaps it, unless
    the region holds two table blocks or more whole, and nothing of the body but lines between them (the
    rules parted one table at a row whose cells did not line up with the rows around it: a cell of
    several lines, a spanning label), which the region's crop then reads as one."""
    tables = [b.bbox for b in tree.blocks if b.type == TABLE and b.bbox]
    overlapping = [box for box in tables if overlap_area(box, region) > 0]
    held = [box for box in overlapping if _centre_in(box, region)]
    if not overlapping:
        return False
    if len(held) < 2 or len(held) < len(overlapping):
        return True
    top, bottom = min(box[1] for box in held), max(box[3] for box in held)
    inside = [b.bbox for b in _table_body(tree) if b.bbox is not None and _centre_in(b.bbox, region)]
    return any(not top <= (box[1] + box[3]) / 2 <= bottom for box in inside)


def _table_body(tree: PageTree) -> list:
    """The blocks a table found in the page's pixels may be read from or replace: the body less figures
    and formulas."""
    return [b for b in tree.blocks if not b.furniture and b.type not in ("figure", "formula")]


def _a_list(tree: PageTree, region) -> bool:
    """Whether most body blocks in a detector's table region are list items: the rules read entries there
    (a table of contents with its page numbers, a numbered list), which a detector's "table" does not
    overrule."""
    inside = [b for b in tree.body if b.bbox is not None and _centre_in(b.bbox, region)]
    return bool(inside) and 2 * sum(b.type == LIST_ITEM for b in inside) >= len(inside)


def _put_table(tree: PageTree, table: Table, config: TablePassConfig) -> int:
    """Puts a table found in the page's pixels into the tree in place of the body blocks whose centre lies
    in its region (a contents, and a region holding a figure, a formula or furniture, are left alone; a
    table block already there gives way only to a `better` table); 1 when it was put in, else 0."""
    from jocr.layout.tree import Block, TreeLine

    if is_table_of_contents(table):  # a contents stays the list the rules made of it
        return 0
    body = _table_body(tree)
    inside = [b for b in body if b.bbox is not None and _centre_in(b.bbox, table.bbox)]
    if not inside:
        inside = _split_host(tree, table.bbox, config)
    if not inside or any(b.type not in _REPLACEABLE for b in inside):
        return 0
    old = [b for b in inside if b.type == TABLE]
    if old and not better(table, _taken(inside), config):
        return 0
    lines = [
        TreeLine(ln.text, ln.bbox, ln.source, confidence=ln.confidence) for b in inside for ln in b.lines
    ]
    block = Block(TABLE, text=table.text, markdown=table.html, html=table.html, bbox=table.bbox, lines=lines)
    at = tree.blocks.index(inside[0])
    drop = {id(b) for b in inside}
    tree.blocks = [b for b in tree.blocks if id(b) not in drop]
    tree.blocks.insert(min(at, len(tree.blocks)), block)
    return 1


def _split_host(tree: PageTree, region, config: TablePassConfig) -> list:
    """Where a table found in the pixels lies inside a table block of the rules that reaches well past it
    (the rules made one table of two page columns whose rows line up, one of them holding the found
    table): the host block's lines outside `region` are laid out again by the line rules (as in
    `_given_way`) and its lines inside become one block, placed after the last laid-out block above it
    in its column; that block is returned (for the table to replace), [] where no block hosts it."""
    from jocr.layout.tree import Block

    tables = [b for b in tree.blocks if b.type == TABLE and b.bbox]
    host = next((b for b in tables if _hosts(b.bbox, region, config)), None)
    if host is None:
        return []
    taken = [tl for tl in host.lines if tl.bbox is not None and _centre_in(tl.bbox, region)]
    rest = [ln for ln in _measured(host.lines) if not _centre_in(ln.box, region)]
    if not taken or not rest:
        return []
    laid = _laid_out(tree, rest)
    part = Block("paragraph", text=" ".join(tl.text for tl in taken), bbox=tuple(region), lines=taken)
    above = [k for k, b in enumerate(laid) if b.bbox and _above_in_column(b.bbox, region)]
    laid.insert(above[-1] + 1 if above else 0, part)
    _replace(tree, host, laid)
    return [part]


def _hosts(box, region, config: TablePassConfig) -> bool:
    """Whether a table block's `box` holds `region` and reaches well past it (at most `host_share` of its
    area is the region's)."""
    area = (region[2] - region[0]) * (region[3] - region[1])
    host_area = (box[2] - box[0]) * (box[3] - box[1])
    return area > 0 and overlap_area(box, region) >= 0.9 * area and area <= config.host_share * host_area


def _above_in_column(box, region) -> bool:
    """Whether `box` ends above `region`'s top and shares some of its width."""
    return box[3] <= region[1] and min(box[2], region[2]) > max(box[0], region[0])


def region_table(image, scale: float, region, line_h: float, config: TablePassConfig) -> Table | None:
    """The table of a region a layout detector called a table, read from its crop
    (`jocr.layout.elements.image_region_table`: the rules over the crop's OCR words and rules, or where
    they find none, the table structure model's); None when no table of two rows and two columns is read."""
    if config.crop_ocr == "none":
        return None
    table = _padded_crop_table(image, scale, region, line_h, config)
    if table is None or table.empty or table.n_rows < 2 or table.n_cols < 2:
        return None
    table.bbox = tuple(region)
    return table


def tree_pieces(blocks, lines=None, config: TablePassConfig | None = None) -> list[Piece]:
    """The table reader's pieces of `blocks`' lines: each line one piece, or, where the source `lines`
    give its word boxes, split at the gaps where the run after it lines up with runs of the rows around
    it (`jocr.layout.tables_sources.line_pieces` with `config.page_split`)."""
    from types import SimpleNamespace

    from jocr.layout.tables_sources import line_pieces

    config = config or TablePassConfig()
    found = _words_by_box(lines or ())
    own = [
        SimpleNamespace(text=line.text, box=tuple(float(v) for v in line.bbox), words=found(line.bbox))
        for block in blocks
        for line in block.lines
        if line.bbox is not None and line.text.strip()
    ]
    return line_pieces(own, config.page_split)


def _words_by_box(lines):
    """A look-up from a tree line's box to the word boxes of the source line with that box (the tree keeps
    each line's box, rounded to 0.01 in its JSON form); None where no source line has it."""
    index: dict[tuple[int, int], list] = {}
    for line in lines:
        if getattr(line, "words", None):
            index.setdefault((round(line.box[0]), round(line.box[1])), []).append(line)

    def found(box):
        key = (round(box[0]), round(box[1]))
        for dx in (0, -1, 1):
            for dy in (0, -1, 1):
                for line in index.get((key[0] + dx, key[1] + dy), ()):
                    if max(abs(a - b) for a, b in zip(line.box, box, strict=True)) <= 0.5:
                        return line.words
        return None

    return found


def is_table_of_contents(table: Table) -> bool:
    """Whether a found table is a table of contents, by its rows (`jocr.layout.line_rules.is_contents`)
    or its columns (`contents_columns`)."""
    return is_contents(_row_texts(table)) or contents_columns(table)


def contents_columns(table: Table) -> bool:
    """Whether a found table is a table of contents read down its columns: its last column, and any other
    column of page numbers only (three digits at most: a column of years is none), follows a column of
    titles; the last column holds two page numbers at least and 0.6 for each row; each column's numbers,
    top to bottom, never go down but for OCR misreadings (`jocr.layout.table_cells.misread`). A contents
    set in two columns has two such pairs. A photographed page's slant sets its page numbers, split off
    by their gap, half a line off their titles, so the rows read merge entries and the rows' test
    (`jocr.layout.line_rules.is_contents`) misses it; the columns do not depend on the rows."""
    columns: list[list[str]] = [[] for _ in range(table.n_cols)]
    for cell in sorted(table.cells, key=lambda c: (c.row, c.col)):
        columns[cell.col].extend(t for t in (w.strip(".·…") for w in cell.text.split()) if t)
    pages = [bool(col) and all(TOC_PAGE.fullmatch(t) and len(t) <= 3 for t in col) for col in columns]
    if len(columns) < 2 or not pages[-1]:
        return False
    for k, col in enumerate(columns):
        if not pages[k]:
            continue
        if k == 0 or pages[k - 1] or not any(LETTER.search(t) for t in columns[k - 1]):
            return False
        numbers = [int(t) for t in col if t.isdigit()]
        if sum(b < a for a, b in zip(numbers, numbers[1:], strict=False)) > misread(len(numbers)):
            return False
    last = sum(t.isdigit() for t in columns[-1])
    return last >= max(2, 0.6 * table.n_rows)


def _row_texts(table: Table) -> list[list[str]]:
    """Each row's non-empty cell texts, left to right."""
    return [[c.text for c in row if c.text.strip()] for row in table.by_row().values()]


def crop_table(image, scale: float, table: Table, line_h: float, config: TablePassConfig) -> Table:
    """`table`, found in the page's OCR lines (its `bbox` the region), read again from the crop of its
    region (`jocr.layout.elements.image_region_table`): the crop's OCR splits lines into words, so cells
    that the page's OCR joined into one line come apart, and small text is read at the crop's scale. The
    page's reading stays when the crop gives no table of two rows and two columns (or no engine reads
    it), or fewer rows than the page's lines gave (the crop's OCR lost a line's cells, and the line left
    joined the row above as a wrapped cell) unless it is a table of contents (the crop's words part the
    page numbers from their titles, and the pass then leaves the region to the rules' list). A contents
    the page's lines read is not read again: where the crop's rules find no table, the structure model
    would make a grid of it."""
    if config.crop_ocr == "none" or table.bbox is None or is_table_of_contents(table):
        return table
    again = _padded_crop_table(image, scale, table.bbox, line_h, config)
    if again is None or again.empty or again.n_rows < 2 or again.n_cols < 2:
        return table
    if again.n_rows < table.n_rows and not is_table_of_contents(again):
        return table
    again.bbox = table.bbox
    return again


def _padded_crop_table(image, scale: float, region, line_h: float, config: TablePassConfig) -> Table | None:
    """The table read from the crop of `region` grown by `crop_pad` line heights (within the page), only
    the pieces whose centre lies in `region` kept (`jocr.layout.elements.image_region_table`)."""
    from jocr.layout.elements import image_region_table

    pad = config.crop_pad * line_h
    x0, y0, x1, y1 = region
    width, height = image.width / scale, image.height / scale
    box = (max(0.0, x0 - pad), max(0.0, y0 - pad), min(width, x1 + pad), min(height, y1 + pad))
    return image_region_table(image, box, scale, config.crop_ocr, keep=tuple(region))


def _taken(blocks) -> str:
    """What a table found over `blocks` replaces, for `better`: their tables' HTML (the rules over lines
    cut one table into several blocks, or read a part of it) and the other blocks' text."""
    return "".join(b.html or b.markdown if b.type == TABLE else f" {b.text} " for b in blocks)


_REPLACEABLE = frozenset((TABLE, "paragraph", "list_item", "heading", "code"))


def _centre_in(box, region) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return region[0] <= cx <= region[2] and region[1] <= cy <= region[3]


def grown_region(bbox, pieces: list[Piece], rules: list[Rule], config: TablePassConfig):
    """The block's box grown up and down through the horizontal rules that span most of its width, as
    long as the lines crossed on the way read as table rows (`_table_like`: a booktabs table's head above
    its midrule, rows the line rules left out), and otherwise up over unruled header lines
    (`_header_top`)."""
    from jocr.layout.tables import _text_lines

    inside = [p for p in pieces if bbox[0] <= p.cx <= bbox[2] and bbox[1] <= p.cy <= bbox[3]]
    if not inside:
        return bbox
    height = sorted(p.height for p in inside)[len(inside) // 2]
    x0, y0, x1, y1 = bbox
    width = x1 - x0
    spanning = [
        r for r in rules
        if r.horizontal and min(r.x1, x1) - max(r.x0, x0) >= 0.8 * width and r.x1 - r.x0 <= 1.6 * width
    ]  # fmt: skip

    def crossed(lo: float, hi: float) -> bool:
        between = [p for p in pieces if lo < p.cy < hi and p.box[2] > x0 and p.box[0] < x1]
        lines = _text_lines(between)
        # rows of cells, not a heading alone between two ruled tables
        multi = not lines or any(len(line) >= 2 for line in lines)
        return multi and all(_table_like(line, x0, x1, height, config) for line in lines)

    grown_up = False
    for y in sorted((r.y0 for r in spanning if r.y0 < y0), reverse=True):
        if y0 - y > config.grow_lines * 5 * height or not crossed(y, y0):
            break
        y0, grown_up = y - 0.2 * height, True
    for y in sorted(r.y0 for r in spanning if r.y0 > y1):
        if y - y1 > config.grow_lines * 5 * height or not crossed(y1, y):
            break
        y1 = y + 0.2 * height
    for r in spanning:
        if y0 - 0.5 * height <= r.y0 <= y1 + 0.5 * height:
            x0, x1 = min(x0, r.x0), max(x1, r.x1)
    if not grown_up:
        y0 = _header_top(pieces, (x0, y0, x1, y1), height, config)
    return (x0, y0, x1, y1)


def _table_like(line: list[Piece], x0: float, x1: float, height: float, config: TablePassConfig) -> bool:
    """A line that can be a table's row: within its width, no piece wider than `header_share` of it, not
    a caption, not a sentence's end."""
    from jocr.layout.tree import CAPTION_START

    width = x1 - x0
    text = " ".join(p.text for p in line)
    if any(p.box[0] < x0 - height or p.box[2] > x1 + height for p in line):
        return False
    if any(p.box[2] - p.box[0] > config.header_share * width for p in line):
        return False
    return not CAPTION_START.match(text) and not text.rstrip().endswith((":", "."))


def _header_top(pieces: list[Piece], box, height: float, config: TablePassConfig) -> float:
    """The region's top moved up over the lines just above it that read as header rows: within the
    region's width, none of their pieces wider than `header_share` of it (prose, a caption), at most
    `header_lines` of them, each within 1.5 line heights of the one below."""
    from jocr.layout.tables import _text_lines

    x0, top, x1, y1 = box
    below = [p for p in pieces if top <= p.cy <= y1 and x0 <= p.cx <= x1]
    first_column = min(
        (p.box[2] for p in below if p.box[0] <= min(q.box[0] for q in below) + height), default=x0
    )
    above = [
        p for p in pieces if p.cy < top and top - p.box[3] < 8 * height and p.box[2] > x0 and p.box[0] < x1
    ]
    lines = _text_lines(above)
    for k in range(len(lines) - 1, max(-1, len(lines) - 1 - config.header_lines), -1):
        line = lines[k]
        if top - max(p.box[3] for p in line) > 1.5 * height or not _table_like(line, x0, x1, height, config):
            break
        if len(line) == 1 and line[0].box[0] <= first_column:
            break  # one piece from the table's left edge: a line of text, not a header over the columns
        higher = lines[k - 1] if k > 0 else None
        if higher is not None and min(p.box[1] for p in line) - max(p.box[3] for p in higher) < 0.6 * height:
            if not _table_like(higher, x0, x1, height, config):
                break  # the last line of a paragraph, set at the paragraph's pitch
        top = min(p.box[1] for p in line) - 0.2 * height
    return top


def _words(text: str) -> list[str]:
    """A run of letters or digits, or one CJK character, is a word (no spaces between CJK words, and two
    OCR passes over the same text split its runs differently)."""
    return WORDS.findall(text.lower())


def _shape(html: str) -> list[int]:
    return [len(_CELL.findall(row)) for row in _ROW.findall(html)]


def better(table: Table, old_html: str, config: TablePassConfig) -> bool:
    """Whether the reader's `table` is the better reading of the block: a real table (two rows and two
    columns at least) holding nearly all the block's words and not much more, with at least as many filled
    cells in its fullest row as the block has in its own."""
    if table.empty or table.n_rows < 2 or table.n_cols < 2:
        return False
    old_text = re.sub(r"<[^>]+>", " ", old_html)
    old_words, new_words = _words(old_text), _words(table.text)
    if not old_words:
        return True
    new_set = {}
    for w in new_words:
        new_set[w] = new_set.get(w, 0) + 1
    kept = 0
    for w in old_words:
        if new_set.get(w, 0) > 0:
            new_set[w] -= 1
            kept += 1
    if kept < config.min_words_kept * len(old_words):
        return False
    if len(new_words) - kept > config.max_words_added * len(old_words) + 3:
        return False
    # no fewer columns: a reading that merges the block's columns lost gaps the block had seen
    old_filled = max(
        (sum(1 for c in _CELL.findall(row) if c.strip()) for row in _ROW.findall(old_html)), default=0
    )
    new_filled: dict[int, int] = {}
    for cell in table.cells:
        if cell.text:
            new_filled[cell.row] = new_filled.get(cell.row, 0) + 1
    return max(new_filled.values(), default=0) >= old_filled


# -- tables over a page break ----------------------------------------------------------------------------


def merge_continued_tables(trees: list[PageTree]) -> list[int]:
    """Joins a table that ends one page (its last body block) to the table that starts the next page when
    the second repeats the first's header row or has as many columns: the rows go on the first table (a
    repeated header row is dropped), the second block is left empty. `trees` are consecutive pages.
    Returns the indices of the trees changed."""
    joined: list[int] = []
    for prev, nxt in zip(trees, trees[1:], strict=False):
        first = _last_body(prev)
        second = _first_body(nxt)
        if first is None or second is None or first.type != TABLE or second.type != TABLE:
            continue
        a, b = first.html or first.markdown, second.html or second.markdown
        rows_a, rows_b = _ROW.findall(a), _ROW.findall(b)
        if not rows_a or not rows_b:
            continue
        width_a = _width(rows_a)
        width_b = _width(rows_b)
        repeated = _cells_text(rows_a[0]) == _cells_text(rows_b[0])
        if not repeated and (width_a != width_b or not _lined_up(first.bbox, second.bbox, prev.width)):
            continue
        tail = rows_b[1:] if repeated else rows_b
        html = a[: a.rindex("</table>")] + "".join(f"<tr>{r}</tr>" for r in tail) + "</table>"
        first.html = first.markdown = html
        first.text = "\n".join(filter(None, [first.text, second.text]))
        second.html = second.markdown = second.text = ""
        k = trees.index(prev)
        joined.extend(i for i in (k, k + 1) if i not in joined)
    return joined


def _lined_up(a, b, page_width: float) -> bool:
    """Whether two tables' boxes share their left and right edges (within 3% of the page's width)."""
    if a is None or b is None:
        return False
    tol = 0.03 * (page_width or max(a[2], b[2]))
    return abs(a[0] - b[0]) <= tol and abs(a[2] - b[2]) <= tol


def _width(rows: list[str]) -> int:
    widths = [sum(_span(c) for c in re.findall(r"<t[dh][^>]*>", row)) for row in rows]
    return max(set(widths), key=widths.count) if widths else 0


def _span(tag: str) -> int:
    m = re.search(r'colspan="?(\d+)', tag)
    return int(m.group(1)) if m else 1


def _cells_text(row: str) -> list[str]:
    return [" ".join(c.split()) for c in _CELL.findall(row)]


def _body(tree: PageTree):
    return [b for b in tree.blocks if not getattr(b, "furniture", False) and (b.markdown or b.text)]


def _last_body(tree: PageTree):
    blocks = _body(tree)
    return blocks[-1] if blocks else None


def _first_body(tree: PageTree):
    blocks = _body(tree)
    return blocks[0] if blocks else None
