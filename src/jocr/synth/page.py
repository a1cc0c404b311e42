"""Compose a synthetic page: choose a style, place blocks until the page (or its target) is full, draw
running headers/footers, and return the image with its ground truth and metadata."""

from __future__ import annotations

import random
from dataclasses import dataclass

from PIL import Image, ImageDraw

from jocr.synth import vocab
from jocr.synth.blocks import Block, Furniture, Heading, page_markdown
from jocr.synth.content import MAKERS, PageContext, make_caption, make_heading, make_line
from jocr.synth.formulas import MATH_FONTSETS
from jocr.synth.glyphs import GlyphMap, GlyphPen
from jocr.synth.profiles import SynthProfile
from jocr.synth.render import LAYOUTS, Box, Laid, Style, layout_furniture, layout_table

# Paper sizes as width / height: ISO A4 and US Letter.
_ASPECTS = (210 / 297, 8.5 / 11)


@dataclass
class PlacedBlock:
    block: Block
    bbox: Box
    column: int


@dataclass
class PlacedFurniture:
    item: Furniture
    bbox: Box


@dataclass
class Composition:
    image: Image.Image
    blocks: list[PlacedBlock]
    furniture: list[PlacedFurniture]
    style: Style
    context: PageContext
    columns: int
    glyphs: GlyphMap

    @property
    def markdown(self) -> str:
        return page_markdown([placed.block for placed in self.blocks])


def page_rng(seed: int, profile: SynthProfile) -> random.Random:
    """The page's random stream: a pure function of (profile, seed) (string seeding is hash-independent)."""
    return random.Random(f"jocr-synth/{profile.name}/{seed}")


def choose_style(rng: random.Random, profile: SynthProfile) -> Style:
    ink_level = rng.randint(0, 50)
    ink = (ink_level, ink_level, ink_level + (rng.randint(0, 40) if rng.random() < 0.15 else 0))
    paper_level = rng.randint(238, 255)
    paper = tuple(min(255, paper_level + rng.randint(-4, 4)) for _ in range(3))
    return Style(
        family=rng.choice(("sans", "serif")),
        body_px=rng.randint(*profile.body_px),
        ink=ink,
        paper=paper,  # type: ignore[arg-type]
        math_fontset=rng.choice(MATH_FONTSETS),
        line_gap=rng.uniform(0.15, 0.45),
        block_gap=rng.uniform(0.6, 1.2),
        table_style=rng.choice(("grid", "grid", "rules", "plain")),
        heading_scale=rng.uniform(1.12, 1.3),
    )


def _page_size(rng: random.Random, profile: SynthProfile) -> tuple[int, int]:
    if profile.size is not None:
        return profile.size
    long_side = rng.randint(*profile.long_side)
    return int(round(long_side * rng.choice(_ASPECTS))), long_side


def _make_furniture(rng: random.Random, profile: SynthProfile, cjk: bool) -> list[Furniture]:
    if rng.random() >= profile.furniture_p:
        return []
    items: list[Furniture] = []
    small = profile.size is not None
    if rng.random() < (0.3 if small else 0.7):
        items.append(Furniture(vocab.header_text(rng), "header"))
    if not small and rng.random() < 0.4:
        items.append(Furniture(vocab.footer_text(rng), "footer"))
    if rng.random() < 0.8 or not items:
        items.append(Furniture(str(rng.randint(1, 40 if small else 400)), "page_number"))
    return items


def _layout(block: Block, style: Style, width: int, profile: SynthProfile) -> Laid | None:
    if block.kind == "table":
        return layout_table(block, style, width, min_px=min(profile.table_min_px, style.body_px))  # type: ignore[arg-type]
    return LAYOUTS["paragraph" if block.kind == "caption" else block.kind](block, style, width)


def compose(seed: int, profile: SynthProfile) -> Composition:
    rng = page_rng(seed, profile)
    width, height = _page_size(rng, profile)
    style = choose_style(rng, profile)
    ctx = PageContext(
        profile=profile,
        cjk=rng.random() < profile.zh_p,
        math=rng.random() < profile.math_page_p,
    )
    image = Image.new("RGB", (width, height), style.paper)
    pen = GlyphPen(ImageDraw.Draw(image), (width, height))
    margin = rng.randint(*profile.margin_px)
    side = max(8, margin + rng.randint(-margin // 3, margin // 3))
    left, right, top, bottom = side, width - side, margin, height - margin

    furniture: list[PlacedFurniture] = []
    for item in _make_furniture(rng, profile, ctx.cjk):
        laid = layout_furniture(item, style, right - left)
        if laid is None:
            continue
        band = laid.height + int(style.body_px * 0.8)
        if item.kind == "header":
            x, y = left if rng.random() < 0.6 else right - laid.width, max(4, top - laid.height - 4)
            top = max(top, y + band)
        else:
            if item.kind == "page_number":
                x = (left + right - laid.width) // 2 if rng.random() < 0.6 else right - laid.width
            else:
                x = left
            y = min(height - laid.height - 4, height - margin)
            # Footer and page number share the bottom line; move the number right if they would touch.
            if any(
                f.item.kind != "header" and f.bbox[0] <= x + laid.width and f.bbox[2] >= x for f in furniture
            ):
                x = right - laid.width
            bottom = min(bottom, y - int(style.body_px * 0.8))
        laid.draw(image, pen, x, y)
        furniture.append(PlacedFurniture(item, (x, y, x + laid.width, y + laid.height)))

    columns = 2 if rng.random() < profile.two_column_p else 1
    gutter = int(style.body_px * 1.5)
    col_w = (right - left - gutter * (columns - 1)) // columns
    block_gap = int(style.block_gap * style.body_px)
    md_len = 0

    # Blocks are measured and placed first and drawn at the end, so a trailing heading can be dropped.
    pending: list[tuple[PlacedBlock, Laid]] = []
    if columns == 2 and rng.random() < 0.7:
        # A full-width title above the two columns, as on papers and reports.
        title = make_heading(rng, ctx)
        title.level = 1
        laid = LAYOUTS["heading"](title, style, right - left)
        if laid is not None and top + laid.height < bottom:
            pending.append((PlacedBlock(title, (left, top, left + laid.width, top + laid.height), 0), laid))
            md_len += len(title.markdown()) + 2
            top += laid.height + block_gap

    kinds = [k for k in profile.kind_weights if ctx.math or k != "formula"]
    weights = [profile.kind_weights[k] for k in kinds]
    target = len(pending) + (profile.blocks[1] if profile.fill else rng.randint(*profile.blocks))
    max_failures = 6 if profile.fill else 10
    failures, column, y = 0, 0, top
    table_number = rng.randint(1, 6)
    table_retries = 0
    while len(pending) < target and (failures < max_failures or (not pending and failures < 50)):
        kind = rng.choices(kinds, weights)[0]
        if kind == "list" and pending and pending[-1][0].block.kind == "list":
            continue  # two lists in a row would read as one list in Markdown
        block = (
            make_line(rng, ctx) if (profile.lines_only and kind == "paragraph") else MAKERS[kind](rng, ctx)
        )
        # A group of blocks placed together: a table may come with its caption above it.
        group: list[Block] = [block]  # type: ignore[list-item]
        if kind == "table" and rng.random() < profile.caption_p:
            group.insert(0, make_caption(rng, ctx, table_number))
        group_md = sum(len(b.markdown()) + 2 for b in group)
        if md_len + group_md > profile.max_markdown_chars:
            failures += 1
            continue
        lays = [_layout(b, style, col_w, profile) for b in group]
        if kind == "table" and lays[-1] is None and table_retries < 4:
            table_retries += 1  # too wide for the column: draw another table rather than give up on tables
            continue
        if any(laid is None for laid in lays) or (
            profile.lines_only and kind == "paragraph" and lays[0].height > 1.6 * style.body_px  # type: ignore[union-attr]
        ):
            failures += 1
            continue
        inner_gap = int(style.body_px * 0.4)
        height = sum(laid.height for laid in lays) + inner_gap * (len(lays) - 1)  # type: ignore[union-attr]
        gap = block_gap if y > top else 0
        if y + gap + height > bottom:
            if column + 1 < columns and height <= bottom - top:
                column, y, gap = column + 1, top, 0
            else:
                failures += 1
                continue
        x = left + column * (col_w + gutter)
        y += gap
        for member, laid in zip(group, lays):
            assert laid is not None
            pending.append((PlacedBlock(member, (x, y, x + laid.width, y + laid.height), column), laid))
            y += laid.height + inner_gap
        y -= inner_gap
        md_len += group_md
        if kind == "table":
            table_number += 1
    while len(pending) > 1 and isinstance(pending[-1][0].block, Heading):
        pending.pop()
    for placed_block, laid in pending:
        laid.draw(image, pen, placed_block.bbox[0], placed_block.bbox[1])
    placed = [placed_block for placed_block, _ in pending]
    return Composition(image, placed, furniture, style, ctx, columns, pen.map)
