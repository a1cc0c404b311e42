"""Random block content (text, lists, tables, formulas) for a profile, from a seeded `random.Random`."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from jocr.synth import vocab
from jocr.synth.blocks import Cell, Formula, Heading, ListBlock, Paragraph, Run, Table
from jocr.synth.formulas import display_formula, inline_formula
from jocr.synth.profiles import SynthProfile

_MATH_LINKS = ("where", "with", "for", "when", "and")
_MATH_TAILS = ("holds.", "in this case.", "is assumed.", "for all samples.", "as expected.", "overall.")


@dataclass(frozen=True)
class PageContext:
    """Page-level choices that blocks must agree on."""

    profile: SynthProfile
    cjk: bool  # a Chinese page
    math: bool  # formulas allowed (then `$` amounts are not, since `$` would pair with LaTeX delimiters)


def make_heading(rng: random.Random, ctx: PageContext) -> Heading:
    level = rng.choice(ctx.profile.heading_levels)
    text = vocab.zh_title(rng) if ctx.cjk else vocab.title(rng, max_words=4 if ctx.profile.size else 6)
    return Heading(text, level=level, cjk=ctx.cjk)


def _sentence(rng: random.Random, ctx: PageContext) -> str:
    if ctx.cjk:
        return vocab.zh_sentence(rng)
    return vocab.sentence(rng, max_words=ctx.profile.sentence_words)


def make_paragraph(rng: random.Random, ctx: PageContext) -> Paragraph:
    prof = ctx.profile
    sentences = [_sentence(rng, ctx) for _ in range(rng.randint(*prof.sentences))]
    runs: list[Run] = []
    if ctx.math and rng.random() < prof.inline_math_p:
        k = rng.randrange(len(sentences))
        joiner = "" if ctx.cjk else " "
        head = joiner.join(sentences[:k] + [sentences[k].rstrip(".。")])
        link = "其中" if ctx.cjk else rng.choice(_MATH_LINKS)
        tail = "成立。" if ctx.cjk else rng.choice(_MATH_TAILS)
        runs = [("text", f"{head} {link}" if not ctx.cjk else head + link), ("math", inline_formula(rng))]
        rest = " ".join([tail] + sentences[k + 1 :]) if not ctx.cjk else tail + "".join(sentences[k + 1 :])
        runs.append(("text", rest))
    else:
        joiner = "" if ctx.cjk else " "
        runs = [("text", joiner.join(sentences))]
    return Paragraph(runs, cjk=ctx.cjk)


def make_line(rng: random.Random, ctx: PageContext) -> Paragraph:
    """cpu-lines: one short line (2-6 words, or a number-bearing phrase)."""
    choice = rng.random()
    if choice < 0.4:
        text = vocab.phrase(rng, rng.randint(3, 6))
    elif choice < 0.7:
        text = vocab.list_item(rng, max_words=5)
    elif choice < 0.85:
        text = vocab.title(rng, max_words=3, numbered=False)
    else:
        text = f"{rng.choice(vocab.RARE_WORDS)} {vocab.number(rng)}"
    return Paragraph([("text", text)])


def make_caption(rng: random.Random, ctx: PageContext, number: int) -> Paragraph:
    """A table caption ("Table 3: ..."), placed directly above its table."""
    if ctx.cjk:
        text = f"表{number} {vocab.zh_title(rng, numbered=False)}"
    else:
        text = f"Table {number}: {vocab.title(rng, max_words=4, numbered=False)}"
    return Paragraph([("text", text)], cjk=ctx.cjk, kind="caption")


def make_list(rng: random.Random, ctx: PageContext) -> ListBlock:
    prof = ctx.profile
    items: list[list[Run]] = []
    for _ in range(rng.randint(*prof.list_items)):
        if ctx.cjk:
            items.append([("text", vocab.zh_sentence(rng))])
        elif ctx.math and rng.random() < prof.inline_math_p / 2:
            items.append(
                [
                    ("text", f"{rng.choice(vocab.ADJECTIVES).capitalize()} case:"),
                    ("math", inline_formula(rng)),
                ]
            )
        else:
            items.append([("text", vocab.list_item(rng, max_words=min(8, prof.sentence_words)))])
    return ListBlock(items, ordered=rng.random() < 0.35, cjk=ctx.cjk)


def make_formula(rng: random.Random, ctx: PageContext) -> Formula:
    return Formula(display_formula(rng))


# Column kinds: (English header, Chinese header, value generator).
ValueFn = Callable[[random.Random, PageContext], str]
_COLUMNS: list[tuple[str, str, ValueFn]] = [
    ("Revenue", "收入", lambda rng, ctx: vocab.currency(rng, dollar_ok=not ctx.math)),
    ("Cost", "成本", lambda rng, ctx: vocab.currency(rng, dollar_ok=not ctx.math)),
    ("Growth", "增长率", lambda rng, ctx: vocab.number(rng, "pct")),
    ("Share", "比例", lambda rng, ctx: vocab.number(rng, "pct")),
    ("Count", "数量", lambda rng, ctx: vocab.number(rng, rng.choice(("int", "big")))),
    ("Year", "年份", lambda rng, ctx: vocab.number(rng, "year")),
    ("Mass", "质量", lambda rng, ctx: f"{vocab.number(rng, 'dec')} kg"),
    ("Score", "得分", lambda rng, ctx: vocab.number(rng, "dec")),
    ("Price", "单价", lambda rng, ctx: vocab.currency(rng, dollar_ok=not ctx.math)),
    ("Rate", "速率", lambda rng, ctx: vocab.number(rng, "dec")),
]
_ROW_LABELS_EN: list[tuple[str, Callable[[random.Random], str]]] = [
    ("Region", lambda rng: rng.choice(vocab.PLACES)),
    ("Item", lambda rng: rng.choice(vocab.NOUNS).capitalize()),
    ("Name", lambda rng: rng.choice(vocab.NAMES)),
    ("Sample", lambda rng: f"S-{rng.randint(1, 99)}"),
]


def make_table(rng: random.Random, ctx: PageContext) -> Table:
    """A table whose cell texts are all distinct (so unit tests can name a cell unambiguously)."""
    prof = ctx.profile
    n_body = rng.randint(*prof.table_rows)
    n_cols = rng.randint(*prof.table_cols)
    header = rng.random() < prof.table_header_p
    columns = rng.sample(_COLUMNS, k=min(n_cols - 1, len(_COLUMNS)))
    label_head, label_fn = rng.choice(_ROW_LABELS_EN)
    if ctx.cjk:
        label_head = "项目"
        label_fn = lambda r: r.choice(vocab.ZH_CITIES)  # noqa: E731
    used: set[str] = set()

    def unique(fn: Callable[[], str]) -> str:
        for _ in range(50):
            text = fn()
            if text not in used:
                used.add(text)
                return text
        text = f"{fn()} {len(used)}"
        used.add(text)
        return text

    rows: list[list[Cell]] = []
    spans = prof.table_span_p > 0 and rng.random() < prof.table_span_p and n_cols >= 3
    span_kind = rng.choice(("colspan", "rowspan")) if spans else ""
    if header:
        heads = [label_head] + [zh if ctx.cjk else en for en, zh, _ in columns]
        if span_kind == "colspan" and len(columns) >= 2:
            # Two header rows: the label spans both, a group title spans the first two value columns.
            group = unique(lambda: vocab.number(rng, "year"))
            top = [
                Cell(unique(lambda: heads[0]), header=True, rowspan=2),
                Cell(group, header=True, colspan=2),
            ]
            top += [Cell(unique(lambda h=h: h), header=True, rowspan=2) for h in heads[3:]]
            rows.append(top)
            rows.append([Cell(unique(lambda h=h: h), header=True) for h in heads[1:3]])
        else:
            rows.append([Cell(unique(lambda h=h: h), header=True) for h in heads])
    body: list[list[Cell]] = []
    for _ in range(n_body):
        row = [Cell(unique(lambda: label_fn(rng)))]
        row += [Cell(unique(lambda fn=fn: fn(rng, ctx))) for _, _, fn in columns]
        body.append(row)
    if span_kind == "rowspan" and n_body >= 2:
        # The first value column is shared by the first two body rows (a merged cell).
        body[0][1].rowspan = 2
        del body[1][1]
    rows.extend(body)
    return Table(rows, cjk=ctx.cjk)


MAKERS: dict[str, Callable[[random.Random, PageContext], object]] = {
    "heading": make_heading,
    "paragraph": make_paragraph,
    "list": make_list,
    "table": make_table,
    "formula": make_formula,
}
