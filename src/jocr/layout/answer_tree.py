"""A page's document tree from a model's answer (docs/layout.md, "Building the tree"):

- anchored pages (`anchored_tree`): each window's answer is split into its Markdown blocks; a block's lines
  are the runs it references (page-wide run numbers, in the text layer's order), so its box is the union of
  theirs. With the page's source lines (`lines`) the boxes and font sizes are the text layer's; without
  them (a server that has only the anchors), each run's top-left corner on the anchor's grid, its extent
  estimated. Furniture runs (`jocr.layout.furniture`) become furniture blocks whether or not the answer
  names them; a window that ran out of room is followed by the runs it never reached; paragraphs the
  model split at every line of a wrapped paragraph are joined back (`_continues`), and a word broken
  across lines joins its next part only where that part goes on the same paragraph.

Unanchored pages (grounding boxes or plain Markdown) get theirs from `jocr.layout.grounding_tree`, which
types blocks with `block_type` / `typed_block` here.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from jocr.layout.anchor_check import (
    ENDED_EARLY,
    compact,
    foreign_text,
    made_up,
    names_a_run,
    referenced,
    skipped_runs,
    typed_in,
    without_foreign,
)
from jocr.layout.contents import with_contents
from jocr.layout.furniture import BOTTOM_BAND, TOP_BAND_SIZED, anchor_furniture, anchor_lines, page_size
from jocr.layout.geometry import BOLD, Line, body_size, joined_without_space, source_lines
from jocr.layout.line_rules import (
    FOOTNOTE_SIZE,
    FOOTNOTE_START,
    HEADING_SIZE,
    MAX_HEADING_CHARS,
    PARAGRAPH_STEP,
    SENTENCE_END,
    code_block,
    set_heading_levels,
)
from jocr.layout.paragraph_breaks import ends_paragraph, line_size, paragraph_parts
from jocr.layout.prose_tables import settled_tables, unwrap_prose_tables
from jocr.layout.render import block_markdown
from jocr.layout.table_rows import LIST_MARKER, answer_cells, grid_html, table_segments
from jocr.layout.tree import (
    CAPTION,
    CAPTION_START,
    CODE,
    FIGURE,
    FOOTNOTE,
    FORMULA,
    FROM_ANCHORED,
    HEADER,
    HEADING,
    LIST_ITEM,
    PARAGRAPH,
    TABLE,
    TITLE,
    Block,
    PageTree,
    lines_unit,
    union,
)
from jocr.lines.hyphens import SOFT_HYPHEN, PageWords, join_soft_hyphens, keeps_hyphen
from jocr.lines.references import REFERENCES, anchor_entries, referenced_numbers
from jocr.lines.types import TEXTLAYER

_HEADING = re.compile(r"(#{1,6})\s+(.*)", re.S)
_LIST = re.compile(r"\s*([-*+•]|[0-9]{1,3}[.)])\s+(.*)", re.S)
_CAPTION = CAPTION_START
_TAGS = re.compile(r"<[^>]+>")
_NUMBER_ONLY = re.compile(r"(?:[0-9]{1,2}|[A-Z])(?:\.[0-9]{1,2}){0,4}\.?")
_SYNTAX = re.compile(r"[\s#>*_|`$-]+")
# What is left of a block written only of malformed run references ("@", "@@14@@55"): no text of the page.
_REFERENCE_DEBRIS = re.compile(r"[\s@0-9]*@[\s@0-9]*")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
# ems a list item's wrapped line may be indented from its marker line (the marker and the gap after it)
HANGING_INDENT = 3.0


def markdown_blocks(text: str) -> list[str]:
    """A Markdown text's blocks: the parts between blank lines, a fenced code block or a `$$` formula kept
    whole however many blank lines it holds."""
    out: list[str] = []
    current: list[str] = []
    fence = None
    for line in text.split("\n"):
        stripped = line.strip()
        if fence is None and not stripped:
            if current:
                out.append("\n".join(current))
                current = []
            continue
        current.append(line)
        if fence is None and (
            stripped.startswith("```")
            or stripped == "$$"
            or stripped.startswith("$$")
            and not stripped.endswith("$$", 2)
        ):
            fence = "```" if stripped.startswith("```") else "$$"
        elif fence is not None and stripped.startswith(fence):
            fence = None
    if current:
        out.append("\n".join(current))
    return out


def block_type(markdown: str) -> tuple[str, int | None]:
    """A Markdown block's type and heading level."""
    text = markdown.strip()
    heading = _HEADING.fullmatch(text)
    if heading:
        level = len(heading.group(1))
        return (TITLE, 1) if level == 1 else (HEADING, level)
    if text.startswith("<table") or "<table>" in text[:40]:
        return TABLE, None
    if text.startswith("```"):
        return CODE, None
    if text.startswith("$$") or text.startswith("\\["):
        return FORMULA, None
    if _IMAGE.fullmatch(text):
        return FIGURE, None
    if _LIST.match(text):
        return LIST_ITEM, None
    if _CAPTION.match(plain_text(text)):
        return CAPTION, None
    return PARAGRAPH, None


def plain_text(markdown: str) -> str:
    """A block's text without its Markdown syntax."""
    text = markdown.strip()
    heading = _HEADING.fullmatch(text)
    if heading:
        text = heading.group(2)
    listed = _LIST.fullmatch(text)
    if listed:  # the marker is the block's own (`Block.marker`), put back when it is rendered
        text = listed.group(2)
    if text.startswith("<table") or "<table>" in text[:40]:
        text = re.sub(r"</t[dh]>\s*<t[dh][^>]*>", " | ", text)
        text = re.sub(r"</tr>", "\n", text)
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _TAGS.sub("", text)
    for fence in ("```", "$$"):
        if text.startswith(fence):
            text = text[len(fence) :].split("\n", 1)[-1] if fence == "```" else text[len(fence) :]
            text = text.rsplit(fence, 1)[0]
    return text.strip()


def typed_block(markdown: str, lines: list[Line]) -> Block:
    kind, level = block_type(markdown)
    block = Block(type=kind, markdown=markdown.strip("\n"), text=plain_text(markdown), level=level)
    if kind == LIST_ITEM:
        match = _LIST.match(markdown)
        block.marker = match.group(1) if match else "-"
    if kind == TABLE:
        block.html = markdown.strip()
    if kind == FORMULA:
        block.latex = markdown.strip().removeprefix("$$").removesuffix("$$").strip()
    block.lines = [ln.tree_line() for ln in lines]
    block.bbox = union(ln.box for ln in lines)
    return block


# -- anchored pages -----------------------------------------------------------------------------------


def page_geometry(
    anchors: Sequence[str], lines: Sequence | None, image_width: float = 0
) -> tuple[list[Line], float, float, str]:
    """The page's runs as `Line`s indexed by page-wide run number - 1, the page's size and unit: the lines
    when given (a text layer's in points, or an image's OCR lines in pixels of its `image_width`,
    `lines_unit`), else the anchors' positions scaled to points, extents estimated."""
    width, height = page_size(anchors)
    total = sum(len(anchor_entries(a)) for a in anchors)
    if lines is not None and len(lines) >= total and width > 0:
        ocr = any(getattr(line, "source", TEXTLAYER) != TEXTLAYER for line in lines)
        return source_lines(lines)[:total], width, height, lines_unit(width, image_width, ocr)
    grid, gw, gh = anchor_lines(anchors)
    if width <= 0:
        width, height = gw, gh
    sx, sy = width / gw, height / gh
    tops = sorted({ln.y0 for ln in grid})
    steps = [b - a for a, b in zip(tops, tops[1:], strict=False) if b - a > 2]
    line_height = 0.8 * (statistics.median(steps) if steps else 12.0) * sy
    out = []
    for ln in grid:
        x0, y0 = ln.x0 * sx, ln.y0 * sy
        box = (x0, y0, min(width, x0 + 0.5 * line_height * len(ln.text)), min(height, y0 + line_height))
        out.append(Line(ln.index, ln.text, box, 0.0, estimated=True))
    return out, width, height, "pt"


def anchored_tree(
    texts: Sequence[str],
    anchors: Sequence[str],
    reasons: Sequence[str | None] = (),
    lines: Sequence | None = None,
    page: int = 1,
    image_width: float = 0,
) -> PageTree:
    """The tree of an anchored page from its windows' answers (`texts`, the first few of `anchors` while a
    page is streamed; `reasons` as `jocr.layout.request.page_text` takes them). A block still being written
    keeps a trailing soft hyphen (`SOFT_HYPHEN`) for the caller to hold back. `image_width`: the page
    image's, which tells an image's OCR lines (pixels) from points (`page_geometry`)."""
    reasons = list(reasons) or ["stop"] * len(texts)
    geometry, width, height, unit = page_geometry(anchors, lines, image_width)
    kinds = anchor_furniture(anchors, lines)
    words = PageWords(line.text for line in geometry)  # how the page spells the words it breaks at a hyphen
    offsets, offset = [], 0
    for anchor in anchors:
        offsets.append(offset)
        offset += len(anchor_entries(anchor))
    blocks: list[Block] = []
    # Runs the answers skipped are put back on a finished page read with its text-layer lines (as
    # `_retyped` retypes blocks), so the text of a page being streamed only grows.
    finished = lines is not None and all(r is not None for r in reasons[: len(texts)])
    apart: set[int] = set()  # ids of the blocks of runs a window never reached: never joined to the answer's
    named: set[int] = set()  # page-wide indices of the body runs the answers name
    read = []  # each window's blocks, the last run it names, its runs, first page-wide run index, reason
    for text, anchor, reason, start in zip(texts, anchors, reasons, offsets):
        runs = {n: run.text for n, run in anchor_entries(anchor).items()}
        if reason is None:
            text = settled_tables(text)
        text = unwrap_prose_tables(text, runs)
        if finished and reason in ENDED_EARLY and not names_a_run(text, runs):
            text = ""  # a broken answer (garbage up to the token limit): its window's runs stand for it
        window, last = _window_blocks(text, runs, start, kinds, geometry, finished, words)
        read.append((window, last, runs, start, reason))
        named.update(start + n - 1 for n in referenced(text, runs) if start + n - 1 not in kinds)
    span = _named_span([geometry[i] for i in named])
    for window, last, runs, start, reason in read:
        if finished:
            window = _tables_by_rows(window, geometry)
            # the runs past the last one named come back too, whatever the finish reason: the member
            # stops before its window's last runs on its own as well as at the token limit
            window = _with_skipped_runs(window, runs, start, kinds, geometry, span, height)
        blocks += window
        if reason == "length" and not finished:
            unread = [start + n - 1 for n in runs if n > last and start + n - 1 not in kinds]
            if unread:
                tail_blocks = _unread_blocks([geometry[i] for i in unread])
                apart.update(id(b) for b in tail_blocks)
                blocks += tail_blocks
    blocks = _joined_paragraphs(blocks, geometry, apart, words)
    if finished:
        # headings the fonts make paragraphs may go on the paragraph before them (a window's first run,
        # which the answer took for a title): joined once more
        blocks = _joined_paragraphs(_retyped(blocks, geometry), geometry, apart, words)
        # a table of contents as the rules write it: one list, a number and its title one item, where
        # answers wrote leaders and headings and split numbers from titles (`jocr.layout.contents`)
        blocks = with_contents(blocks, geometry, kinds)
    top, bottom = [], []
    for index, kind in sorted(kinds.items()):
        line = geometry[index]
        furniture = Block(
            type=kind, text=line.text, markdown=line.text, bbox=line.box, lines=[line.tree_line()]
        )
        (top if kind == HEADER or line.y0 < height / 2 else bottom).append(furniture)
    return PageTree(width, height, unit, FROM_ANCHORED, top + blocks + bottom, page).numbered()


def _paragraph_parts(piece: str, runs: dict[int, str], start: int, geometry: list[Line]) -> list[str]:
    return paragraph_parts(piece, runs, start, geometry) if block_type(piece)[0] == PARAGRAPH else [piece]


def _caption_apart(piece: str, runs: dict[int, str], start: int, geometry: list[Line]) -> list[str]:
    """A table of an answer (`piece`, in references to `runs`, the window's, whose run 1 is the page's run
    `start`) checked against the page's measured lines: the runs of its first row that stand on the page
    row of that row's first run and read as a caption ("Table 2 ...", "表 1 ...") are a piece of their own
    before the table. Anything else comes back whole."""
    if block_type(piece)[0] != TABLE or not geometry or geometry[0].estimated:
        return [piece]
    cells = [[[n for n in cell if n in runs] for cell in row] for row in answer_cells(piece)]
    first = [n for cell in (cells[0] if cells else []) for n in cell]
    if not first:
        return [piece]
    top = geometry[start + first[0] - 1]  # the caption: the first row's runs on the page row of its first
    caption = [n for n in first if top.y0 <= geometry[start + n - 1].cy <= top.y1]
    if not CAPTION_START.match(" ".join(runs[n] for n in caption).strip()):
        return [piece]

    def without_caption(match: re.Match) -> str:
        return "".join(f"@{n}" for n in referenced_numbers(match.group(0)) if n not in caption)

    return [" ".join(f"@{n}" for n in caption), REFERENCES.sub(without_caption, piece)]


def _window_blocks(
    text: str,
    runs: dict[int, str],
    start: int,
    kinds: dict[int, str],
    geometry: list[Line],
    checked: bool,
    words: PageWords | None = None,
) -> tuple[list[Block], int]:
    """A window's answer as blocks, its references resolved (each run once, furniture left out, words
    broken at a line's end joined as `join_soft_hyphens_inside` does over the page's `words`), and the
    highest run number it names. With `checked`, blocks the answer made up (`anchor_check.made_up`) are
    left out: the runs they name come back as skipped runs; and what a block types that the window's runs
    never give (`anchor_check.foreign_text`: another script, primes, U+FFFD, `<b>`) is taken out."""
    written: set[int] = set()
    last = 0
    window: list[Block] = []
    runs_text = "".join(runs.values())
    anchor_text = compact(runs_text) if checked else ""
    pieces = markdown_blocks(text)
    if checked:  # a paragraph the answer ran over several of the page's is cut where the layer breaks
        pieces = [part for piece in pieces for part in _paragraph_parts(piece, runs, start, geometry)]
        pieces = [part for piece in pieces for part in _caption_apart(piece, runs, start, geometry)]
    for piece in pieces:
        own: list[int] = []

        def resolve(match: re.Match, own=own) -> str:
            out = []
            for number in referenced_numbers(match.group(0)):
                if number not in runs or number in written:
                    continue
                written.add(number)
                if start + number - 1 not in kinds:
                    own.append(number)
                    out.append(runs[number])
            return "".join(out)

        resolved = REFERENCES.sub(resolve, piece)
        if checked and block_type(piece)[0] != FORMULA:  # characters the runs never give are taken out
            resolved = without_foreign(resolved, foreign_text(piece, runs_text))
        numbers = [n for n in referenced_numbers(piece) if n in runs]
        last = max([last, *numbers])
        if not _SYNTAX.sub("", plain_text(resolved)):
            continue  # nothing but syntax left: all its runs are furniture (the "# " of a running head)
        if not own and _REFERENCE_DEBRIS.fullmatch(resolved):
            continue  # references that name no run: no text, and no box to draw
        block_lines = [geometry[start + n - 1] for n in own]
        block = typed_block(join_soft_hyphens_inside(resolved, words), block_lines)
        if checked and block.type != FORMULA and made_up(piece, anchor_text):
            continue
        window.append(block)
    return window, last


def _tables_by_rows(window: list[Block], geometry: list[Line]) -> list[Block]:
    """A window's tables checked against the rows of the text layer (`table_rows.table_segments`, with
    measured lines only): the stretches of a table that are prose lines come back as text, a row at a time
    (a run each, a list marker and its line one item), the rest stays a table laid out by its runs' rows and
    columns (`table_rows.grid_html`)."""
    if not geometry or geometry[0].estimated:
        return window
    size = body_size(geometry)
    out: list[Block] = []
    for block in window:
        runs = [geometry[ln.run - 1] for ln in block.lines if ln.run is not None]
        segments = table_segments(runs, size) if block.type == TABLE and runs else None
        if segments is None:
            out.append(block)
            continue
        for is_table, rows in segments:
            if is_table:
                own = sorted((ln for row in rows for ln in row), key=lambda ln: ln.index)
                out.append(typed_block(grid_html(rows, size), own))
                continue
            for row in rows:
                if len(row) > 1 and LIST_MARKER.fullmatch(row[0].text.strip()):
                    out.append(typed_block(" ".join(ln.text for ln in row), row))
                else:
                    out += [_run_block(ln) for ln in row]
    return out


def _named_span(named: list[Line]) -> tuple[float, float] | None:
    """The top of the highest and the bottom of the lowest run the answers named (None: none named)."""
    return (min(ln.y0 for ln in named), max(ln.y1 for ln in named)) if named else None


def _retyped(blocks: list[Block], geometry: list[Line]) -> list[Block]:
    """Block types by the text layer's fonts where the model's answer disagrees (only with measured lines,
    on a finished page): a model paragraph all of whose lines are monospace is code (consecutive code
    blocks one listing, its indentation from the lines' positions); a model heading set in the body's size
    and weight is a paragraph (a body line never gets `#`); a model paragraph of at most three lines set
    1.15 times the body size or larger, or bold in a regular body, short and without a full stop, is a
    heading, and a heading that is only a section number takes the heading after it ("2" + "Methods");
    levels as the rules over lines set them (`line_rules.set_heading_levels`)."""
    size = body_size(geometry)
    out: list[Block] = []
    for block in blocks:
        measured = [ln for ln in block.lines if ln.bbox is not None]
        if block.type == PARAGRAPH and measured and all(ln.mono for ln in measured):
            block = code_block(block.lines)
        previous = out[-1] if out else None
        if previous is not None and previous.type == CODE and block.type == CODE:
            if block.bbox[1] - previous.bbox[3] < 2.5 * size:
                out[-1] = code_block(previous.lines + block.lines)
                continue
        out.append(block)
    _retyped_headings(out, geometry, size)
    _retyped_footnotes(out, geometry, size)
    return out


def _retyped_footnotes(blocks: list[Block], geometry: list[Line], size: float) -> None:
    """Model paragraphs below the body's last line, set at most `FOOTNOTE_SIZE` times the body size and
    starting with a number or a note sign, are footnotes."""
    body_end = max((ln.y1 for ln in geometry if ln.size > FOOTNOTE_SIZE * size), default=0.0)
    for block in blocks:
        sizes = [ln.size for ln in block.lines if ln.size > 0]
        if block.type != PARAGRAPH or not sizes or block.bbox is None or block.bbox[1] < body_end:
            continue
        if max(sizes) <= FOOTNOTE_SIZE * size and FOOTNOTE_START.match(block.text):
            block.type = FOOTNOTE


def _retyped_headings(blocks: list[Block], geometry: list[Line], size: float) -> None:
    body_bold = sum(ln.bold for ln in geometry) > len(geometry) / 2
    changed = False
    for block in blocks:
        sizes = [ln.size for ln in block.lines if ln.size > 0]
        if not sizes:
            continue
        bold = all(ln.weight >= BOLD for ln in block.lines)
        big = min(sizes) >= HEADING_SIZE * size
        if block.type in (TITLE, HEADING) and not big and not (bold and not body_bold):
            block.type, block.level = PARAGRAPH, None
            block.markdown = block_markdown(block)
            changed = True
        elif block.type == PARAGRAPH and len(block.lines) <= 3 and len(block.text) <= MAX_HEADING_CHARS:
            short = len(block.text) <= 80 and not SENTENCE_END.search(block.text)
            if big or (bold and not body_bold and short):
                block.type = HEADING
                changed = True
    for k in range(len(blocks) - 2, -1, -1):
        number, title = blocks[k], blocks[k + 1]
        if (
            number.type in (TITLE, HEADING)
            and title.type in (TITLE, HEADING)
            and _NUMBER_ONLY.fullmatch(number.text)
        ):
            title.text = f"{number.text} {title.text}"
            title.lines = number.lines + title.lines
            title.bbox = union([number.bbox, title.bbox])
            del blocks[k]
            changed = True
    if changed:
        headings = [b for b in blocks if b.type in (TITLE, HEADING)]
        for block in headings:
            block.type = HEADING
        set_heading_levels(blocks, size)
        for block in headings:
            block.markdown = block_markdown(block)


def join_soft_hyphens_inside(markdown: str, words: PageWords | None = None) -> str:
    """A block's words broken across its lines joined back (`jocr.lines.hyphens.join_soft_hyphens`, with
    the page's `words`); a soft hyphen at the block's very end stays (its next part may be the next
    block's)."""
    body = markdown.rstrip()
    if body.endswith(SOFT_HYPHEN):
        return join_soft_hyphens(body[:-1], words) + SOFT_HYPHEN
    return join_soft_hyphens(markdown, words)


def _with_skipped_runs(
    window: list[Block],
    runs: dict[int, str],
    start: int,
    kinds: dict[int, str],
    geometry: list[Line],
    span: tuple[float, float] | None,
    height: float,
) -> list[Block]:
    """A window's blocks with the runs its answer skipped put back (`anchor_check.skipped_runs`), each run
    a paragraph of its own right after the block that holds the run named before it (before the first
    block when none is); the runs past the last one it named too, after it. `_joined_paragraphs`
    then joins those that go on a paragraph. Runs whose text the answer typed out (`anchor_check.typed_in`)
    stay out, and so do runs at the page's edge outside the `span` of its named runs (`_inside`)."""
    holder: dict[int, int] = {}  # window run number -> index of the block that holds it
    for k, block in enumerate(window):
        for line in block.lines:
            if line.run is not None:
                holder[line.run - start] = k
    drop = [n for n in runs if start + n - 1 in kinds]
    answer = compact("".join(block.markdown for block in window))
    size = body_size(geometry)
    inserts: dict[int, list[Block]] = {}
    for after, group in skipped_runs(sorted(holder), runs, drop, tail=True):
        back = [
            n
            for n in group
            if not typed_in(runs[n], answer) and _inside(geometry[start + n - 1], span, height, size)
        ]
        position = 0 if after is None else holder[after] + 1
        inserts.setdefault(position, []).extend(_run_block(geometry[start + n - 1]) for n in back)
    out: list[Block] = []
    for k in range(len(window) + 1):
        out += inserts.get(k, [])
        if k < len(window):
            out.append(window[k])
    return out


def _inside(line: Line, span: tuple[float, float] | None, height: float, size: float) -> bool:
    """Whether a skipped run may go back: not both outside the page's `span` of named runs (above the
    highest, below the lowest) and in the edge bands where running heads and page numbers sit
    (`furniture.TOP_BAND_SIZED`, `furniture.BOTTOM_BAND`): such a run is one the answers left out at the
    page's edge, furniture the furniture rules did not catch. A run set in a heading's size over the body
    `size` goes back wherever it stands (a chapter's title at the top of its first page)."""
    if span is None or (line.y1 > span[0] and line.y0 < span[1]) or line.size >= HEADING_SIZE * size:
        return True
    return TOP_BAND_SIZED * height < line.y0 and line.y1 < (1 - BOTTOM_BAND) * height


def _run_block(line: Line) -> Block:
    return Block(type=PARAGRAPH, text=line.text, markdown=line.text, bbox=line.box, lines=[line.tree_line()])


def _unread_blocks(lines: list[Line]) -> list[Block]:
    """The runs a window that ran out of room never reached, as one paragraph of them, a line each: on a
    page whose answer is not checked against its text-layer lines (none at hand, or the page still being
    read); a checked page puts them back with the skipped runs (`_with_skipped_runs`)."""
    text = "\n".join(ln.text for ln in lines)
    box = union(ln.box for ln in lines)
    return [Block(type=PARAGRAPH, text=text, markdown=text, bbox=box, lines=[ln.tree_line() for ln in lines])]


def _joined_paragraphs(
    blocks: list[Block], geometry: list[Line], apart: set[int], words: PageWords | None = None
) -> list[Block]:
    """Consecutive paragraphs that are one paragraph on the page joined (`_continues`), and a word broken at
    a paragraph's end joined with its next part where that part goes on the same paragraph, with or
    without its hyphen (`keeps_hyphen` over the page's `words`); else the soft hyphen prints as "-" (the
    last block keeps it: more may follow)."""
    out: list[Block] = []
    for block in blocks:
        previous = out[-1] if out else None
        together = previous is not None and id(previous) not in apart and id(block) not in apart
        if together and block.type == PARAGRAPH and _marker_beside(previous, block, geometry):
            block.type, block.marker = LIST_ITEM, previous.text.strip()
            block.lines = previous.lines + block.lines
            block.bbox = union([previous.bbox, block.bbox])
            block.markdown = block_markdown(block)
            out[-1] = block
            continue
        if together and previous.type in (PARAGRAPH, LIST_ITEM) and block.type == PARAGRAPH:
            broken = previous.markdown.rstrip().endswith(SOFT_HYPHEN)
            # a list item's first line goes on at the hanging indent after its marker
            hanging = previous.type == LIST_ITEM and len(previous.lines) == 1
            if (broken and block.text[:1].islower()) or _continues(previous, block, geometry, hanging):
                if broken:
                    head = previous.text.rstrip().removesuffix(SOFT_HYPHEN)
                    glue = "-" if keeps_hyphen(head, block.text, words) else ""
                else:
                    glue = "" if joined_without_space(previous.text, block.text) else " "
                previous.markdown = (
                    previous.markdown.rstrip().removesuffix(SOFT_HYPHEN) + glue + block.markdown.lstrip()
                )
                previous.text = previous.text.rstrip().removesuffix(SOFT_HYPHEN) + glue + block.text.lstrip()
                previous.lines += block.lines
                previous.bbox = union([previous.bbox, block.bbox])
                continue
        if previous is not None:
            _close_broken_word(previous)
        out.append(block)
    return out


def _marker_beside(previous: Block, block: Block, geometry: list[Line]) -> bool:
    """Whether `previous` is a paragraph of a list marker alone (`table_rows.LIST_MARKER`, its own run)
    and `block` starts with the next run on the marker's row: the two are one list item."""
    if previous.type != PARAGRAPH or not LIST_MARKER.fullmatch(previous.text.strip()):
        return False
    if len(previous.lines) != 1 or not block.lines or previous.lines[0].run is None:
        return False
    if block.lines[0].run != previous.lines[0].run + 1:
        return False
    a, b = geometry[previous.lines[0].run - 1], geometry[block.lines[0].run - 1]
    middle = (b.y0 + b.y1) / 2
    return a.y0 <= middle <= a.y1 and b.x0 > a.x0


def _close_broken_word(block: Block) -> None:
    block.markdown = block.markdown.replace(SOFT_HYPHEN, "-")
    block.text = block.text.replace(SOFT_HYPHEN, "-")


def _continues(previous: Block, block: Block, geometry: list[Line], hanging: bool = False) -> bool:
    """Whether `block`'s first run is the next line of the paragraph `previous` ends with: the next run in
    the text layer's order, one line pitch down, not indented (with `hanging`, the line after a list item's
    marker line: indented, by at most `HANGING_INDENT` ems), the same size, and the line before it full
    not a short line that ends a sentence (short: ending well before the right edge of its column, or, where
    boxes are estimated, shorter than the page's long runs)."""
    if not previous.lines or not block.lines or previous.lines[-1].run is None or block.lines[0].run is None:
        return False
    a, b = geometry[previous.lines[-1].run - 1], geometry[block.lines[0].run - 1]
    if b.index != a.index + 1:
        return False
    measured = not a.estimated
    size = line_size(a)
    if measured and (abs(a.size - b.size) > 0.1 * max(a.size, 1e-3) or a.mono != b.mono):
        return False  # another font size, or code beside prose
    step = b.y0 - a.y0
    if not (0.5 * size < step <= PARAGRAPH_STEP * 1.25 * size):
        return False
    if hanging and not a.x0 + 0.5 * size < b.x0 <= a.x0 + HANGING_INDENT * size:
        return False
    if not hanging and b.x0 > a.x0 + 0.5 * size:
        return False
    return not ends_paragraph(a, geometry)
