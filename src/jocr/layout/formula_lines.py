"""Display formulas among a pixel page's OCR lines (docs/elements.md, "Formulas in page images").

The layout detector finds few display formulas on scanned pages (`benchmarks/formulas.py regions`: 1 of
68 on the development scans at its kind threshold), so a page read from pixels also looks for them in its
OCR lines. An OCR engine reads a display formula as one or a few short lines set apart from the prose:
centred or indented in their column, narrower than it, with space above and below, made of signs and single
letters rather than words (and often read with low confidence); the pieces of a fraction or of limits are
lines stacked over each other. Such lines, grouped, are a formula region: its box (padded) is cut out and
read by the formula reader (`jocr.pipeline.formulas`). Only pages read with a formula reader look.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, replace

from jocr.bbox import union
from jocr.layout.render import block_markdown
from jocr.layout.tree import FORMULA, HEADING, PARAGRAPH, TABLE, TITLE, Block, PageTree
from jocr.lines.types import Line

Box = tuple[float, float, float, float]

# Signs that make a line math (brackets and slashes alone do not: "DNS (BIND)", "1/92").
_MATH_SIGNS = set("=<>+−±×÷·∑∏∫√∞≤≥≠≈≡∈∉⊂⊆∪∩∂∇→←↔⇒⇔^∀∃′∼≃≅∝∓⊗⊕∘⊥∥∧∨¬∅⊃⊇⇐↦")
# Lines that are code or markup shown as text (an R prompt, an assignment arrow, a TeX command, a comment),
# or numbers alone (a page number "3/92", a date): never formulas.
_NOT_MATH = re.compile(r"^\s*[>$#%]|<-|->|\\|\{%|[\"'`]|^[\d\s/.:,\-]+$")
_GREEK = re.compile(r"[\u0391-\u03c9]")
_WORD = re.compile(r"[A-Za-z]{4,}")
_LETTERS_WORD = re.compile(r"[A-Za-z]{3,}")
_TAG = re.compile(r"^\(\s*[\dA-Za-z]+(?:\.\d+)*\s*\)$")  # an equation number: (1), (2.3), (A.1)
# A prime read as an apostrophe: after a letter or a closing bracket, not before a letter ("α' = max(a, c)",
# "f'(x)"; not "don't" or a quoted 'word').
_PRIME = re.compile(r"(?<=[A-Za-z\u0391-\u03c9)])'+(?![A-Za-z])")


def _code_or_markup(text: str) -> bool:
    """Whether a line is code or markup shown as text, or numbers alone (`_NOT_MATH`), primes aside."""
    return bool(_NOT_MATH.search(_PRIME.sub("′", text)))


@dataclass(frozen=True)
class FormulaLinesConfig:
    """What makes a line part of a display formula (shares of its column's width, multiples of the page's
    median line height `h`)."""

    max_width: float = 0.75  # narrower than this share of its column
    min_indent: float = 0.06  # its left edge at least this share of the column in from the column's left
    max_words: int = 2  # words of 4 letters or more (prose) it may hold ("where", "for all")
    min_gap: float = 0.05  # free space above and below, in h, to the nearest line that is not a candidate
    low_confidence: float = 0.75  # a line read this unsure counts as a sign of math
    stack_gap: float = (
        1.2  # candidate lines this close vertically (in h) and overlapping in x are one formula
    )
    row_gap: float = 3.0  # and pieces of one row (overlapping vertically) this close horizontally (in h)
    wide_signs: int = 3  # a line of no word with this many math signs is a formula however wide (`_all_math`)
    max_piece_chars: int = 3  # a fragment beside or on a candidate line joins it (`_pieces`) up to this long
    script_height: float = 0.7  # a line at most this share of a formula's tallest line's height is a piece
    pad: float = 0.3  # the region's box is padded by this (in h)


def _math_evidence(line: Line, cfg: FormulaLinesConfig) -> bool:
    text = line.text.strip()
    if _code_or_markup(text):
        return False
    signs = sum(ch in _MATH_SIGNS for ch in text) + len(_GREEK.findall(text))
    unsure = line.confidence is not None and line.confidence < cfg.low_confidence
    return signs > 0 or unsure


def _pieces(lines: list[Line], candidates: list[int], allowed: set[int] | None, h: float,
            cfg: FormulaLinesConfig) -> list[int]:  # fmt: skip
    """Fragments beside or stacked on a candidate line that carry no sign of their own: a numerator "1", a
    limit "n", a differential "dx", an operator "d" read apart. At most `cfg.max_piece_chars` characters, no
    letters-only word of three or more (a table's cell "ptm", a word), within `cfg.row_gap` line heights of a
    candidate on its row or `cfg.stack_gap` above or below it overlapping in x. Found once, from the
    candidates alone (a fragment does not bring the next)."""
    out = []
    taken = set(candidates)
    for i, ln in enumerate(lines):
        text = ln.text.strip()
        if i in taken or (allowed is not None and i not in allowed) or not text:
            continue
        if len(text) > cfg.max_piece_chars or _LETTERS_WORD.search(text):
            continue
        if _code_or_markup(text) and not text.isdigit():  # digits beside a formula: a numerator, a limit
            continue
        a = ln.box
        for k in candidates:
            b = lines[k].box
            row = _same_row(a, b)
            apart = max(a[0], b[0]) - min(a[2], b[2])
            stacked = a[0] < b[2] and b[0] < a[2] and max(a[1] - b[3], b[1] - a[3]) <= cfg.stack_gap * h
            if (row and apart <= cfg.row_gap * h) or stacked:
                out.append(i)
                break
    return out


def _all_math(text: str, cfg: FormulaLinesConfig) -> bool:
    """A line that is math whatever its width and place: no word of four letters or more, at least
    `cfg.wide_signs` math signs (relations, operators, Greek), at least 8 characters, no code or markup."""
    if len(text) < 8 or _WORD.search(text) or _code_or_markup(text):
        return False
    return sum(ch in _MATH_SIGNS for ch in text) + len(_GREEK.findall(text)) >= cfg.wide_signs


def _shares_row(i: int, lines: list[Line], candidates: set[int], column: tuple[float, float]) -> bool:
    """Whether line i has a line beside it on its row, in its column (`_columns`: the next column's prose is
    not beside it), that is neither part of a formula nor an equation number: a table's cells, a label and
    its value."""
    a = lines[i].box
    for j, other in enumerate(lines):
        b = other.box
        if j == i or j in candidates or _TAG.match(other.text.strip()):
            continue
        if _same_row(a, b) and column[0] <= (b[0] + b[2]) / 2 <= column[1]:
            return True
    return False


def _same_row(a: Box, b: Box) -> bool:
    """Whether two boxes share at least half the shorter one's height: one printed row (the test of
    `jocr.layout.geometry.side_by_side`, on boxes)."""
    return min(a[3], b[3]) - max(a[1], b[1]) >= 0.5 * min(a[3] - a[1], b[3] - b[1])


def _relation(text: str) -> bool:
    """Whether a line states a relation (=, <, >, ...): a row of a formula rather than a piece of one."""
    return any(ch in "=<>≤≥≠≈≡→⇒⇔∈∼" for ch in text)


def _columns(lines: list[Line]) -> list[tuple[float, float]]:
    """Each line's column: the x-extent of the lines wider than half the widest that overlap it
    vertically within 8 line heights and horizontally; the page's text extent where none does."""
    widths = [ln.box[2] - ln.box[0] for ln in lines]
    heights = [ln.box[3] - ln.box[1] for ln in lines]
    h = statistics.median(heights)
    wide = [ln for ln, w in zip(lines, widths) if w >= 0.5 * max(widths)]
    left, right = min(ln.box[0] for ln in lines), max(ln.box[2] for ln in lines)
    out = []
    for ln in lines:
        near = [
            o for o in wide
            if abs((o.box[1] + o.box[3]) - (ln.box[1] + ln.box[3])) / 2 <= 8 * h
            and o.box[0] < ln.box[2] and ln.box[0] < o.box[2]
        ]  # fmt: skip
        if near:
            out.append((min(o.box[0] for o in near), max(o.box[2] for o in near)))
        else:
            out.append((left, right))
    return out


def formula_regions(
    lines: list[Line], cfg: FormulaLinesConfig | None = None, allowed: set[int] | None = None
) -> list[tuple[Box, list[int]]]:
    """The display formulas among `lines` (OCR lines of one page): each as its padded box and the indices of
    the lines it holds, top to bottom. Only lines in `allowed` (all when None) may be part of one; the
    others still count as the page's text around them."""
    cfg = cfg or FormulaLinesConfig()
    if len(lines) < 3:
        return []
    h = statistics.median(ln.box[3] - ln.box[1] for ln in lines)
    columns = _columns(lines)
    candidates = []
    for i, (ln, (left, right)) in enumerate(zip(lines, columns)):
        width, text = right - left, ln.text.strip()
        if width <= 0 or _TAG.match(text) or (allowed is not None and i not in allowed):
            continue
        narrow = ln.box[2] - ln.box[0] <= cfg.max_width * width
        indented = ln.box[0] - left >= cfg.min_indent * width
        prose = len(_WORD.findall(text)) > cfg.max_words
        if narrow and indented and not prose and _math_evidence(ln, cfg):
            candidates.append(i)
        elif _all_math(text, cfg):  # a display as wide as its column: signs and symbols, not a word
            candidates.append(i)
    candidates += _pieces(lines, candidates, allowed, h, cfg)
    chosen = set(candidates)
    candidates = [i for i in candidates if not _shares_row(i, lines, chosen, columns[i])]
    chosen = set(candidates)
    groups: list[list[int]] = []
    for i in sorted(candidates, key=lambda k: lines[k].box[1]):
        box = lines[i].box
        for group in groups:
            g = union([lines[k].box for k in group])
            overlap = min(box[2], g[2]) - max(box[0], g[0])
            # rows that each state a relation are formulas of their own (a derivation, a list of rules);
            # a piece (a numerator, a limit) joins the formula it is stacked on, and so does a line set
            # in script size (a big operator's limits, "i∈n", "j=1": relations, but not rows)
            tallest = max(lines[k].box[3] - lines[k].box[1] for k in group)
            script = box[3] - box[1] <= cfg.script_height * tallest
            piece = script or not _relation(lines[i].text) or not any(_relation(lines[k].text) for k in group)
            near = box[1] - g[3] <= cfg.stack_gap * h and g[1] - box[3] <= cfg.stack_gap * h
            if piece and near and overlap > 0:
                group.append(i)
                break
        else:
            groups.append([i])
    groups = _join_rows([[lines[k].box for k in g] for g in groups], groups, cfg.row_gap * h)
    out = []
    for group in groups:
        g = union([lines[k].box for k in group])
        others = [
            ln.box for k, ln in enumerate(lines) if k not in chosen and ln.box[0] < g[2] and g[0] < ln.box[2]
        ]
        above = min((g[1] - b[3] for b in others if b[3] <= g[1] + 0.2 * h), default=10 * h)
        below = min((b[1] - g[3] for b in others if b[1] >= g[3] - 0.2 * h), default=10 * h)
        if above < cfg.min_gap * h or below < cfg.min_gap * h:
            continue
        pad = cfg.pad * h
        out.append(((g[0] - pad, g[1] - pad, g[2] + pad, g[3] + pad), sorted(group)))
    return out


def _join_rows(boxes: list[list[Box]], groups: list[list[int]], gap: float) -> list[list[int]]:
    """Groups side by side on one row (each overlapping half the other's height, at most `gap` apart)
    joined: a display's pieces that OCR read as separate lines (a fraction beside a sum)."""
    groups = [list(g) for g in groups]
    unions = [union(b) for b in boxes]
    joined = True
    while joined:
        joined = False
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                ua, ub = unions[a], unions[b]
                apart = max(ua[0], ub[0]) - min(ua[2], ub[2])
                if _same_row(ua, ub) and apart <= gap:
                    groups[a] += groups.pop(b)
                    unions[a] = union([ua, unions.pop(b)])
                    joined = True
                    break
            if joined:
                break
    return groups


# Blocks the rules may have made of a display formula's lines (a formula's OCR text reads as a paragraph,
# often run into the prose around it, or as a heading or title when its glyphs are large); code, lists and
# captions keep their lines. A small table can be a formula's pieces set side by side ("f(x,y) dA =" | "∫∫"
# | "f(r cos θ, r sin θ) r dr dθ"): it becomes the formula when a region takes some of its lines and every
# line lies within `stack_gap` line heights of the region (`_within`).
_FORMULA_FROM = (PARAGRAPH, HEADING, TITLE)
_TABLE_LINES = 8  # a table of at most this many lines may be a formula's pieces


def mark_formulas(tree: PageTree, cfg: FormulaLinesConfig | None = None) -> int:
    """The display formulas of a page read from pixels (`tree.from_pixels`: an image, or a scanned PDF page
    in points) made formula blocks: where `formula_regions` groups lines of paragraph, heading or title
    blocks (or a small table) that follow each other (the end of one block, whole blocks, the start of
    another), those lines become one formula block over the region's box (clipped to the page), its text
    their OCR text until the formula reader reads it; what stays of the blocks before and after keeps its
    type. A region whose lines do not run on so is left as it is. Returns how many formula blocks were
    made."""
    if not tree.from_pixels:
        return 0
    owners: list[Block] = []
    sources: list = []  # the tree's lines (`TreeLine`), as `lines` holds them
    lines: list[Line] = []
    for block in tree.blocks:
        for tl in block.lines:
            if tl.bbox is not None:
                owners.append(block)
                sources.append(tl)
                lines.append(Line(tl.text, tuple(tl.bbox), confidence=tl.confidence))
    allowed = {i for i, b in enumerate(owners) if _may_hold_formula(b)}
    cfg = cfg or FormulaLinesConfig()
    reach = cfg.stack_gap * statistics.median(ln.box[3] - ln.box[1] for ln in lines) if lines else 0.0
    made = 0
    for box, members in formula_regions(lines, cfg, allowed):
        wanted = {id(sources[i]) for i in members}
        tables = {id(owners[i]): owners[i] for i in members if owners[i].type == TABLE}
        if not all(_within(t, box, reach) for t in tables.values()):
            continue  # a region over part of a table: the table's cells stay
        wanted |= {id(tl) for t in tables.values() for tl in t.lines}
        made += _cut_formula(tree, box, wanted)
    if made:
        _drop_numbers(tree)
        tree.numbered()
    return made


def _may_hold_formula(block: Block) -> bool:
    """Whether a block's lines may be a display formula's (`_FORMULA_FROM`, or a small table)."""
    if block.furniture:
        return False
    return block.type in _FORMULA_FROM or (block.type == TABLE and len(block.lines) <= _TABLE_LINES)


def _within(table: Block, box: Box, reach: float) -> bool:
    """Whether every line of a table lies inside a formula region's box or sticks out of it by at most
    `reach` (the pieces of a formula OCR read apart: an integral's signs, its domain under it)."""
    return all(
        tl.bbox is not None
        and box[0] - reach <= tl.bbox[0]
        and tl.bbox[2] <= box[2] + reach
        and box[1] - reach <= tl.bbox[1]
        and tl.bbox[3] <= box[3] + reach
        for tl in table.lines
    )


def _drop_numbers(tree: PageTree) -> None:
    """Equation numbers ("(8)") on a formula block's row, beside it, left out of the paragraphs and headings
    the rules had made of them (a number alone read as a heading, "## (8)"), as the text layer's formulas
    leave theirs out (`jocr.layout.formulas`)."""
    rows = [b.bbox for b in tree.blocks if b.type == FORMULA and b.bbox is not None]

    def number(tl) -> bool:
        if tl.bbox is None or not _TAG.match(tl.text.strip()):
            return False
        y0, y1 = tl.bbox[1], tl.bbox[3]
        return any(
            min(y1, r[3]) - max(y0, r[1]) >= 0.5 * (y1 - y0) and (tl.bbox[0] >= r[2] or tl.bbox[2] <= r[0])
            for r in rows
        )

    kept = []
    for block in tree.blocks:
        rest = [tl for tl in block.lines if not number(tl)] if block.type in _FORMULA_FROM else block.lines
        if len(rest) == len(block.lines):
            kept.append(block)
        elif (piece := _piece(block, rest)) is not None:
            kept.append(piece)
    tree.blocks = kept


def _cut_formula(tree: PageTree, box: Box, wanted: set[int]) -> int:
    """One region's lines (the ids of the tree's lines) cut out of their blocks into one formula block,
    when they run on through consecutive blocks; 1 if made, else 0 (the tree unchanged)."""
    touched = [k for k, b in enumerate(tree.blocks) if any(id(tl) in wanted for tl in b.lines)]
    if not touched or touched != list(range(touched[0], touched[-1] + 1)):
        return 0
    runs = []
    for k in touched:
        inside = [id(tl) in wanted for tl in tree.blocks[k].lines]
        first, last = inside.index(True), len(inside) - 1 - inside[::-1].index(True)
        if not all(inside[first : last + 1]):
            return 0
        runs.append((first, last, len(inside)))
    if any(first > 0 for first, _, _ in runs[1:]) or any(last < n - 1 for _, last, n in runs[:-1]):
        return 0  # not one stretch of lines: prose between the formula's lines
    blocks = [tree.blocks[k] for k in touched]
    head, tail = blocks[0].lines[: runs[0][0]], blocks[-1].lines[runs[-1][1] + 1 :]
    held = [tl for b in blocks for tl in b.lines if id(tl) in wanted]
    formula = Block(FORMULA, text=" ".join(tl.text for tl in held), lines=held, order=blocks[0].order)
    formula.bbox = (max(0.0, box[0]), max(0.0, box[1]), min(tree.width, box[2]), min(tree.height, box[3]))
    formula.markdown = block_markdown(formula)
    pieces = [_piece(blocks[0], head), formula, _piece(blocks[-1], tail)]
    tree.blocks[touched[0] : touched[-1] + 1] = [b for b in pieces if b is not None]
    return 1


def _piece(block: Block, lines: list) -> Block | None:
    """What stays of `block` with only `lines` (None for none): its type, their text and box."""
    if not lines:
        return None
    boxes = [tl.bbox for tl in lines if tl.bbox is not None]
    piece = replace(block, lines=list(lines), text=" ".join(tl.text for tl in lines), bbox=union(boxes))
    piece.markdown = block_markdown(piece)
    return piece
