"""The tree of an unanchored page from the model's raw answer (docs/layout.md, "Building the tree"): one
block per grounding box when the answer has them (DeepSeek-OCR's `<|grounding|>` prompt:
`<|ref|>label<|/ref|><|det|>[[x0, y0, x1, y1]]<|/det|>` before each block, on a 0-999 grid of the page
image; the label gives the type), else one block per Markdown block.

A model's boxes are not trusted: a corner off the page is clamped to it, inverted corners are put in order,
a box of no area or not of four numbers is dropped (its block kept without a box; a figure without a box
has nothing to show and goes), and an answer cut off inside a tag loses that tag. Each of these leaves a
one-line note on the tree (`PageTree.notes`).
"""

from __future__ import annotations

from jocr.layout.answer_tree import block_type, markdown_blocks, plain_text, typed_block
from jocr.layout.postprocess import (
    GROUNDING_TAG,
    checked_box,
    clean_markdown,
    close_open_tables,
    extract_grounding,
    parse_boxes,
    unfinished_tag,
)
from jocr.layout.render import block_markdown
from jocr.layout.tree import (
    CAPTION,
    CODE,
    FIGURE,
    FOOTER,
    FOOTNOTE,
    FORMULA,
    FROM_GROUNDING,
    FROM_MARKDOWN,
    HEADER,
    HEADING,
    LIST_ITEM,
    PAGE_NUMBER,
    PARAGRAPH,
    TABLE,
    TITLE,
    Block,
    PageTree,
    TreeLine,
    union,
)

_LABELS = {
    "title": TITLE, "sub_title": HEADING, "subtitle": HEADING, "section_header": HEADING, "heading": HEADING,
    "text": PARAGRAPH, "paragraph": PARAGRAPH, "list": LIST_ITEM, "list_item": LIST_ITEM,
    "table": TABLE, "equation": FORMULA, "formula": FORMULA, "interline_equation": FORMULA,
    "image": FIGURE, "figure": FIGURE, "picture": FIGURE, "chart": FIGURE,
    "image_caption": CAPTION, "table_caption": CAPTION, "figure_caption": CAPTION, "caption": CAPTION,
    "code": CODE, "footnote": FOOTNOTE, "table_footnote": FOOTNOTE, "page_footnote": FOOTNOTE,
    "header": HEADER, "page_header": HEADER, "footer": FOOTER, "page_footer": FOOTER,
    "page_number": PAGE_NUMBER,
}  # fmt: skip
# How much of a cut-off tag a note quotes.
NOTE_CHARS = 40


def _box_of(label: str, payload: str, number: int, width: int, height: int, notes: list[str]):
    """The union of a grounding tag's boxes in pixels (None when none is usable), noting what was wrong."""
    where = f"grounding box {number} ({label or 'no label'})"
    quads = parse_boxes(payload)
    if not quads:
        notes.append(f"{where}: not four numbers, dropped")
    boxes = []
    for quad in quads:
        box, problem = checked_box(quad, width, height)
        if problem:
            notes.append(f"{where}: {problem}")
        if box is not None:
            boxes.append(box)
    return union(boxes)


def _content(raw: str, width: int, height: int, cut: bool) -> str:
    """A grounded block's Markdown: stray tags out, a table cut off by the token limit closed."""
    text = extract_grounding(raw, width, height)[0]
    return clean_markdown(close_open_tables(text) if cut else text)


def markdown_tree(
    raw: str, width: int, height: int, finish_reason: str | None = None, page: int = 1
) -> PageTree:
    """The tree of an unanchored page from the model's raw answer (grounding tags and all), in pixels of a
    `width` x `height` page image."""
    matches = list(GROUNDING_TAG.finditer(raw))
    if not matches:
        text = clean_markdown(close_open_tables(raw) if finish_reason == "length" else raw)
        blocks = [typed_block(piece, []) for piece in markdown_blocks(text)]
        return PageTree(width, height, "px", FROM_MARKDOWN, blocks, page).numbered()
    notes: list[str] = []
    raw, tail = unfinished_tag(raw)
    if tail:
        notes.append(f"the answer ends inside a grounding tag, dropped: {tail[:NOTE_CHARS]!r}")
    blocks = [
        typed_block(piece, []) for piece in markdown_blocks(_content(raw[: matches[0].start()], 0, 0, False))
    ]
    for k, match in enumerate(matches):
        last = k + 1 == len(matches)
        content = _content(raw[match.end() : len(raw) if last else matches[k + 1].start()], width, height,
                           last and finish_reason == "length")  # fmt: skip
        label = " ".join(match.group(1).split()).lower()
        bbox = _box_of(label, match.group(2), k + 1, width, height, notes)
        for piece in markdown_blocks(content) or [""]:
            block = _grounded_block(piece, label, bbox)
            if block.type == FIGURE and bbox is None and not piece.strip():
                notes.append(f"grounding box {k + 1} ({label}): a figure without a box, left out")
            elif piece.strip() or block.type == FIGURE:
                blocks.append(block)
    for block in blocks:
        if block.type == HEADING and block.level is None:
            block.level = 2
        if block.type in (TITLE, HEADING) and block_type(block.markdown)[0] not in (TITLE, HEADING):
            block.markdown = block_markdown(block)
    return PageTree(width, height, "px", FROM_GROUNDING, blocks, page, notes).numbered()


def _grounded_block(piece: str, label: str, bbox) -> Block:
    """One Markdown block under a grounding tag: typed by the tag's label unless its Markdown says more (a
    `text` label over a heading or a table keeps the Markdown's type), boxed by the tag's box."""
    block = typed_block(piece, [])
    kind = _LABELS.get(label)
    if kind is not None and not (kind == PARAGRAPH and block.type != PARAGRAPH):
        block.type = kind
        if kind in (HEADER, FOOTER, PAGE_NUMBER, FOOTNOTE, CAPTION):
            block.text = plain_text(piece)
    block.bbox = bbox
    if piece.strip():
        block.lines = [TreeLine(text=block.text, bbox=bbox, source="model")]
    return block
