"""Formulas on born-digital pages: found from the text layer's signals and read as LaTeX (docs/layout.md,
"Formulas").

- `read_formula_region(page, region)`: the LaTeX of the formula inside a box of a PDF page (points, top-left
  origin), read from its glyphs and rules (`jocr.layout.formula_latex`); an equation number at the right
  ("(3)") is left out. A region without glyphs gives an empty answer with a note, never an exception.
- `find_formulas(glyphs, rules, lines)`: display formulas of a page: clusters of text-layer lines whose
  glyphs are mostly math (math fonts, math symbols, Greek, italic single letters, scripts), with no prose
  word, plus the rules between them.
- `with_formulas(tree, formulas)`: a page tree whose lines inside a display formula become one `formula`
  block (its Markdown `$$..$$`), splitting the block they were in.
- `page_formulas(page, layer)`: the two steps above for one `pypdfium2.PdfPage` and its text layer.
- the page pipeline finds a page's formulas from its one read (`jocr.layout.page_read.page_formulas`).
"""

from __future__ import annotations

import logging
import re
import statistics
import time
import unicodedata
from dataclasses import dataclass, field

from jocr.bbox import BBox as Box
from jocr.checks.latex_symbols import GREEK, OPERATOR_NAMES, SYMBOLS, is_upright_font
from jocr.layout.formula_glyphs import Glyph, GlyphLimits, Rule, is_math_font, page_glyphs
from jocr.layout.formula_inline import inline_text
from jocr.layout.formula_latex import glyph_rows, glyphs_latex
from jocr.layout.geometry import join_text
from jocr.layout.render import block_markdown
from jocr.layout.tree import CODE, FORMULA, TABLE, Block, PageTree, TreeLine, union

log = logging.getLogger(__name__)

MATH_SHARE = 0.6  # share of a line's glyphs that must be math for the line to be a formula's
ROW_GAP = 1.5  # ems between two pieces of one row of text (a word space, a \quad before a remark) at most
# ems from a formula's cluster to prose on its row that make it inline math; a prose column further off
# (a slide's or a two-column sheet's other column) leaves it a display
PROSE_REACH = 3.0
_EQUATION_NUMBER = re.compile(r"\(\s*[0-9]{1,3}(?:\.[0-9]{1,3})?[a-z]?\s*\)")


@dataclass
class FormulaResult:
    """A formula read from a region: its LaTeX ("" when none was found, `note` saying why), whether it is a
    display formula, its box (points) and the equation number left out of it."""

    latex: str
    display: bool = True
    box: Box | None = None
    note: str = ""
    tag: str = ""
    glyphs: int = 0
    seconds: float = 0.0

    @property
    def markdown(self) -> str:
        if not self.latex:
            return ""
        return f"$$\n{self.latex}\n$$" if self.display else f"${self.latex}$"

    def to_dict(self) -> dict:
        out = {"latex": self.latex, "display": self.display, "markdown": self.markdown}
        if self.box is not None:
            out["bbox"] = [round(v, 2) for v in self.box]
        for key in ("note", "tag"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


@dataclass
class FormulaRegion:
    """A display formula found on a page: its box (points) and LaTeX."""

    box: Box
    latex: str
    tag: str = ""
    lines: list[int] = field(default_factory=list)  # indices of the text-layer lines it covers
    display: bool = True
    text: str = ""  # inline: the whole line's text with its formulas written $...$ (`box` is the line's)


def _centre_in(box: Box, region: Box, pad: float = 1.0) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return region[0] - pad <= cx <= region[2] + pad and region[1] - pad <= cy <= region[3] + pad


def _strip_tag(glyphs: list[Glyph]) -> tuple[list[Glyph], str]:
    """An equation number at the row's right (or left) end, set apart by a gap: (the rest, its number)."""
    if len(glyphs) < 4:
        return glyphs, ""
    ordered = sorted(glyphs, key=lambda g: g.x0)
    if ordered[0].text == "(":  # a number at the left margin (leqno)
        for k in range(1, min(len(ordered) - 1, 12)):
            if ordered[k].text == ")":
                head = "".join(g.text for g in ordered[: k + 1])
                gap = ordered[k + 1].x0 - ordered[k].x1
                if _EQUATION_NUMBER.fullmatch(head) and gap > 1.0 * ordered[k].size:
                    return ordered[k + 1 :], head.strip("() ")
                break
    for k in range(len(ordered) - 1, 0, -1):
        if ordered[k].text != "(":
            continue
        tail = "".join(g.text for g in ordered[k:])
        gap = ordered[k].x0 - max(g.x1 for g in ordered[:k])
        if _EQUATION_NUMBER.fullmatch(tail) and gap > 2.0 * ordered[k].size:
            return ordered[:k], tail.strip("() ")
        break
    return glyphs, ""


def read_glyphs(
    glyphs: list[Glyph], rules: list[Rule], region: Box | None = None, display: bool = True
) -> FormulaResult:
    """The formula drawn by the glyphs and rules inside `region` (all of them when None)."""
    start = time.perf_counter()
    if region is not None:
        glyphs = [g for g in glyphs if _centre_in(g.box, region)]
        rules = [r for r in rules if _centre_in(r.box, region)]
    if not glyphs:
        return FormulaResult("", display, region, note="no text-layer glyphs in the region")
    glyphs, tag = _strip_tag(glyphs)
    box = union([g.box for g in glyphs] + [r.box for r in rules])
    latex = glyphs_latex(glyphs, rules)
    note = "" if latex else "the region's glyphs read as no formula"
    return FormulaResult(latex, display, box, note, tag, len(glyphs), time.perf_counter() - start)


def read_formula_region(
    page, region: Box | None = None, display: bool = True, limits: GlyphLimits | None = None
) -> FormulaResult:
    """The LaTeX of the formula inside `region` (x0, y0, x1, y1 in points, top-left origin; None: the whole
    page) of a `pypdfium2.PdfPage`, read from its text layer's glyphs and its rules. A page without a text
    layer (a scan) or a region without glyphs gives an empty `latex` and a `note`. The caller holds the
    PDFium lock."""
    start = time.perf_counter()
    glyphs, rules = page_glyphs(page, limits)
    if not glyphs:
        return FormulaResult("", display, region, note="the page has no readable text layer")
    result = read_glyphs(glyphs, rules, region, display)
    result.seconds = time.perf_counter() - start
    return result


def _math_glyph(g: Glyph) -> bool:
    ch = g.text
    if is_math_font(g.font):
        return True
    if ch in GREEK or ch in SYMBOLS or (len(ch) == 1 and unicodedata.category(ch) == "Sm"):
        # in a text font: braces, signs, dashes and middle dots of prose ("pages 216–222", "史记·项羽本纪"),
        # not math
        return ch not in "{}%#&_$\\…§¶†‡–—‐·"
    return len(ch) == 1 and 0x1D400 <= ord(ch) < 0x1D800


def _letter_runs(glyphs: list[Glyph]) -> list[str]:
    """Words of letters in a text font (roman or italic: a theorem's statement is set in italic)."""
    runs: list[str] = []
    run: list[Glyph] = []
    for g in sorted(glyphs, key=lambda g: g.x0) + [None]:
        letter = g is not None and g.text.isalpha() and not is_math_font(g.font)
        if letter and run and (g.x0 - run[-1].x1 < 0.2 * g.size and abs(g.baseline - run[-1].baseline) < 1):
            run.append(g)
            continue
        if run:
            runs.append("".join(x.text for x in run))
        run = [g] if letter else []
    return runs


def _prose_words(glyphs: list[Glyph]) -> int:
    """Words of four or more text-font letters that are not operator names: prose."""
    return sum(1 for w in _letter_runs(glyphs) if len(w) >= 4 and w not in OPERATOR_NAMES)


def _italic_variables(glyphs: list[Glyph]) -> set[int]:
    """ids of the Latin letters in a text face's italic that stand alone (no letter touching them on their
    baseline): variables of math set without math fonts ("e + iπ", "a + b = c" in Times Italic)."""
    out: set[int] = set()
    letters = sorted(
        (g for g in glyphs if g.text.isascii() and g.text.isalpha() and not is_math_font(g.font)),
        key=lambda g: g.x0,
    )
    for k, g in enumerate(letters):
        if is_upright_font(g.font):
            continue
        near = letters[max(0, k - 1) : k] + letters[k + 1 : k + 2]
        if not any(
            abs(o.baseline - g.baseline) < 1
            and -0.2 * g.size < max(o.x0, g.x0) - min(o.x1, g.x1) < 0.2 * g.size
            for o in near
        ):
            out.add(id(g))
    return out


def _line_mathiness(glyphs: list[Glyph]) -> float:
    if not glyphs:
        return 0.0
    body, _ = _strip_tag(glyphs)
    variables = _italic_variables(body)
    return sum(_math_glyph(g) or id(g) in variables for g in body) / max(1, len(body))


def _meets(a: Box, b: Box) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _inside(a: Box, b: Box) -> bool:
    return b[0] <= a[0] and a[2] <= b[2] and b[1] <= a[1] and a[3] <= b[3]


def _beside(line: Box, box: Box, size: float, ems: float = ROW_GAP) -> bool:
    """Whether a line shares most of its height with a box and lies within `ems` of it: a piece of the same
    row of text (a line of the next column at that height is not; a column gap is an em or more)."""
    overlap = min(line[3], box[3]) - max(line[1], box[1])
    gap = max(line[0], box[0]) - min(line[2], box[2])
    return overlap > 0.5 * min(line[3] - line[1], box[3] - box[1]) and gap <= ems * size


def _joins_formula(glyphs: list[Glyph]) -> bool:
    """Whether a line next to a formula's is part of it: no prose, and some math or no text-font letters at
    all (a numerator "1", an exponent "2", a row of limits)."""
    if _prose_words(glyphs):
        return False
    letters = sum(len(w) for w in _letter_runs(glyphs) if w not in OPERATOR_NAMES)
    if _line_mathiness(glyphs) >= 0.3 or letters <= 1:
        return True
    # math set in a text face's italic (Palatino, Times): short italic runs ("gs", "Rs") are variables, so a
    # script or limit row such as "ψ(gs)" or "s,Rs=Ii" joins when it holds a math glyph beside them
    return any(_math_glyph(g) for g in glyphs) and _italic_share(glyphs) >= 0.5


def _italic_share(glyphs: list[Glyph]) -> float:
    """The share of a line's letters in an italic face (math letters, where they are in no math font)."""
    letters = [g for g in glyphs if g.text.isalpha()]
    if not letters:
        return 0.0
    return sum(not is_upright_font(g.font) or is_math_font(g.font) for g in letters) / len(letters)


def find_formulas(
    glyphs: list[Glyph], rules: list[Rule], lines: list, width: float = 0.0, inline: bool = False
) -> list[FormulaRegion]:
    """Display formulas among a page's text-layer `lines` (`Line`s with boxes, in the layer's order); with
    `inline`, also each prose line holding inline formulas (`display` False, its new `text`)."""
    if not glyphs or not lines:
        return []
    boxes = [tuple(ln.box) for ln in lines]
    members: list[list[Glyph]] = [[] for _ in lines]
    line_of: dict[int, int] = {}  # id(glyph) -> its line
    order = sorted(range(len(boxes)), key=lambda k: (boxes[k][2] - boxes[k][0]) * (boxes[k][3] - boxes[k][1]))
    # lines by 8 pt bands of the page's height, so a glyph looks only at the lines of its band
    bands: dict[int, list[int]] = {}
    for k in order:
        for band in range(int((boxes[k][1] - 0.5) // 8), int((boxes[k][3] + 0.5) // 8) + 1):
            bands.setdefault(band, []).append(k)
    for g in glyphs:
        for k in bands.get(int(((g.y0 + g.y1) / 2) // 8), ()):  # the smallest line holding its centre
            if _centre_in(g.box, boxes[k], pad=0.5):
                members[k].append(g)
                line_of[id(g)] = k
                break
    candidate = []
    for own in members:
        mathy = _line_mathiness(own) >= MATH_SHARE and _prose_words(own) == 0
        candidate.append(mathy and bool(own))
    prose = [_prose_words(own) > 0 for own in members]
    body_size = statistics.median(g.size for g in glyphs)
    # math on the row of a prose line is inline math: never a display formula's line; pieces of one row
    # pass it on ("that λg = ∑", "k", "i=1", "c(g, R)": the last is as far from the first as a column gap)
    by_top = sorted(range(len(lines)), key=lambda j: boxes[j][1])
    pairs = []
    for a_pos, a in enumerate(by_top):
        for b in by_top[a_pos + 1 :]:
            if boxes[b][1] > boxes[a][3]:
                break
            if _beside(boxes[a], boxes[b], body_size):
                pairs.append((a, b))
    in_prose = list(prose)
    spread = True
    while spread:
        spread = False
        for a, b in pairs:
            if in_prose[a] != in_prose[b]:
                in_prose[a] = in_prose[b] = True
                spread = True
    candidate = [c and not i for c, i in zip(candidate, in_prose)]
    regions: list[FormulaRegion] = []
    used: set[int] = set()
    for k in range(len(lines)):
        if not candidate[k] or k in used:
            continue
        cluster = {k}
        box = boxes[k]
        # the body's size at least: a cluster may start from a line of limits set small
        size = max(max((g.size for g in members[k]), default=10.0), body_size)
        # glyphs in no text-layer line (big operators, delimiters) near the line widen its box
        free = [g for g in glyphs if id(g) not in line_of]
        grown = True
        while grown:
            grown = False
            reach = (box[0] - 0.5 * size, box[1] - 0.5 * size, box[2] + 0.5 * size, box[3] + 0.5 * size)
            extra = [g.box for g in free if _meets(g.box, reach) and not _inside(g.box, box)]
            # a fraction bar under or over the line brings its other half's lines within reach
            extra += [r.box for r in rules if _meets(r.box, reach) and not _inside(r.box, box)]
            if extra:
                box = union([box, *extra])
                grown = True
            for j in range(len(lines)):
                if j in cluster or j in used or not members[j]:
                    continue
                b = boxes[j]
                near = b[1] <= box[3] + 0.8 * size and b[3] >= box[1] - 0.8 * size
                across = b[0] <= box[2] + 1.5 * size and b[2] >= box[0] - 1.5 * size
                if near and across and not in_prose[j] and (candidate[j] or _joins_formula(members[j])):
                    cluster.add(j)
                    box = union([box, b])
                    grown = True
        if any(
            _beside(boxes[j], box, size, PROSE_REACH) and prose[j]
            for j in range(len(lines))
            if j not in cluster
        ):
            continue  # math inside a line of prose: inline, not a display formula
        # every glyph inside the cluster's box: a big operator or delimiter may belong to no text-layer line
        own = [
            g for g in glyphs
            if line_of.get(id(g), k) in cluster and _centre_in(g.box, box, pad=0.3 * size)
        ]  # fmt: skip
        if len(own) < 2:  # one glyph (an end-of-proof box beside prose) is no display formula
            continue
        if len({g.text for g in own}) == 1 and not own[0].text.isalnum():
            continue  # one sign over and over (a table's column of "•" marks, a row of dots): no formula
        inner = [
            r
            for r in rules
            if _centre_in(r.box, (box[0] - size, box[1] - size, box[2] + size, box[3] + size))
        ]
        rows = glyph_rows(own, inner)
        used |= cluster
        for latex, row_box in rows:
            row = [g for g in own if _centre_in(g.box, row_box, pad=0.1)]
            body, tag = _strip_tag(row)
            if tag:
                latex = glyphs_latex(body, [r for r in inner if _centre_in(r.box, row_box)])
            if latex and any(_math_glyph(g) for g in body):
                lines_in = [j for j in cluster if _centre_in(boxes[j], row_box)]
                regions.append(FormulaRegion(row_box, latex, tag, sorted(lines_in)))
    if inline:
        eligible = [
            j not in used and (prose[j] or in_prose[j]) and not getattr(line, "mono", False)
            for j, line in enumerate(lines)
        ]
        for run in _row_pieces(boxes, eligible, body_size):
            # a prose line, or a row of pieces of one: the text layer breaks a row of prose where a script's
            # baseline differs ("that λg = ∑", "k", "i=1", "c(g, R/AnnR(xi))"), and a formula across the
            # pieces is read from all their glyphs; the first piece takes the row's text, the others none
            own = [g for j in run for g in members[j]]
            # the row's own body size: a page's median can be its smaller notes' (references, footnotes)
            row_size = statistics.median(g.size for g in own) if own else body_size
            text = inline_text(" ".join(lines[j].text for j in run), own, rules, _math_glyph, row_size)
            if text is not None:
                for n, j in enumerate(run):
                    piece = "" if n else text
                    regions.append(FormulaRegion(boxes[j], "", lines=[j], display=False, text=piece))
    return regions


def _row_pieces(boxes: list[Box], eligible: list[bool], size: float) -> list[list[int]]:
    """Eligible lines in runs of consecutive pieces of one row: each starts within an em of where the run so
    far ends, not left of the piece before it (a script stacked over another starts where it does), and
    shares part of the run's height; a line alone is a run of one."""
    runs: list[list[int]] = []
    for j, ok in enumerate(eligible):
        if not ok:
            continue
        if runs and runs[-1][-1] == j - 1:
            a, b = union([boxes[k] for k in runs[-1]]), boxes[j]
            overlap = min(a[3], b[3]) - max(a[1], b[1])
            starts = b[0] >= boxes[j - 1][0] - 0.1 * size and b[0] - a[2] <= 1.0 * size
            if starts and overlap > 0.3 * min(a[3] - a[1], b[3] - b[1]):
                runs[-1].append(j)
                continue
        runs.append([j])
    return runs


def with_formulas(tree: PageTree, formulas: list[FormulaRegion]) -> PageTree:
    """`tree` with every line inside a display formula moved into one `formula` block at the place of its
    first line, boxed around the formula's ink and those lines; the blocks they were in are split around
    it."""
    inline = {_key(f.box): f.text for f in formulas if not f.display}
    formulas = [f for f in formulas if f.display]
    if inline:
        _inline_into(tree, inline)
    if not formulas:
        return tree.numbered()

    def region_of(line: TreeLine) -> int | None:
        if line.bbox is None:
            return None
        for k, f in enumerate(formulas):
            if _centre_in(line.bbox, f.box):
                return k
        return None

    out: list[Block] = []
    placed: dict[int, Block] = {}  # formula index -> its block
    for block in tree.blocks:
        if block.furniture or block.type == FORMULA or not block.lines:
            out.append(block)
            continue
        marks = [region_of(line) for line in block.lines]
        if all(m is None for m in marks):
            out.append(block)
            continue
        run: list[TreeLine] = []

        def flush(run=run, block=block):
            if run:
                text = join_text([ln.text for ln in run])
                part = Block(block.type, text, "", union([ln.bbox for ln in run]), list(run), block.level)
                part.marker = block.marker
                part.markdown = block_markdown(part)
                out.append(part)
                run.clear()

        for line, mark in zip(block.lines, marks):
            if mark is None:
                run.append(line)
                continue
            flush()
            if mark in placed:
                placed[mark].lines.append(line)
                continue
            f = formulas[mark]
            formula = Block(FORMULA, f.latex, "", f.box, [line], latex=f.latex)
            formula.markdown = block_markdown(formula)
            placed[mark] = formula
            out.append(formula)
        flush()
    for mark, formula in placed.items():  # the ink's box, and the lines' (their fonts' ascent and descent)
        formula.bbox = union([formulas[mark].box] + [ln.bbox for ln in formula.lines])
    tree.blocks = out
    return tree.numbered()


def _key(box) -> tuple:
    return tuple(round(float(v), 1) for v in box)


def _inline_into(tree: PageTree, inline: dict[tuple, str]) -> None:
    """Lines with inline formulas take their new text; their blocks' text and Markdown follow."""
    for block in tree.blocks:
        if block.furniture or block.type in (FORMULA, CODE, TABLE) or not block.lines:
            continue
        changed = False
        for line in block.lines:
            text = inline.get(_key(line.bbox)) if line.bbox is not None else None
            if text is not None:
                line.text = text
                changed = True
        if changed:
            block.text = join_text([ln.text for ln in block.lines])
            block.markdown = block_markdown(block)


def page_formulas(
    page, layer, limits: GlyphLimits | None = None, inline: bool = False
) -> list[FormulaRegion]:
    """Display formulas (and with `inline`, prose lines with inline formulas) of a `pypdfium2.PdfPage` whose
    text layer (`PageLines`) has been read; [] for a page whose layer is unusable. The caller holds the
    PDFium lock."""
    if layer is None or not layer.usable:
        return []
    glyphs, rules = page_glyphs(page, limits)
    return find_formulas(glyphs, rules, layer.lines, layer.width, inline)


def formula_region(value) -> FormulaRegion:
    """A `FormulaRegion`, or one from its plain-data form (`dataclasses.asdict`: a page's decision handed
    between processes, `jocr.lines.anchor.PageAnchor.from_state`)."""
    if isinstance(value, FormulaRegion):
        return value
    return FormulaRegion(**{**value, "box": tuple(value["box"])})
