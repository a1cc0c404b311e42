"""Glyphs and rules of one formula -> LaTeX (docs/layout.md, "Formulas").

The reader works on geometry only, as a typesetter left it:

- rules, widest first: a rule whose left end meets a radical sign is that radical's overbar (`\\sqrt`, an
  index set small above the sign's left: `\\sqrt[n]`); any other rule with glyphs above and below it is a
  fraction bar (`\\frac`), with glyphs only below an `\\overline`, only above an `\\underline`. What lies
  above/below is read recursively with the rules inside it;
- big operators (∑ ∏ ∫ ⋃ ...) and limit words (lim, max, min, sup, inf) take the glyphs stacked above and
  below them as limits;
- accents (ˆ ˜ ¯ ˙ ¨ ˇ ⃗) over one glyph become `\\hat{..}`, `\\tilde{..}`, ...;
- what is left is one row: its main size and baseline are those of its largest glyphs; a smaller glyph
  raised above the baseline is a superscript, lowered a subscript, and a run of them (read recursively, so a
  script's own scripts are found) attaches to the glyph before it;
- runs of upright letters that spell an operator name become `\\sin`, `\\log`, ...; other upright words
  `\\mathrm{..}`; characters map to LaTeX commands (`jocr.checks.latex_symbols`).

The output is written in one spelling per construct (braced scripts and arguments, `\\frac`, `\\sqrt`;
`\\left`/`\\right` only around a pair of delimiters drawn taller than the row, as the page sizes them), the
form `jocr.checks.formula.normalise_latex` compares (it drops `\\left`/`\\right`). Work is bounded: at most
`MAX_GLYPHS` glyphs and `MAX_DEPTH` levels of nesting; beyond them the glyphs are read as one flat row.
"""

from __future__ import annotations

import re
import statistics
import unicodedata

from jocr.checks.latex_symbols import (
    BIG_OPERATORS,
    DELIMITERS,
    LIMIT_WORDS,
    OPERATOR_NAMES,
    char_latex,
    is_upright_font,
)
from jocr.layout.formula_glyphs import Glyph, Rule
from jocr.layout.formula_items import (
    BOLD_FONT,
    Item,
    accents,
    dot_commands,
    main_size,
    merged_pieces,
    negations,
    union_box,
)

MAX_GLYPHS = 3000
MAX_DEPTH = 12
SCRIPT_SIZE = 0.88  # a glyph smaller than this share of the row's main size may be a script
SCRIPT_SHIFT = 0.12  # ... when its baseline is this many main sizes off the row's baseline


def glyphs_latex(glyphs: list[Glyph], rules: list[Rule]) -> str:
    """The LaTeX of the formula these glyphs and rules draw ("" for none); rows stacked one above the other
    (an `align` or `gather` display) as a `gathered` environment."""
    rows = glyph_rows(glyphs, rules)
    if len(rows) == 1:
        return rows[0][0]
    return "\\begin{gathered}" + " \\\\ ".join(latex for latex, _ in rows) + "\\end{gathered}" if rows else ""


def glyph_rows(glyphs: list[Glyph], rules: list[Rule]) -> list[tuple[str, tuple[float, float, float, float]]]:
    """The formula's rows, top to bottom, as (LaTeX, box): items (glyphs, fractions, radicals, operators with
    their limits) whose boxes overlap vertically are one row."""
    items = [_glyph_item(g) for g in glyphs if g.text.strip()]
    if not items:
        return []
    if len(items) > MAX_GLYPHS:
        items = sorted(items, key=lambda it: it.box[0])
        return [(dot_commands(_join([it.latex for it in items])), union_box(items))]
    items = merged_pieces(items)
    items = _structures(items, [r.box for r in rules], 0)
    items = negations(accents(items))
    items = _words(items)
    items = _limits(items, 0)
    items = _matrices(items, 0)
    out = []
    for band in _bands(items):
        latex = dot_commands(_row(band, 0))
        if latex:
            out.append((latex, union_box(band)))
    return out


def _bands(items: list[Item]) -> list[list[Item]]:
    """Items grouped into rows by vertical overlap (or a gap under a sixth of an em), top to bottom; a row of
    script-size items only (a superscript above a letter without ascender) joins the row nearest to it."""
    bands: list[list[Item]] = []
    bottom = 0.0
    for it in sorted(items, key=lambda it: it.box[1]):
        if bands and it.box[1] < bottom - 0.05 * it.size:
            bands[-1].append(it)
            bottom = max(bottom, it.box[3])
        else:
            bands.append([it])
            bottom = it.box[3]
    if len(bands) < 2:
        return bands
    size = main_size(items)
    k = 0
    while k < len(bands) and len(bands) > 1:
        if max(it.size for it in bands[k]) >= SCRIPT_SIZE * size:
            k += 1
            continue
        band = bands.pop(k)
        top, low = union_box(band)[1], union_box(band)[3]
        above = union_box(bands[k - 1])[3] if k > 0 else None
        below = union_box(bands[k])[1] if k < len(bands) else None
        if below is None or (above is not None and top - above <= below - low):
            bands[k - 1].extend(band)
        else:
            bands[k].extend(band)
    return bands


def _glyph_item(g: Glyph) -> Item:
    text = g.text
    upright = is_upright_font(g.font)
    bold = BOLD_FONT.search(g.font) is not None
    if len(g.raw) == 1 and (0x1D400 <= ord(g.raw) < 0x1D800 or g.raw == "ℎ"):
        # Unicode math alphanumerics (unicode-math fonts) say their own style: 𝑥 is italic, 𝐱 bold
        name = unicodedata.name(g.raw, "")
        upright = "ITALIC" not in name and g.raw != "ℎ"
        bold = "BOLD" in name
    if len(text) == 1 and text.isascii() and text.isalpha():
        for pattern, command in _LETTER_FONTS:
            if pattern.match(g.font) and (text.isupper() or command == "\\mathfrak"):
                return Item(f"{command}{{{text}}}", g.box, g.baseline, g.size, "glyph", text, False, bold)
    return Item(char_latex(text), g.box, g.baseline, g.size, "glyph", text, upright, bold)


# Fonts whose letters are a math alphabet: TeX's symbol fonts set capitals calligraphic, AMS's MSBM
# blackboard bold, EUFM Fraktur, RSFS script.
_LETTER_FONTS = (
    (re.compile(r"^(?:cm|lm)b?sy[0-9]", re.I), "\\mathcal"),
    (re.compile(r"^msbm[0-9]", re.I), "\\mathbb"),
    (re.compile(r"^eufm[0-9]|^eufb[0-9]", re.I), "\\mathfrak"),
    (re.compile(r"^rsfs[0-9]", re.I), "\\mathscr"),
)


def _read(items: list[Item], rules: list, depth: int) -> str:
    if not items:
        return ""
    if depth > MAX_DEPTH:
        return _join([it.latex for it in sorted(items, key=lambda it: it.box[0])])
    items = _structures(items, rules, depth)
    items = negations(accents(items))
    items = _words(items)
    items = _limits(items, depth)
    items = _matrices(items, depth)
    return _row(items, depth)


def _inside(box, rule, pad: float, vpad: float | None = None) -> bool:
    """Whether a rule lies within a box grown by `pad` (a radical's overbar sits just above its sign), and
    by `vpad` above and below where given."""
    vpad = pad if vpad is None else vpad
    return (
        rule[0] >= box[0] - pad
        and rule[2] <= box[2] + pad
        and rule[1] >= box[1] - vpad
        and rule[3] <= box[3] + vpad
    )


def _structures(items: list[Item], rules: list, depth: int) -> list[Item]:
    """Radicals and fractions, outermost (widest rule) first."""
    rules = sorted(rules, key=lambda r: -(r[2] - r[0]))
    deferred: set[tuple] = set()
    while rules:
        rule = rules.pop(0)
        size = main_size(items)
        ry = (rule[1] + rule[3]) / 2
        radical = None
        for it in items:
            if (
                it.text == "√"
                and abs(it.box[2] - rule[0]) < 0.6 * size
                and it.box[1] - 0.6 * size <= ry <= it.box[1] + 0.6 * size
            ):
                radical = it
                break
        span = [it for it in items if it is not radical and rule[0] - 0.5 <= it.cx <= rule[2] + 0.5]
        if radical is not None:
            under = [it for it in span if it.cy > ry and it.box[1] < radical.box[3] + 0.2 * size]
            index = [
                it
                for it in items
                if it is not radical
                and it not in under
                and it.size < 0.85 * radical.size
                and radical.box[0] - size <= it.cx <= radical.box[0] + 0.6 * (radical.box[2] - radical.box[0])
                and it.box[3] <= radical.cy
            ]
            inner = [r for r in rules if under and _inside(union_box(under), r, 0.3 * size)]
            rules = [r for r in rules if r not in inner]
            body = _read(under, inner, depth + 1)
            root = _read(index, [], depth + 1) if index else ""
            latex = f"\\sqrt[{root}]{{{body}}}" if root else f"\\sqrt{{{body}}}"
            members = [radical, *under, *index]
            box = union_box(members + [Item("", (rule[0], rule[1], rule[2], rule[3]), 0, 0)])
            base = statistics.median([it.baseline for it in under]) if under else radical.baseline
            items = _without(items, members)
            own = max((it.size for it in under), default=radical.size)
            items.append(Item(latex, box, base, own, "atom"))
            continue
        above = _stack(span, ry, size, up=True, rules=rules)
        below = _stack(span, ry, size, up=False, rules=rules)
        if not above and not below:
            continue
        later = _bar_under_overline(rule, above, below, rules, deferred)
        if later is not None:
            # an overline over a numerator can be as wide as its fraction's bar: read the bar first
            deferred.add(tuple(rule))
            rules.insert(later + 1, rule)
            continue
        # an overline over a numerator clears its letters' x-height by more than 0.3 em
        inner_up = [
            r for r in rules if above and r[3] <= ry and _inside(union_box(above), r, 0.3 * size, 0.6 * size)
        ]
        inner_down = [
            r for r in rules if below and r[1] >= ry and _inside(union_box(below), r, 0.3 * size, 0.6 * size)
        ]
        rules = [r for r in rules if r not in inner_up and r not in inner_down]
        num = _read(above, inner_up, depth + 1)
        den = _read(below, inner_down, depth + 1)
        if above and below:
            latex = f"\\frac{{{num}}}{{{den}}}"
        elif below:
            latex = f"\\overline{{{den}}}"
        else:
            latex = f"\\underline{{{num}}}"
        members = above + below
        box = union_box(members + [Item("", tuple(rule), 0, 0)])
        # a fraction sits on the row's math axis: its baseline is below the bar by about a quarter em
        base = ry + 0.25 * size if above and below else statistics.median(it.baseline for it in members)
        items = _without(items, members)
        items.append(Item(latex, box, base, max(it.size for it in members), "atom"))
    return items


def _bar_under_overline(rule, above: list, below: list, rules: list, deferred: set) -> int | None:
    """The index in `rules` of a fraction bar that an overline candidate (glyphs below `rule` only) would
    swallow: a rule at least 0.85 of its width under the glyphs just below it. None when there is none."""
    if above or not below or tuple(rule) in deferred:
        return None
    width = rule[2] - rule[0]
    top = min(it.box[1] for it in below)
    for k, r in enumerate(rules):
        within = rule[0] - 2 <= r[0] and r[2] <= rule[2] + 2 + 0.15 * width
        if within and r[2] - r[0] >= 0.85 * width and r[1] > top:
            return k
    return None


def _without(items: list[Item], members: list[Item]) -> list[Item]:
    gone = {id(m) for m in members}
    return [it for it in items if id(it) not in gone]


def _stack(span: list[Item], ry: float, size: float, up: bool, rules: list = ()) -> list[Item]:
    """The glyphs above (`up`) or below a rule: those within 0.7 em of it, then those overlapping them, and
    past another rule met on the way (a nested fraction) those within 0.7 em of that rule, grown outwards.
    Items that only touch are not taken: the next row of a display, or a fraction set just above."""
    side = [it for it in span if (it.cy < ry if up else it.cy > ry)]

    def gap(it: Item, edge: float) -> float:
        return (edge - it.box[3]) if up else (it.box[1] - edge)

    chosen = [it for it in side if gap(it, ry) < 0.7 * size]
    if not chosen:
        return []
    taken = {id(it) for it in chosen}
    x0, x1 = min(it.box[0] for it in span), max(it.box[2] for it in span)
    inner = [r for r in rules if x0 <= (r[0] + r[2]) / 2 <= x1 and ((r[3] <= ry) if up else (r[1] >= ry))]
    passed: set[int] = set()
    changed = True
    while changed:
        changed = False
        edge = min(it.box[1] for it in chosen) if up else max(it.box[3] for it in chosen)
        for k, r in enumerate(inner):  # a rule within the stack reaches 0.7 em past itself
            ry2 = (r[1] + r[3]) / 2
            if k not in passed and (ry2 >= edge - 0.2 * size if up else ry2 <= edge + 0.2 * size):
                passed.add(k)
                edge = min(edge, ry2) if up else max(edge, ry2)
                extra = [it for it in side if id(it) not in taken and gap(it, ry2) < 0.7 * size]
                if extra:
                    chosen += extra
                    taken.update(id(it) for it in extra)
                    changed = True
        for it in side:
            if id(it) not in taken and gap(it, edge) < -0.05 * size:
                chosen.append(it)
                taken.add(id(it))
                changed = True
    return chosen


def _words(items: list[Item]) -> list[Item]:
    """Runs of upright letters on one baseline: operator names (\\sin, \\lim) or `\\mathrm{word}`."""

    def is_letter(it: Item) -> bool:
        return (
            it.kind == "glyph"
            and it.upright
            and len(it.text) == 1
            and it.text.isascii()
            and it.text.isalpha()
        )

    out: list[Item] = [it for it in items if not is_letter(it)]
    runs: list[list[Item]] = []
    for it in sorted((it for it in items if is_letter(it)), key=lambda it: it.box[0]):
        for run in runs:
            last = run[-1]
            if (
                abs(it.baseline - last.baseline) <= 0.1 * it.size
                and -0.1 * it.size <= it.box[0] - last.box[2] <= 0.25 * it.size
            ):
                run.append(it)
                break
        else:
            runs.append([it])
    for run in runs:
        word = "".join(it.text for it in run)
        face = "\\mathbf" if all(it.bold for it in run) else "\\mathrm"
        latex = f"\\{word}" if word in OPERATOR_NAMES else f"{face}{{{word}}}"
        out.append(Item(latex, union_box(run), run[0].baseline, run[0].size, "word", word))
    return out


def _limits(items: list[Item], depth: int) -> list[Item]:
    """Big operators and limit words take the items stacked above and below them."""
    out = list(items)
    ops = [
        it
        for it in items
        if (it.kind == "glyph" and it.text in BIG_OPERATORS) or (it.kind == "word" and it.text in LIMIT_WORDS)
    ]
    for op in sorted(ops, key=lambda it: -(it.box[3] - it.box[1])):
        if id(op) not in {id(it) for it in out}:
            continue
        w = op.box[2] - op.box[0]
        h = op.box[3] - op.box[1]
        near = [
            it for it in out
            if it is not op
            and op.box[0] - 0.35 * w <= it.cx <= op.box[2] + 0.35 * w
            and it.size < op.size * 0.95 + 0.01
        ]  # fmt: skip
        if op.kind == "word":  # a limit under "lim" is often wider than the word
            near = [
                it for it in out
                if it is not op
                and op.box[0] - 1.0 * w <= it.cx <= op.box[2] + 1.0 * w
                and it.size < op.size * 0.95
            ]  # fmt: skip
        # a limit wider than its operator reaches under the next one: each goes to the nearest operator
        near = [it for it in near if min(ops, key=lambda o: abs(o.cx - it.cx)) is op]
        upper = [
            it for it in near if it.box[3] <= op.box[1] + 0.2 * h and op.box[1] - it.box[3] < 1.2 * op.size
        ]
        lower = [
            it for it in near if it.box[1] >= op.box[3] - 0.2 * h and it.box[1] - op.box[3] < 1.2 * op.size
        ]
        upper = _grown_limit(upper, out, op)
        lower = _grown_limit(lower, out, op)
        if not upper and not lower:
            op.kind = "op"
            continue
        latex = op.latex
        if lower:
            latex += f"_{{{_read(lower, [], depth + 1)}}}"
        if upper:
            latex += f"^{{{_read(upper, [], depth + 1)}}}"
        members = [op, *upper, *lower]
        out = _without(out, members)
        out.append(Item(latex, union_box(members), op.baseline, op.size, "op"))
    return out


_OPENERS = {"(": ")", "[": "]", "|": "|", "\\{": "\\}", "\\|": "\\|"}
_MATRIX_ENV = {"(": "pmatrix", "[": "bmatrix", "|": "vmatrix", "\\{": "Bmatrix", "\\|": "Vmatrix"}


def _matrices(items: list[Item], depth: int) -> list[Item]:
    """Rows and columns between a tall opening delimiter and its closing one (`pmatrix`, `bmatrix`, ...), or
    right of a tall brace without one (`cases`)."""
    size = main_size(items)
    tall = sorted(
        (
            it
            for it in items
            if it.text in ("(", "[", "|", "{", "\\{", "‖") and it.box[3] - it.box[1] > 2.2 * size
        ),
        key=lambda it: it.box[0],
    )
    for opener in tall:
        if opener.latex not in _OPENERS or id(opener) not in {id(it) for it in items}:
            continue
        closing = [
            it for it in items
            if it is not opener and it.latex == _OPENERS[opener.latex] and it.box[0] > opener.box[2]
            and abs(it.box[1] - opener.box[1]) < 0.5 * size and abs(it.box[3] - opener.box[3]) < 0.5 * size
        ]  # fmt: skip
        closer = min(closing, key=lambda it: it.box[0]) if closing else None
        if closer is None and opener.latex != "\\{":
            continue
        right = closer.box[0] if closer is not None else float("inf")
        inner = [
            it for it in items
            if it is not opener and it is not closer and opener.box[2] - 0.1 * size <= it.cx < right
            and opener.box[1] - 0.2 * size <= it.cy <= opener.box[3] + 0.2 * size
        ]  # fmt: skip
        rows = _bands(inner)
        if len(rows) < 2:
            continue
        # the row with the most columns sets them (a row of dots across all columns would merge them)
        columns = max((_columns(row, size) for row in rows), key=len)
        centres = [(lo + hi) / 2 for lo, hi in columns]

        def cell(it: Item, columns=columns, centres=centres) -> int:
            for k, (lo, hi) in enumerate(columns):
                if lo <= it.cx <= hi:
                    return k
            return min(range(len(centres)), key=lambda k: abs(centres[k] - it.cx))

        body = " \\\\ ".join(
            " & ".join(_read([it for it in row if cell(it) == k], [], depth + 1) for k in range(len(columns)))
            for row in sorted(rows, key=lambda r: union_box(r)[1])
        )
        env = _MATRIX_ENV[opener.latex] if closer is not None else "cases"
        members = [opener, *inner] + ([closer] if closer is not None else [])
        box = union_box(members)
        items = _without(items, members)
        if env == "pmatrix" and len(columns) == 1 and len(rows) == 2:  # two stacked in parentheses: \binom
            top, bottom = sorted(rows, key=lambda r: union_box(r)[1])
            latex = f"\\binom{{{_read(top, [], depth + 1)}}}{{{_read(bottom, [], depth + 1)}}}"
        else:
            latex = f"\\begin{{{env}}}{body}\\end{{{env}}}"
        items.append(Item(latex, box, opener.baseline, size, "atom"))
    return items


def _columns(items: list[Item], size: float) -> list[tuple[float, float]]:
    """Column x-ranges: item extents merged where they overlap or nearly touch (a gap under 0.6 em; TeX sets
    matrix columns 1 em apart)."""
    spans = sorted((it.box[0], it.box[2]) for it in items)
    out: list[list[float]] = []
    for x0, x1 in spans:
        if out and x0 <= out[-1][1] + 0.6 * size:
            out[-1][1] = max(out[-1][1], x1)
        else:
            out.append([x0, x1])
    return [(lo - 0.1, hi + 0.1) for lo, hi in out]


def _grown_limit(limit: list[Item], items: list[Item], op: Item) -> list[Item]:
    """A limit row widened by the small items on its baseline that touch it (the ends of a wide limit)."""
    if not limit:
        return limit
    limit = list(limit)
    base = statistics.median(it.baseline for it in limit)
    limit_size = max(it.size for it in limit)
    taken = {id(it) for it in limit}
    grown = True
    while grown:
        grown = False
        box = union_box(limit)
        for it in items:
            if it is op or id(it) in taken or it.size >= op.size * 0.95:
                continue
            # on the limit's baseline, or a script of its last glyph (the `i` of `Rs=I_i` under a sum)
            on_row = abs(it.baseline - base) <= 0.15 * it.size
            script = (
                it.size < SCRIPT_SIZE * limit_size
                and abs(it.baseline - base) <= 0.6 * limit_size
                and it.box[1] < box[3]
                and box[1] < it.box[3]
            )
            if (
                (on_row or script)
                and box[0] - 0.4 * it.size <= it.box[2]
                and it.box[0] <= box[2] + 0.4 * it.size
            ):
                limit.append(it)
                taken.add(id(it))
                grown = True
    return limit


def _is_script_candidate(it: Item, size: float, base: float) -> int:
    """+1 superscript, -1 subscript, 0 on the row."""
    if it.kind in ("op",) or it.text in DELIMITERS and it.size >= 0.85 * size:
        return 0
    shift = base - it.baseline
    small = it.size < SCRIPT_SIZE * size
    if small and abs(shift) > SCRIPT_SHIFT * size or abs(shift) > 0.4 * size and it.kind == "glyph":
        return 1 if shift > 0 else -1
    return 0


def _row(items: list[Item], depth: int) -> str:
    if not items:
        return ""
    items = sorted(items, key=lambda it: (it.box[0], it.box[1]))
    size = main_size(items)
    mains = [
        it.baseline for it in items
        if it.kind in ("glyph", "word") and it.size >= 0.88 * size and it.text not in DELIMITERS
    ]  # fmt: skip
    if not mains:
        mains = [it.baseline for it in items]
    base = statistics.median(mains)
    roles = [_is_script_candidate(it, size, base) for it in items]
    for k in range(1, len(items)):
        # a small glyph on the row's baseline right after a subscript is that subscript's own superscript
        # (the prime of `\lambda_{g'}` sits on the row's baseline, raised over the subscript's)
        it, before = items[k], items[k - 1]
        if (
            roles[k] == 0
            and roles[k - 1] < 0
            and it.kind == "glyph"
            and it.size < SCRIPT_SIZE * size
            and it.box[0] - before.box[2] < 0.3 * it.size
            and before.baseline - it.baseline > SCRIPT_SHIFT * before.size
        ):
            roles[k] = -1
    fences = _fences(items, roles, size)
    parts: list[str] = []
    i = 0
    while i < len(items):
        if roles[i] == 0:
            parts.append(fences.get(i, "") + items[i].latex)
            i += 1
            continue
        j = i
        while j < len(items) and roles[j] != 0:
            j += 1
        sups = [it for it, r in zip(items[i:j], roles[i:j]) if r > 0]
        subs = [it for it, r in zip(items[i:j], roles[i:j]) if r < 0]
        script = ""
        if subs:
            script += f"_{{{_read(subs, [], depth + 1)}}}"
        if sups:
            raised = _read(sups, [], depth + 1)
            if raised and set(raised) == {"'"}:  # a raised prime: "^{'}" would be a prime on an empty base
                raised = "\\prime" * len(raised)
            script += f"^{{{raised}}}"
        if not parts or (i > 0 and items[i - 1].kind == "op" and _doubled(items[i - 1].latex, subs, sups)):
            parts.append("{}")  # a base of its own: a script after an operator's limit is not a double one
        parts.append(script)
        i = j
    return _join(parts)


def _doubled(latex: str, subs: list, sups: list) -> bool:
    """Whether scripts would repeat one `latex` already has at its outer level (a lower limit then a
    subscript), which LaTeX rejects as a double script."""
    depth, marks = 0, set()
    for ch in latex:
        depth += (ch == "{") - (ch == "}")
        if depth == 0 and ch in "_^":
            marks.add(ch)
    return bool(subs and "_" in marks or sups and "^" in marks)


_FENCE_PAIRS = {"(": ")", "[": "]", "\\{": "\\}", "\\langle": "\\rangle", "\\lfloor": "\\rfloor",
                "\\lceil": "\\rceil", "|": "|", "\\|": "\\|"}  # fmt: skip
FENCE_HEIGHT = 1.5  # a delimiter taller than this many main sizes was sized to what it encloses


def _fences(items: list[Item], roles: list[int], size: float) -> dict[int, str]:
    """Tall delimiters of a row that pair up (an opener and the first closer of its kind and height after
    it): `\\left` / `\\right` by item index, so the LaTeX draws them at the height the page does."""
    marks: dict[int, str] = {}
    stack: list[int] = []
    for i, it in enumerate(items):
        height = it.box[3] - it.box[1]
        if roles[i] != 0 or it.kind != "glyph" or height < FENCE_HEIGHT * size:
            continue
        top = items[stack[-1]] if stack else None
        if (
            top is not None
            and _FENCE_PAIRS.get(top.latex) == it.latex
            and abs((top.box[3] - top.box[1]) - height) <= 0.25 * height
        ):
            marks[stack.pop()] = "\\left"
            marks[i] = "\\right"
        elif it.latex in _FENCE_PAIRS:
            stack.append(i)
    return marks


def _join(parts: list[str]) -> str:
    """Concatenates LaTeX pieces, with a space only where a command would otherwise run into a letter."""
    out = ""
    for part in parts:
        if not part:
            continue
        if out and part[0].isalpha() and _ends_with_command(out):
            out += " "
        out += part
    return out


_TRAILING_COMMAND = re.compile(r"\\[A-Za-z]+$")


def _ends_with_command(text: str) -> bool:
    """Whether `text` ends in a control word (only its last characters are looked at: commands are short)."""
    return _TRAILING_COMMAND.search(text[-40:]) is not None
