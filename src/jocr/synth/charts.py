"""Charts and data tables as documents to ask (docs/synth.md, "Charts and tables"), in English and Chinese,
with questions whose answers are exact and a reference caption for each chart, all from one data series.

    doc = make_chart_document(seed)               # a `jocr.synth.docqa.DocContent`, kind "chart" or "table"
    write_charts_dataset("out/charts", pages=200) # `jocr synth out/charts --profile docqa-charts`

A chart is inline SVG (bar, horizontal bar, line or pie) with its title, unit, category labels and value
labels as real `<text>`, so the PDF Chromium prints has them in its text layer; a table is an HTML data table
with a header row. Every value label is printed on its mark, so "What is the value for Q3?" is a span of the
page; computed answers (the largest category, how many bars, whether A is larger than B, a difference, a
column's total) follow from the printed values. Values within a series are distinct integers, so "largest"
and "smallest" have one answer.

A chart's figure record holds the reference caption (one or two sentences built from the data), the chart
type, its categories and values, and its box in PDF points (x0, y0, x1, y1, top-left origin) so a crop can
be cut: the chart is placed at a fixed position of the page, which the box states. No caption is printed on
the page: the caption is what a reader is asked to write.
"""

from __future__ import annotations

import html
import math
import random
from dataclasses import dataclass
from typing import Any

from jocr.synth.docqa import (
    _COMPANIES,
    DocContent,
    Question,
    _q,
    letter_page_css,
    letter_page_html,
    write_docqa_dataset,
)

CHARTS_VERSION = 1
CHART_KINDS = ("chart", "table")
CHART_TYPES = ("bar", "hbar", "line", "pie")
LANGS = ("en", "zh")
PAGE_SIZE = (612, 792)  # points; the page's body starts at BODY_ORIGIN
BODY_ORIGIN = (60, 60)
CHART_TOP = 48  # the chart's top edge below the body's, in points (under the page heading)
BODY_WIDTH = 492


@dataclass(frozen=True)
class _Axis:
    """A family of categories: their names per language, the noun for one of them, and the header cell a
    table prints over them."""

    names: dict[str, list[str]]
    noun: dict[str, tuple[str, str]]  # (singular, plural) in English; (measure word + noun, same) in Chinese
    header: dict[str, str]
    ordered: bool  # a sequence (quarters, months, years): drawn as a line chart's x axis


_AXES = {
    "quarter": _Axis(
        {"en": ["Q1", "Q2", "Q3", "Q4"], "zh": ["第一季度", "第二季度", "第三季度", "第四季度"]},
        {"en": ("quarter", "quarters"), "zh": ("个季度", "个季度")},
        {"en": "Quarter", "zh": "季度"},
        True,
    ),
    "month": _Axis(
        {
            "en": ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
            "zh": [f"{m}月" for m in range(1, 13)],
        },
        {"en": ("month", "months"), "zh": ("个月", "个月")},
        {"en": "Month", "zh": "月份"},
        True,
    ),
    "year": _Axis(
        {"en": [str(y) for y in range(2017, 2027)], "zh": [f"{y}年" for y in range(2017, 2027)]},
        {"en": ("year", "years"), "zh": ("年", "年")},
        {"en": "Year", "zh": "年份"},
        True,
    ),
    "region": _Axis(
        {
            "en": ["North", "South", "East", "West", "Central", "Overseas"],
            "zh": ["华北", "华南", "华东", "华西", "华中", "海外"],
        },
        {"en": ("region", "regions"), "zh": ("个地区", "个地区")},
        {"en": "Region", "zh": "地区"},
        False,
    ),
    "product": _Axis(
        {
            "en": ["Laptops", "Tablets", "Phones", "Monitors", "Printers", "Cameras"],
            "zh": ["笔记本电脑", "平板电脑", "手机", "显示器", "打印机", "相机"],
        },
        {"en": ("product", "products"), "zh": ("种产品", "种产品")},
        {"en": "Product", "zh": "产品"},
        False,
    ),
}

# (title EN, title ZH, unit EN, unit ZH, value range, axes it is drawn over)
_TOPICS = [
    ("Revenue", "营业收入", "million USD", "百万元", (12, 480), ("quarter", "year", "region", "product")),
    ("Units sold", "销售量", "thousand units", "千台", (5, 240), ("quarter", "month", "region", "product")),
    ("Rainfall", "降雨量", "mm", "毫米", (8, 320), ("month",)),
    ("Visitors", "访客人数", "thousand", "千人次", (20, 900), ("month", "year", "region")),
    ("Energy use", "能耗", "MWh", "兆瓦时", (40, 760), ("quarter", "year", "region")),
    ("Support tickets", "客服工单", "tickets", "件", (15, 600), ("month", "quarter", "product")),
]
_UNIT_LABEL = {"en": "Unit: ", "zh": "单位："}
_CHART_NAMES = {
    "en": {"bar": "bar chart", "hbar": "horizontal bar chart", "line": "line chart", "pie": "pie chart"},
    "zh": {"bar": "柱状图", "hbar": "横向条形图", "line": "折线图", "pie": "饼图"},
}
_MARKS = {
    "en": {"bar": "bars", "hbar": "bars", "line": "points", "pie": "slices"},
    "zh": {"bar": "根柱子", "hbar": "根条形", "line": "个数据点", "pie": "个扇区"},
}
_FILLS = ["#4a6fa5", "#d1803a", "#5a9e6f", "#b5525c", "#8a6bb0", "#6b8e9e", "#c7a23a", "#777"]


@dataclass
class _Series:
    """One data series: what it measures, over which categories, with which values."""

    title: str
    unit: str
    axis: str
    categories: list[str]
    values: list[int]


def _distinct(rng: random.Random, n: int, lo: int, hi: int) -> list[int]:
    return rng.sample(range(lo, hi + 1), n)


def _shares(rng: random.Random, n: int) -> list[int]:
    """n distinct whole percentages (each at least 3) that add up to 100."""
    while True:
        cuts = sorted(rng.sample(range(1, 100), n - 1))
        shares = [b - a for a, b in zip([0, *cuts], [*cuts, 100])]
        if min(shares) >= 3 and len(set(shares)) == n:
            return shares


def _series(rng: random.Random, lang: str, chart: str | None, n_range: tuple[int, int]) -> _Series:
    """A topic, an axis it is drawn over (a sequence for a line chart) and distinct values; pie shares are
    percentages of a whole."""
    topics = [t for t in _TOPICS if t[0] != "Rainfall"] if chart == "pie" else _TOPICS  # shares of a whole
    title_en, title_zh, unit_en, unit_zh, (lo, hi), axes = rng.choice(topics)
    if chart == "line":
        axes = tuple(a for a in axes if _AXES[a].ordered) or ("month",)
    axis = rng.choice(axes)
    names = _AXES[axis].names[lang]
    n = min(rng.randint(*n_range), len(names))
    start = rng.randint(0, len(names) - n)
    categories = names[start : start + n] if _AXES[axis].ordered else rng.sample(names, n)
    company, year = rng.choice(_COMPANIES[lang]), rng.randint(2019, 2026)
    if chart == "pie":
        values, unit = _shares(rng, n), "%"
        title = (
            f"{title_en} by {_AXES[axis].noun['en'][0]}, {company}"
            if lang == "en"
            else f"{company}{title_zh}构成"
        )
    else:
        values, unit = _distinct(rng, n, lo, hi), (unit_en if lang == "en" else unit_zh)
        in_year = "" if axis == "year" else (f", {year}" if lang == "en" else f"{year}年")
        title = f"{title_en} of {company}{in_year}" if lang == "en" else f"{company}{in_year}{title_zh}"
    return _Series(title, unit, axis, categories, values)


# Drawing -------------------------------------------------------------------------------------------------
def _text(x: float, y: float, text: str, size: float = 9, anchor: str = "middle", bold: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{weight}>'
        f"{html.escape(text)}</text>"
    )


def _frame(series: _Series, lang: str, width: int) -> list[str]:
    return [
        _text(width / 2, 20, series.title, 12, bold=True),
        _text(14, 40, f"{_UNIT_LABEL[lang]}{series.unit}", 8.5, anchor="start"),
    ]


def _bars(series: _Series, width: int, height: int) -> list[str]:
    left, right, top, bottom = 40, width - 20, 60, height - 34
    n, top_value = len(series.values), max(series.values)
    step = (right - left) / n
    parts = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333" stroke-width="0.8"/>']
    for i, (name, value) in enumerate(zip(series.categories, series.values)):
        h = value / top_value * (bottom - top - 14)
        x = left + i * step + step * 0.2
        parts.append(
            f'<rect x="{x:.1f}" y="{bottom - h:.1f}" width="{step * 0.6:.1f}" height="{h:.1f}" '
            f'fill="{_FILLS[0]}"/>'
        )
        parts.append(_text(x + step * 0.3, bottom - h - 4, str(value), 8.5))
        parts.append(_text(x + step * 0.3, bottom + 14, name, 8.5))
    return parts


def _hbars(series: _Series, width: int, height: int) -> list[str]:
    left, right, top, bottom = 90, width - 50, 56, height - 14
    n, top_value = len(series.values), max(series.values)
    step = (bottom - top) / n
    parts = [f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333" stroke-width="0.8"/>']
    for i, (name, value) in enumerate(zip(series.categories, series.values)):
        w = value / top_value * (right - left)
        y = top + i * step + step * 0.2
        parts.append(
            f'<rect x="{left}" y="{y:.1f}" width="{w:.1f}" height="{step * 0.6:.1f}" fill="{_FILLS[1]}"/>'
        )
        parts.append(_text(left + w + 5, y + step * 0.3 + 3, str(value), 8.5, anchor="start"))
        parts.append(_text(left - 6, y + step * 0.3 + 3, name, 8.5, anchor="end"))
    return parts


def _line(series: _Series, width: int, height: int) -> list[str]:
    left, right, top, bottom = 40, width - 30, 66, height - 34
    n, top_value, low = len(series.values), max(series.values), min(series.values)
    span = max(1, top_value - low)
    points = [
        (left + i * (right - left) / (n - 1), bottom - 10 - (v - low) / span * (bottom - top - 20))
        for i, v in enumerate(series.values)
    ]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    parts = [
        f'<line x1="{left - 10}" y1="{bottom}" x2="{right + 10}" y2="{bottom}" '
        'stroke="#333" stroke-width="0.8"/>',
        f'<polyline points="{path}" fill="none" stroke="{_FILLS[2]}" stroke-width="1.6"/>',
    ]
    for (x, y), name, value in zip(points, series.categories, series.values):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{_FILLS[2]}"/>')
        parts.append(_text(x, y - 6, str(value), 8.5))
        parts.append(_text(x, bottom + 14, name, 8.5))
    return parts


def _pie(series: _Series, width: int, height: int) -> list[str]:
    cx, cy = width / 2, (height + 50) / 2
    r = min(width, height - 50) / 2 - 40
    parts, angle = [], -math.pi / 2
    for i, (name, value) in enumerate(zip(series.categories, series.values)):
        sweep = value / 100 * 2 * math.pi
        a0, a1, mid = angle, angle + sweep, angle + sweep / 2
        large = 1 if sweep > math.pi else 0
        x0, y0, x1, y1 = (
            cx + r * math.cos(a0),
            cy + r * math.sin(a0),
            cx + r * math.cos(a1),
            cy + r * math.sin(a1),
        )
        parts.append(
            f'<path d="M{cx:.1f},{cy:.1f} L{x0:.1f},{y0:.1f} A{r:.1f},{r:.1f} 0 {large} 1 '
            f'{x1:.1f},{y1:.1f} Z" fill="{_FILLS[i % len(_FILLS)]}" stroke="white"/>'
        )
        lx, ly = cx + (r + 14) * math.cos(mid), cy + (r + 14) * math.sin(mid)
        anchor = "start" if math.cos(mid) > 0.2 else "end" if math.cos(mid) < -0.2 else "middle"
        parts.append(_text(lx, ly - 1, name, 8.5, anchor=anchor))
        parts.append(_text(lx, ly + 10, f"{value}%", 8.5, anchor=anchor))
        angle = a1
    return parts


_DRAW = {"bar": _bars, "hbar": _hbars, "line": _line, "pie": _pie}


def chart_svg(series: _Series, chart: str, lang: str, width: int, height: int) -> str:
    """The chart as inline SVG whose user unit is the point (`width` x `height` points)."""
    parts = [*_frame(series, lang, width), *_DRAW[chart](series, width, height)]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}pt" height="{height}pt" '
        f'viewBox="0 0 {width} {height}">{"".join(parts)}</svg>'
    )


# Captions and questions ------------------------------------------------------------------------------------
def chart_caption(series: _Series, chart: str, lang: str) -> str:
    """The reference caption: what the chart shows and its extremes, in one or two sentences."""
    pairs = list(zip(series.categories, series.values))
    (hi_name, hi), (lo_name, lo) = max(pairs, key=lambda p: p[1]), min(pairs, key=lambda p: p[1])
    n, kind = len(pairs), _CHART_NAMES[lang][chart]
    if lang == "zh":
        what = f"{kind}展示了{series.title}" + ("" if chart == "pie" else f"（单位：{series.unit}）")
        if chart == "line":
            return (
                f"{what}从{pairs[0][0]}到{pairs[-1][0]}的变化。{hi_name}最高，为{hi}；{lo_name}最低，为{lo}。"
            )
        if chart == "pie":
            return f"{what}，共分{n}部分。{hi_name}占比最大，为{hi}%；{lo_name}占比最小，为{lo}%。"
        noun = _AXES[series.axis].noun["zh"][0]
        return f"{what}，共{n}{noun}。{hi_name}最高，为{hi}；{lo_name}最低，为{lo}。"
    article = "An" if kind[0] in "aeiou" else "A"
    title = series.title[:1].lower() + series.title[1:]  # "Revenue of X" reads "a bar chart of revenue of X"
    what = f"{article} {kind} of {title}" + ("" if chart == "pie" else f" ({series.unit})")
    if chart == "line":
        return (
            f"{what} from {pairs[0][0]} to {pairs[-1][0]}. It peaks at {hi} in {hi_name} and is lowest "
            f"at {lo} in {lo_name}."
        )
    if chart == "pie":
        return (
            f"{what} in {n} parts. {hi_name} has the largest share at {hi}% and {lo_name} the smallest at "
            f"{lo}%."
        )
    plural = _AXES[series.axis].noun["en"][1]
    return f"{what} across {n} {plural}. {hi_name} is the largest at {hi} and {lo_name} the smallest at {lo}."


def _yes_no(value: bool, lang: str) -> str:
    return ("Yes" if value else "No") if lang == "en" else ("是" if value else "否")


def _series_questions(rng: random.Random, series: _Series, lang: str, marks: str) -> list[Question]:
    """Questions on one series (a chart, or one column of a table): a value, the extremes, a count, a
    comparison and a difference."""
    pairs = list(zip(series.categories, series.values))
    pct = "%" if series.unit == "%" else ""
    name, value = rng.choice(pairs)
    (a, va), (b, vb) = rng.sample(pairs, 2)
    big, small = ((a, va), (b, vb)) if va > vb else ((b, vb), (a, va))
    hi, lo = max(pairs, key=lambda p: p[1])[0], min(pairs, key=lambda p: p[1])[0]
    return [
        Question(_q(lang, f"What is the value for {name}?", f"{name}的数值是多少？"), [f"{value}{pct}"]),
        Question(_q(lang, "Which category has the largest value?", "哪一项的数值最大？"), [hi], "computed"),
        Question(_q(lang, "Which category has the smallest value?", "哪一项的数值最小？"), [lo], "computed"),
        Question(
            _q(lang, f"How many {marks} are shown?", f"图中共有几{marks}？"), [str(len(pairs))], "computed"
        ),
        Question(
            _q(lang, f"Is the value for {a} larger than for {b}?", f"{a}的数值比{b}大吗？"),
            [_yes_no(va > vb, lang)],
            "computed",
        ),
        Question(
            _q(
                lang,
                f"How much larger is the value for {big[0]} than for {small[0]}?",
                f"{big[0]}比{small[0]}多多少？",
            ),
            [f"{big[1] - small[1]}{pct}"],
            "computed",
        ),
    ]


def _heading(rng: random.Random, lang: str) -> str:
    return rng.choice(
        ["Annual report", "Operations review", "Business summary", "Key figures"]
        if lang == "en"
        else ["年度报告", "经营回顾", "业务概要", "主要数据"]
    )


def _chart_document(rng: random.Random, lang: str) -> DocContent:
    chart = rng.choice(CHART_TYPES)
    series = _series(rng, lang, chart, (3, 6) if chart == "pie" else (3, 8))
    width, height = rng.choice([380, 420, 460]), rng.choice([280, 300, 330])
    left = (BODY_WIDTH - width) // 2
    heading = _heading(rng, lang)
    svg = chart_svg(series, chart, lang, width, height)
    blocks = [
        f"<h1>{html.escape(heading)}</h1>",
        f'<div class="chart" style="left:{left}pt;top:{CHART_TOP}pt;width:{width}pt;height:{height}pt">'
        f"{svg}</div>",
    ]
    x0, y0 = BODY_ORIGIN[0] + left, BODY_ORIGIN[1] + CHART_TOP
    caption = chart_caption(series, chart, lang)
    marks = _MARKS[lang][chart]
    questions = [
        Question(
            _q(lang, "What is the chart's title?", "图表的标题是什么？"),
            [series.title],
            "extractive",
            "title",
        ),
        Question(
            _q(lang, "What unit are the values given in?", "数值的单位是什么？"),
            [series.unit],
            "extractive",
            "unit",
        ),
        *_series_questions(rng, series, lang, marks),
    ]
    pairs = list(zip(series.categories, series.values))
    fields = {
        "title": series.title,
        "unit": series.unit,
        "largest": max(pairs, key=lambda p: p[1])[0],
        "smallest": min(pairs, key=lambda p: p[1])[0],
    }
    figure = {
        "type": chart,
        "caption": caption,
        "box": [x0, y0, x0 + width, y0 + height],
        "categories": series.categories,
        "values": series.values,
    }
    pct = "%" if chart == "pie" else ""
    texts = [series.title, f"{_UNIT_LABEL[lang]}{series.unit}"] + [f"{c} {v}{pct}" for c, v in pairs]
    markdown = f"# {heading}\n\n" + "\n".join(texts)
    return DocContent("chart", lang, fields, questions, _page(blocks, lang), markdown, figures=[figure])


def _table_document(rng: random.Random, lang: str) -> DocContent:
    """A data table: categories as rows, three or four periods as columns, one unit."""
    rows = _series(rng, lang, None, (3, 7))
    columns = rng.choice(["quarter", "year"])
    if rows.axis in ("quarter", "year", "month"):  # rows and columns must be different families
        regions = rng.sample(_AXES["region"].names[lang], min(len(rows.values), 6))
        rows = _Series(rows.title, rows.unit, "region", regions, rows.values[: len(regions)])
    names = _AXES[columns].names[lang]
    k = rng.randint(3, min(4, len(names)))
    start = rng.randint(0, len(names) - k)
    heads = names[start : start + k]
    lo, hi = max(1, min(rows.values) // 2), max(rows.values) * 2
    grid = [_distinct(rng, len(rows.categories), lo, hi) for _ in heads]  # grid[column][row]
    header = [_AXES[rows.axis].header[lang], *heads]
    body = [[name, *(str(grid[c][r]) for c in range(k))] for r, name in enumerate(rows.categories)]
    table = (
        "<tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in header)
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body)
    )
    heading = _heading(rng, lang)
    unit_line = f"{_UNIT_LABEL[lang]}{rows.unit}"
    blocks = [
        f"<h1>{html.escape(heading)}</h1>",
        f'<p class="caption">{html.escape(rows.title)}</p>',
        f'<p class="unit">{html.escape(unit_line)}</p>',
        f'<table class="data">{table}</table>',
    ]
    c = rng.randrange(k)
    column = _Series(rows.title, rows.unit, rows.axis, rows.categories, grid[c])
    noun = "rows" if lang == "en" else "行数据"
    asked = _series_questions(rng, column, lang, noun)
    col = heads[c]
    for q in asked:  # the column's questions name the column
        q.question = q.question.replace("?", f" in {col}?") if lang == "en" else f"{col}：{q.question}"
    asked[3] = Question(
        _q(lang, "How many data rows does the table have?", "表格共有几行数据？"),
        [str(len(rows.categories))],
        "computed",
    )
    total = Question(
        _q(lang, f"What is the total for {col}?", f"{col}的合计是多少？"), [str(sum(grid[c]))], "computed"
    )
    questions = [
        Question(
            _q(lang, "What is the table's title?", "表格的标题是什么？"), [rows.title], "extractive", "title"
        ),
        Question(
            _q(lang, "What unit are the values given in?", "数值的单位是什么？"),
            [rows.unit],
            "extractive",
            "unit",
        ),
        *asked,
        total,
    ]
    fields = {"title": rows.title, "unit": rows.unit}
    markdown = (
        f"# {heading}\n\n{rows.title}\n\n{unit_line}\n\n<table>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in [header, *body])
        + "</table>"
    )
    items = [dict(zip(header, row)) for row in body]
    return DocContent("table", lang, fields, questions, _page(blocks, lang), markdown, items)


def _page(blocks: list[str], lang: str) -> str:
    """The blocks on a US-letter page as `jocr.synth.vector.VectorRenderer.print_page` expects (`data-block`
    inside `#body`); a chart sits at its fixed position (absolute, inside the body)."""
    body = "".join(f'<div data-block="{i}">{b}</div>' for i, b in enumerate(blocks))
    family = "'Noto Sans CJK SC'" if lang == "zh" else "'DejaVu Sans'"
    css = (
        letter_page_css(lang, heading_pt=18, heading_gap_pt=12)
        + "div.chart { position: absolute; } div.chart svg { display: block; }"
        f"svg text {{ font-family: {family}; fill: #111; }}"
        "p.caption { font-weight: bold; } p.unit { font-size: 9pt; }"
        "table.data { border-collapse: collapse; margin: 8pt 0; }"
        "table.data td, table.data th { border: 0.5pt solid #333; padding: 3pt 8pt; text-align: right; }"
        "table.data td:first-child, table.data th:first-child { text-align: left; }"
    )
    return letter_page_html(css, body)


_MAKERS = {"chart": _chart_document, "table": _table_document}


def make_chart_document(seed: int, kind: str | None = None, lang: str | None = None) -> DocContent:
    """The chart or table document for `seed` (kind and language drawn from the seed unless given): a pure
    function, independent of `jocr.synth.docqa.make_document`'s draws."""
    rng = random.Random(f"docqa-charts-{CHARTS_VERSION}-{seed}")
    kind = kind or rng.choices(CHART_KINDS, weights=(2, 1))[0]  # charts twice as often: they carry captions
    lang = lang or rng.choice(LANGS)
    if kind not in _MAKERS or lang not in LANGS:
        raise ValueError(
            f"unknown chart document kind/language {kind!r}/{lang!r}: kinds {CHART_KINDS}, languages {LANGS}"
        )
    return _MAKERS[kind](rng, lang)


def write_charts_dataset(
    outdir, pages: int, seed: int = 0, split: str = "train", dpi: int = 150, copies: bool = True
) -> dict[str, Any]:
    """`jocr.synth.docqa.write_docqa_dataset` for chart and table documents (`--profile docqa-charts`): the
    same files and `docqa_<split>.jsonl` records, a chart's with its `figures`."""
    return write_docqa_dataset(
        outdir,
        pages,
        seed,
        split,
        dpi,
        make=make_chart_document,
        profile="docqa-charts",
        versions={"charts_version": CHARTS_VERSION},
        copies=copies,
    )
