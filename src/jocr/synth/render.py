"""Measure and draw blocks with PIL (text, tables) and matplotlib mathtext (formulas).

Every block is measured first (`layout_*` returns a `Laid` with its size) and drawn only if the page has
room for it, so a page's ground truth lists exactly the blocks on its image. Text is drawn on its
baseline (PIL anchor "ls") so inline formulas can share it: mathtext reports the depth below its
baseline, and the formula image is pasted with its baseline on the text's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from jocr.synth.blocks import Cell, Formula, Furniture, Heading, ListBlock, Paragraph, Run, Table
from jocr.synth.fonts import get_font
from jocr.synth.formulas import render_math
from jocr.synth.glyphs import note_unread

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in page pixels


@dataclass(frozen=True)
class Style:
    """How one page looks; chosen once per page from the seed."""

    family: str  # "sans" | "serif"
    body_px: int
    ink: tuple[int, int, int]
    paper: tuple[int, int, int]
    math_fontset: str
    line_gap: float  # extra space between lines, in units of body_px
    block_gap: float  # space between blocks, in units of body_px
    table_style: str  # "grid" | "rules" | "plain"
    heading_scale: float


@dataclass
class Laid:
    """A measured block: its size, and how to draw it with its top-left corner at (x, y)."""

    width: int
    height: int
    draw: Callable[[Image.Image, ImageDraw.ImageDraw, int, int], None]


# Line-breaking units of CJK text: one ideograph (or opening bracket) with any closing punctuation that
# follows it, so no line starts with "。" or "，"; runs of Latin letters and digits stay whole.
_CJK_SPLIT = re.compile(
    r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef][\u3001\u3002\uff0c\uff1b\uff1a\uff01\uff1f\uff09]*"
    r"|[^\s\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+[\u3001\u3002\uff0c\uff1b\uff1a\uff01\uff1f\uff09]*"
)


def _font(style: Style, size: int, bold: bool = False, cjk: bool = False):
    return get_font(style.family, "bold" if bold else "regular", size, cjk)


@dataclass
class _Unit:
    kind: str  # "text" | "math"
    value: str
    space_before: bool
    width: float
    ascent: int
    descent: int


def _units(runs: list[Run], style: Style, size: int, font, cjk: bool) -> list[_Unit]:
    ascent, descent = font.getmetrics()
    units: list[_Unit] = []
    for kind, value in runs:
        if kind == "math":
            image, depth = render_math(value, size, style.math_fontset)
            h, w = image.shape
            units.append(_Unit("math", value, True, w, h - depth, depth))
            continue
        if cjk:
            first = True
            for match in _CJK_SPLIT.finditer(value):
                gap = match.start() > 0 and value[match.start() - 1].isspace()
                token = match.group(0)
                units.append(_Unit("text", token, gap or first, font.getlength(token), ascent, descent))
                first = False
        else:
            for word in value.split():
                units.append(_Unit("text", word, True, font.getlength(word), ascent, descent))
    if units:
        units[0].space_before = False
    return units


def _wrap(units: list[_Unit], width: int, space: float) -> list[list[_Unit]] | None:
    """Greedy line breaking; None if a single unit is wider than the line."""
    lines: list[list[_Unit]] = []
    line: list[_Unit] = []
    x = 0.0
    for unit in units:
        gap = space if (line and unit.space_before) else 0.0
        if line and x + gap + unit.width > width:
            lines.append(line)
            line, x, gap = [], 0.0, 0.0
        if unit.width > width:
            return None
        line.append(unit)
        x += gap + unit.width
    if line:
        lines.append(line)
    return lines


def layout_runs(
    runs: list[Run],
    style: Style,
    width: int,
    size: int,
    bold: bool = False,
    cjk: bool = False,
    indent: int = 0,
) -> Laid | None:
    """Wrap text-and-math runs into lines no wider than `width` (None if something cannot fit)."""
    font = _font(style, size, bold, cjk)
    space = font.getlength(" ")
    units = _units(runs, style, size, font, cjk)
    lines = _wrap(units, width - indent, space)
    if lines is None:
        return None
    gap = int(round(style.line_gap * size))
    metrics = [(max(u.ascent for u in line), max(u.descent for u in line)) for line in lines]
    height = sum(a + d for a, d in metrics) + gap * (len(lines) - 1)

    def draw(image: Image.Image, pen: ImageDraw.ImageDraw, x0: int, y0: int) -> None:
        y = y0
        for line, (asc, desc) in zip(lines, metrics):
            baseline = y + asc
            x = float(x0 + indent)
            pending: list[str] = []
            pending_x = x
            for i, unit in enumerate(line):
                gap_px = space if (i > 0 and unit.space_before) else 0.0
                if unit.kind == "text":
                    if not pending:
                        pending_x = x + gap_px
                        pending.append(unit.value)
                    else:
                        pending.append((" " if unit.space_before else "") + unit.value)
                    x += gap_px + unit.width
                    continue
                if pending:
                    pen.text((pending_x, baseline), "".join(pending), font=font, fill=style.ink, anchor="ls")
                    pending = []
                x += gap_px
                note_unread(pen, paste_math(image, unit.value, size, style, int(round(x)), baseline))
                x += unit.width
            if pending:
                pen.text((pending_x, baseline), "".join(pending), font=font, fill=style.ink, anchor="ls")
            y = baseline + desc + gap

    used = max((sum(u.width for u in line) + space * len(line) for line in lines), default=0)
    return Laid(int(min(width, used + indent)), height, draw)


def paste_math(image: Image.Image, latex: str, size: int, style: Style, x: int, baseline: int):
    """Print a formula with its baseline at `baseline`; returns the box it covers."""
    coverage, depth = render_math(latex, size, style.math_fontset)
    h, w = coverage.shape
    mask = Image.fromarray(coverage, mode="L")
    box = (x, baseline - (h - depth), x + w, baseline + depth)
    image.paste(style.ink, box, mask)
    return box


def layout_heading(block: Heading, style: Style, width: int) -> Laid | None:
    size = int(round(style.body_px * style.heading_scale ** (4 - block.level) / style.heading_scale))
    return layout_runs(
        [("text", block.text)], style, width, max(size, style.body_px), bold=True, cjk=block.cjk
    )


def layout_paragraph(block: Paragraph, style: Style, width: int) -> Laid | None:
    return layout_runs(block.runs, style, width, style.body_px, cjk=block.cjk)


def layout_list(block: ListBlock, style: Style, width: int) -> Laid | None:
    font = _font(style, style.body_px, cjk=block.cjk)
    markers = [("•" if not block.ordered else block.marker(i)) for i in range(len(block.items))]
    indent = int(max(font.getlength(m) for m in markers) + style.body_px * 0.6)
    items = []
    for item in block.items:
        laid = layout_runs(item, style, width, style.body_px, cjk=block.cjk, indent=indent)
        if laid is None:
            return None
        items.append(laid)
    gap = int(round(style.line_gap * style.body_px)) + 2
    height = sum(laid.height for laid in items) + gap * (len(items) - 1)
    ascent = font.getmetrics()[0]

    def draw(image: Image.Image, pen: ImageDraw.ImageDraw, x0: int, y0: int) -> None:
        y = y0
        for marker, laid in zip(markers, items):
            pen.text((x0, y + ascent), marker, font=font, fill=style.ink, anchor="ls")
            laid.draw(image, pen, x0, y)
            y += laid.height + gap

    return Laid(max(laid.width for laid in items), height, draw)


def layout_formula(block: Formula, style: Style, width: int) -> Laid | None:
    size = int(round(style.body_px * 1.15))
    coverage, depth = render_math(block.latex, size, style.math_fontset)
    h, w = coverage.shape
    if w > width:
        return None

    def draw(image: Image.Image, pen: ImageDraw.ImageDraw, x0: int, y0: int) -> None:
        x = x0 + (width - w) // 2
        note_unread(pen, paste_math(image, block.latex, size, style, x, y0 + h - depth))

    return Laid(width, h, draw)


def _is_numeric(text: str) -> bool:
    return bool(re.fullmatch(r"[-+$€£¥]?[\d,.]+[%]?( \w+)?", text))


def layout_table(block: Table, style: Style, width: int, min_px: int = 12) -> Laid | None:
    """Cells are single lines; the font shrinks (down to `min_px`) until the table fits `width`."""
    size = style.body_px
    while size >= min(min_px, style.body_px):
        laid = _layout_table_at(block, style, width, size)
        if laid is not None:
            return laid
        size -= 2
    return None


def _layout_table_at(block: Table, style: Style, width: int, size: int) -> Laid | None:
    grid = block.grid()
    n_rows, n_cols = len(grid), len(grid[0])
    pad_x, pad_y = max(4, size // 2), max(3, size // 4)
    fonts = {
        (bold, cjk): _font(style, size, bold, cjk)
        for bold in (False, True)
        for cjk in (False, True)
        if cjk <= block.cjk
    }

    def font_for(cell: Cell):
        return fonts[(cell.header, block.cjk and any(ord(ch) > 0x2E80 for ch in cell.text))]

    col_w = [0.0] * n_cols
    spans: list[tuple[int, int, float]] = []
    for r, row in enumerate(block.rows):
        for i, cell in enumerate(row):
            c = next(c for c in range(n_cols) if grid[r][c] == (r, i))
            need = font_for(cell).getlength(cell.text) + 2 * pad_x
            if cell.colspan == 1:
                col_w[c] = max(col_w[c], need)
            else:
                spans.append((c, cell.colspan, need))
    for c, span, need in spans:
        have = sum(col_w[c : c + span])
        if have < need:
            for k in range(c, c + span):
                col_w[k] += (need - have) / span
    total_w = int(sum(col_w)) + 1
    if total_w > width:
        return None
    ascent, descent = fonts[(False, False)].getmetrics()
    row_h = ascent + descent + 2 * pad_y
    height = row_h * n_rows + 1
    x_edges = np.concatenate([[0.0], np.cumsum(col_w)]).round().astype(int)
    n_header = sum(1 for row in block.rows if row and all(cell.header for cell in row))

    def draw(image: Image.Image, pen: ImageDraw.ImageDraw, x0: int, y0: int) -> None:
        line = style.ink
        for r, row in enumerate(block.rows):
            for i, cell in enumerate(row):
                c = next(c for c in range(n_cols) if grid[r][c] == (r, i))
                left, right = x0 + x_edges[c], x0 + x_edges[c + cell.colspan]
                top, bottom = y0 + r * row_h, y0 + (r + cell.rowspan) * row_h
                if style.table_style == "grid":
                    pen.rectangle((left, top, right, bottom), outline=line, width=1)
                font = font_for(cell)
                text_w = font.getlength(cell.text)
                if cell.header or cell.colspan > 1:
                    tx = (left + right - text_w) / 2
                elif _is_numeric(cell.text):
                    tx = right - pad_x - text_w
                else:
                    tx = left + pad_x
                baseline = (top + bottom) / 2 + (ascent - descent) / 2
                pen.text((tx, baseline), cell.text, font=font, fill=style.ink, anchor="ls")
        if style.table_style == "rules":
            right_edge = x0 + x_edges[-1]
            pen.line((x0, y0, right_edge, y0), fill=line, width=2)
            if n_header:
                pen.line((x0, y0 + n_header * row_h, right_edge, y0 + n_header * row_h), fill=line, width=1)
            pen.line((x0, y0 + n_rows * row_h, right_edge, y0 + n_rows * row_h), fill=line, width=2)

    return Laid(total_w, height, draw)


def layout_furniture(block: Furniture, style: Style, width: int) -> Laid | None:
    size = max(10, int(round(style.body_px * 0.8)))
    return layout_runs([("text", block.text)], style, width, size, cjk=block.cjk)


LAYOUTS = {
    "heading": layout_heading,
    "paragraph": layout_paragraph,
    "list": layout_list,
    "formula": layout_formula,
    "table": layout_table,
}
