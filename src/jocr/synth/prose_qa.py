"""Prose documents with exact answers: manual title pages and notes pages in English and Chinese whose facts
(author, version, date, licence, where to report bugs, what a feature requires, a default, a count) are
written inside running sentences, with question/answer pairs generated from the same source as the page
(docs/synth.md, "Asking a document").

    doc = make_prose_document(seed)              # DocContent, as jocr.synth.docqa.make_document gives
    write_docqa_dataset(out, 400, make=make_prose_document, profile="docqa-prose",
                        versions={"prose_version": PROSE_VERSION})

The invoices and forms of `jocr.synth.docqa` print every value after a label on a line of its own; real
documents more often state a fact in a sentence ("Character protrusion requires pdfTeX version 1.40 or
later."), so an answer is a span inside a run, not the run. Names, package names, versions and values are
drawn fresh for every document (a reader cannot learn them by heart), the facts' order and the filler
sentences around them vary, and so do the page's font, alignment and title block.
"""

from __future__ import annotations

import html
import random
from collections.abc import Callable
from dataclasses import dataclass

from jocr.synth.docqa import DocContent, Question, letter_page_css, letter_page_html
from jocr.synth.vocab import sentence, zh_sentence

PROSE_VERSION = 2
PROSE_KINDS = ("manual", "notes")
LANGS = ("en", "zh")

_FIRST = (
    "Anna Bruno Clara Daniel Elena Felix Greta Hugo Irene Jonas Karin Lukas Maria Nils Olga Pavel Rosa "
    "Stefan Tamara Ulrich Vera Walter Yusuf Zoe Ahmed Beatriz Chen Dmitri Emma Farid Hanna Ivan Julia Kenji"
).split()
_LAST = (
    "Albrecht Bergmann Castillo Dubois Eriksen Fontaine Gallo Hartmann Iversen Jansen Keller Lindqvist "
    "Moreau Nakamura Olsen Petrov Ramirez Sorensen Thorne Vogel Whitfield Yamada Zeller Brandt Costa Novak"
).split()
_ZH_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘"
_ZH_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉兰萍红鹏飞宇浩然清文博思远"
_SYLLABLES = (
    "tab col mark ref quill font page line list note para spac grid cite box draw math verb sym".split()
)
_SUFFIXES = ("", "x", "kit", "tools", "plus", "pkg", "2e", "s")
_ENGINES = ("pdfTeX", "LuaTeX", "XeTeX", "Python", "GNU Make", "R", "Perl", "Ghostscript")
_FEATURES = {
    "en": (
        "character protrusion",
        "font expansion",
        "colour conversion",
        "the index generator",
        "hyperlink support",
        "the bibliography backend",
        "page layout export",
        "vertical typesetting",
    ),
    "zh": ("字符突出", "字体扩展", "颜色转换", "索引生成", "超链接支持", "参考文献后端", "版面导出", "竖排"),
}
_SETTINGS = {
    "en": (
        ("line spacing", ("single spacing", "double spacing", "one-and-a-half spacing")),
        ("paper size", ("A4", "letter", "B5")),
        ("font size", ("10pt", "11pt", "12pt")),
        ("output encoding", ("UTF-8", "Latin-1", "GBK")),
        ("tab width", ("8 spaces", "4 spaces", "2 spaces")),
    ),
    "zh": (
        ("行距", ("单倍行距", "双倍行距", "一点五倍行距")),
        ("纸张大小", ("A4", "B5", "letter")),
        ("字号", ("五号", "小四", "10pt")),
        ("输出编码", ("UTF-8", "GBK", "Big5")),
        ("制表符宽度", ("8 个空格", "4 个空格", "2 个空格")),
    ),
}
_LICENCES = (
    "LaTeX Project Public License, version 1.3c or later",
    "GNU General Public License, version 2",
    "GNU General Public License, version 3 or later",
    "MIT License",
    "BSD 3-Clause License",
    "Apache License 2.0",
    "Creative Commons Attribution 4.0 International License",
)
_ENCODINGS = ("UTF-8", "GBK", "Big5", "Latin-1", "EUC-JP", "Shift-JIS", "KOI8-R", "ASCII")
_DOMAINS = ("example.org", "tug.org", "mail.example.net", "lists.example.com", "posteo.de", "163.com")
_MONTHS = "January February March April May June July August September October November December".split()
_FAMILIES = {
    "en": ("'DejaVu Serif'", "'Liberation Serif'", "'DejaVu Sans'", "'Liberation Sans'"),
    "zh": ("'Noto Serif CJK SC'", "'Noto Sans CJK SC'"),
}


def _person(rng: random.Random, lang: str) -> str:
    if lang == "zh":
        return rng.choice(_ZH_SURNAMES) + "".join(rng.sample(_ZH_GIVEN, rng.choice((1, 2))))
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def _package(rng: random.Random) -> str:
    return "".join(rng.sample(_SYLLABLES, rng.choice((1, 2)))) + rng.choice(_SUFFIXES)


def _version(rng: random.Random) -> str:
    major, minor = rng.randint(0, 4), rng.randint(0, 19)
    return rng.choice((f"{major}.{minor}{rng.choice('abcdefghk')}", f"{major}.{minor}.{rng.randint(0, 12)}"))


def _date(rng: random.Random, lang: str) -> str:
    year, month, day = rng.randint(1998, 2025), rng.randint(1, 12), rng.randint(1, 28)
    if lang == "zh":
        return rng.choice((f"{year}/{month:02d}/{day:02d}", f"{year}年{month}月{day}日"))
    return rng.choice(
        (
            f"{year}/{month:02d}/{day:02d}",
            f"{_MONTHS[month - 1]} {day}, {year}",
            f"{day} {_MONTHS[month - 1]} {year}",
        )
    )


def _email(rng: random.Random) -> str:
    user = (
        rng.choice(_FIRST).lower()
        + rng.choice(("", ".", "_"))
        + rng.choice(_LAST).lower()[: rng.randint(1, 6)]
    )
    return f"{user}@{rng.choice(_DOMAINS)}"


def _and(items: list[str], lang: str) -> str:
    if lang == "zh":
        return "、".join(items[:-1]) + " 和 " + items[-1]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _draw_requires(rng: random.Random, lang: str, pkg: str) -> dict[str, str]:
    feature, engine = rng.choice(_FEATURES[lang]), rng.choice(_ENGINES)
    version = f"{rng.randint(0, 3)}.{rng.randint(10, 99)}{rng.choice(('', 'a', 'f'))}"
    return {"feature": feature, "Feature": feature.capitalize(), "engine": engine, "version": version}


def _draw_based_on(rng: random.Random, lang: str, pkg: str) -> dict[str, str]:
    person = _person(rng, lang)
    return {"person": person, "style": rng.choice(("doublespace", "fancybox", "multicol", "tabbing"))}


def _draw_default(rng: random.Random, lang: str, pkg: str) -> dict[str, str]:
    setting, values = rng.choice(_SETTINGS[lang])
    return {"setting": setting, "value": rng.choice(values)}


def _draw_file(rng: random.Random, lang: str, pkg: str) -> dict[str, str]:
    path = rng.choice(("~/.", "/etc/", "$HOME/.config/")) + pkg + rng.choice((".cfg", "rc", ".conf", ".ini"))
    return {"path": path}


def _draw_encodings(rng: random.Random, lang: str, pkg: str) -> dict[str, str]:
    names = rng.sample(_ENCODINGS, 3)
    return {"listed": _and(names, lang), "plain": ", ".join(names)}


@dataclass(frozen=True)
class _Form:
    """How one language states a fact and asks for it: the sentence (several: one drawn after the values),
    the question and its accepted answers, as `str.format` templates over the fact's values and `pkg`."""

    sentences: tuple[str, ...]
    question: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class _Fact:
    draw: Callable[[random.Random, str, str], dict[str, str]]  # (rng, lang, pkg) -> the fact's values
    forms: dict[str, _Form]  # by language
    field: str | None = None  # the extraction field the first answer fills


_FACTS = {
    "requires": _Fact(
        _draw_requires,
        {
            "en": _Form(
                ("{Feature} requires {engine} version {version} or later.",),
                "Which {engine} version does {feature} require?",
                ("version {version} or later", "{version} or later", "{version}"),
            ),
            "zh": _Form(
                ("{feature}功能需要 {engine} {version} 或更高版本。",),
                "{feature}功能需要哪个版本的 {engine}？",
                ("{version} 或更高版本", "{version}"),
            ),
        },
    ),
    "based_on": _Fact(
        _draw_based_on,
        {
            "en": _Form(
                ("The package is based on the {style} option written by {person}.",),
                "Who wrote the {style} option that {pkg} is based on?",
                ("{person}",),
            ),
            "zh": _Form(
                ("本宏包以{person}编写的 {style} 选项为基础。",),
                "{pkg} 以谁编写的 {style} 选项为基础？",
                ("{person}",),
            ),
        },
    ),
    "count": _Fact(
        lambda rng, lang, pkg: {"n": str(rng.randint(3, 60))},
        {
            "en": _Form(
                ("In total, {pkg} provides {n} new commands.",),
                "How many new commands does {pkg} provide?",
                ("{n}",),
            ),
            "zh": _Form(
                ("{pkg} 一共提供了 {n} 个新命令。",), "{pkg} 提供了多少个新命令？", ("{n}", "{n} 个")
            ),
        },
    ),
    "default": _Fact(
        _draw_default,
        {
            "en": _Form(
                ("By default, the {setting} is {value}.",), "What is the default {setting}?", ("{value}",)
            ),
            "zh": _Form(("默认的{setting}为{value}。",), "默认的{setting}是什么？", ("{value}",)),
        },
    ),
    "licence": _Fact(
        lambda rng, lang, pkg: {"licence": rng.choice(_LICENCES)},
        {
            "en": _Form(
                ("This work may be distributed and/or modified under the conditions of the {licence}.",),
                "Under which licence may {pkg} be distributed?",
                ("{licence}", "the {licence}"),
            ),
            "zh": _Form(
                ("本宏包可以在 {licence} 的条件下发布和修改。",), "{pkg} 在什么许可证下发布？", ("{licence}",)
            ),
        },
        field="licence",
    ),
    "bugs": _Fact(
        lambda rng, lang, pkg: {"email": _email(rng)},
        {
            "en": _Form(
                ("Please report bugs to {email}.", "Bug reports should be sent to {email}."),
                "Where should bugs be reported?",
                ("{email}",),
            ),
            "zh": _Form(
                ("如发现问题，请发送邮件至 {email}。",), "发现问题应该发送邮件到哪里？", ("{email}",)
            ),
        },
        field="email",
    ),
    "released": _Fact(
        lambda rng, lang, pkg: {"year": str(rng.randint(1988, 2020))},
        {
            "en": _Form(
                ("The first version of {pkg} was released in {year}.",),
                "When was {pkg} first released?",
                ("{year}",),
            ),
            "zh": _Form(
                ("{pkg} 的第一个版本发布于 {year} 年。",),
                "{pkg} 的第一个版本是哪一年发布的？",
                ("{year}", "{year} 年"),
            ),
        },
    ),
    "maintainer": _Fact(
        lambda rng, lang, pkg: {"person": _person(rng, lang)},
        {
            "en": _Form(
                ("The package is currently maintained by {person}.",), "Who maintains {pkg}?", ("{person}",)
            ),
            "zh": _Form(("目前本宏包由{person}维护。",), "{pkg} 目前由谁维护？", ("{person}",)),
        },
    ),
    "file": _Fact(
        _draw_file,
        {
            "en": _Form(
                ("The configuration is read from the file {path}.",),
                "Which file is the configuration read from?",
                ("{path}",),
            ),
            "zh": _Form(("配置从文件 {path} 中读取。",), "配置从哪个文件中读取？", ("{path}",)),
        },
    ),
    "encodings": _Fact(
        _draw_encodings,
        {
            "en": _Form(
                ("{pkg} supports the encodings {listed}.",),
                "Which encodings does {pkg} support?",
                ("{listed}", "{plain}"),
            ),
            "zh": _Form(("{pkg} 支持 {listed} 编码。",), "{pkg} 支持哪些编码？", ("{listed}", "{plain}")),
        },
    ),
}
_FACT_KINDS = tuple(_FACTS)


def _fact(kind: str, rng: random.Random, lang: str, pkg: str) -> tuple[str, Question, tuple[str, str] | None]:
    """One fact of `kind` about package `pkg`: (the sentence printed, its question, the extraction field it
    fills and its value, or None)."""
    if kind not in _FACTS:
        raise ValueError(f"unknown fact kind {kind!r}")
    fact = _FACTS[kind]
    values = {"pkg": pkg, **fact.draw(rng, lang, pkg)}
    form = fact.forms[lang]
    sentence = form.sentences[0] if len(form.sentences) == 1 else rng.choice(form.sentences)
    answers = [a.format(**values) for a in form.answers]
    question = Question(form.question.format(**values), answers)
    return sentence.format(**values), question, (fact.field, answers[0]) if fact.field else None


def _filler(rng: random.Random, lang: str) -> str:
    return zh_sentence(rng) if lang == "zh" else sentence(rng, max_words=14, numbers=False)


def _paragraphs(rng: random.Random, lang: str, facts: list[str], count: int) -> list[str]:
    """`count` paragraphs holding every fact sentence once, in order, among filler sentences."""
    out: list[list[str]] = [[] for _ in range(count)]
    for i, fact in enumerate(facts):
        out[min(count - 1, i * count // max(1, len(facts)))].append(fact)
    sep = "" if lang == "zh" else " "
    paragraphs = []
    for sentences in out:
        for _ in range(rng.randint(2, 5)):
            sentences.insert(rng.randint(0, len(sentences)), _filler(rng, lang))
        paragraphs.append(sep.join(sentences))
    return paragraphs


_SUBJECTS = {
    "en": (
        "floating environments",
        "colour handling",
        "verbatim text",
        "line spacing",
        "tables and arrays",
        "cross-references",
        "page layout",
        "font selection",
        "bibliographies",
        "code listings",
        "margin notes",
    ),
    "zh": (
        "浮动体",
        "颜色处理",
        "抄录环境",
        "行距设置",
        "表格排版",
        "交叉引用",
        "版面设计",
        "字体选择",
        "参考文献",
    ),
}
_TAGLINES = {
    "en": (
        "An extensible toolbox for {subject}",
        "Improved {subject} for LaTeX documents",
        "Flexible support for {subject}",
        "Fine-grained control of {subject}",
        "Simple and portable {subject}",
    ),
    "zh": ("{subject}的扩展工具", "改进的{subject}支持", "灵活的{subject}接口"),
}
_AFFILIATIONS = {
    "en": ("University of Bergen", "Technical University of Delft", "CNRS - France", "Independent developer"),
    "zh": ("清华大学", "中国科学院", "北京大学数学科学学院"),
}


def _title_lines(rng: random.Random, lang: str, pkg: str) -> tuple[list[str], str | None]:
    """The title's lines (one or two) and, on half the pages, a tagline under it."""
    subject = rng.choice(_SUBJECTS[lang])
    if lang == "zh":
        lines = [rng.choice((f"{pkg} 宏包使用手册", f"{pkg} 用户指南", f"{pkg} 宏包"))]
    else:
        lines = rng.choice(
            (
                [f"The {pkg} package"],
                [f"The {pkg} Package"],
                [f"{pkg}: {rng.choice(('a user guide', 'reference manual', 'documentation'))}"],
                [f"{rng.choice(_TAGLINES['en']).format(subject=subject)}: the {pkg}", "package"],
            )
        )
    tagline = rng.choice(_TAGLINES[lang]).format(subject=subject) if rng.random() < 0.5 else None
    return lines, tagline


def _meta_rows(rng: random.Random, lang: str, names: list[str], version_text: str, date: str):
    """The author, contact, version and date lines under the title, as rows of cells: one cell a row (each
    line centred or flush), authors side by side, or a right-hand column holding the version and the date
    beside the authors (as LaTeX title pages print them)."""
    zh = lang == "zh"
    contact = [_email(rng)] if rng.random() < 0.4 else []
    if contact and rng.random() < 0.4:
        contact = [rng.choice(_AFFILIATIONS[lang])] + contact
    layout = (
        rng.choice(("lines", "lines", "side", "column"))
        if len(names) > 1
        else rng.choice(("lines", "lines", "column"))
    )
    if layout == "side":
        rows = [names] + [[c] for c in contact]
    else:
        who = _and(names, lang) if len(names) > 1 else names[0]
        if not zh and layout == "lines" and rng.random() < 0.4:
            who = f"by {who}"
        rows = [[who]] + [[c] for c in contact]
    if layout == "column":
        rows[0].append(version_text)
        if len(rows) < 2:
            rows.append([""])
        rows[1].append(date)
    elif rng.random() < 0.5:
        rows += [[version_text], [date]]
    else:
        rows.append(
            [rng.choice((f"{version_text}, {date}", f"{version_text} — {date}", f"{date} ({version_text})"))]
        )
    return rows


def _meta_html(rows: list[list[str]], centred: bool) -> str:
    """`_meta_rows` as HTML: a row of one cell is a paragraph; rows of several cells a grid whose columns
    sit apart (so the text layer gives each cell its own run)."""
    if all(len(r) == 1 for r in rows):
        return "".join(f'<p class="meta">{html.escape(r[0])}</p>' for r in rows)
    width = max(len(r) for r in rows)
    cells = "".join(f"<div>{html.escape(c)}</div>" for r in rows for c in (r + [""] * (width - len(r))))
    align = "justify-content: center;" if centred else ""
    return (
        f'<div class="meta" style="display: grid; grid-template-columns: repeat({width}, max-content);'
        f' column-gap: 60pt; row-gap: 3pt; {align} margin: 6pt 0 10pt 0;">{cells}</div>'
    )


def _title_block(rng: random.Random, lang: str, pkg: str, authors: list[str], version: str, date: str):
    """The manual's title page head (title, tagline, authors with their contact lines, version and date) as
    (html, markdown) blocks, and its three questions. Real title pages vary in exactly these ways: a name
    without "by", an e-mail or affiliation under it, authors side by side, the version and date in a column
    of their own."""
    zh = lang == "zh"
    title = _title_lines(rng, lang, pkg)
    doctor = not zh and len(authors) == 1 and rng.random() < 0.15
    names = [f"Dr. {authors[0]}"] if doctor else authors
    version_text = rng.choice(
        (f"v{version}", f"Version {version}", f"版本 v{version}")
        if zh
        else (f"v{version}", f"Version {version}", f"Release {version}", f"Version v{version}")
    )
    # the answer as printed first: "v1.2" where the page says "v1.2", else "1.2"
    printed_version = [f"v{version}", version] if "v" + version in version_text else [version, f"v{version}"]
    rows = _meta_rows(rng, lang, names, version_text, date)
    centred = rng.random() < 0.7
    heading, tagline = title
    blocks = [(f"<h1>{'<br>'.join(html.escape(t) for t in heading)}</h1>", "# " + " ".join(heading))]
    if tagline:
        blocks.append((f'<p class="meta">{html.escape(tagline)}</p>', tagline))
    blocks.append((_meta_html(rows, centred), "\n".join(" ".join(c for c in r if c) for r in rows)))
    side = len(rows[0]) > 1 and rows[0][: len(names)] == names and len(names) > 1
    printed_who = " ".join(names) if side else (_and(names, lang) if len(names) > 1 else names[0])
    joiner = "，" if zh else ", "
    who_answers = [printed_who] + [a for a in (_and(authors, lang), joiner.join(authors)) if a != printed_who]
    if doctor:
        who_answers = [names[0], authors[0]]
    if zh:
        questions = [
            Question(f"{pkg} 宏包的作者是谁？", who_answers, field="author"),
            Question(f"{pkg} 的版本号是多少？", printed_version, field="version"),
            Question("这份手册的日期是哪天？", [date], field="date"),
        ]
    else:
        ask_who = (
            f"Who are the authors of {pkg}?"
            if len(authors) > 1
            else rng.choice((f"Who wrote the {pkg} package?", f"Who is the author of {pkg}?"))
        )
        questions = [
            Question(ask_who, who_answers, field="author"),
            Question(
                rng.choice(
                    (f"Which version of {pkg} does this manual describe?", f"What is the version of {pkg}?")
                ),
                printed_version,
                field="version",
            ),
            Question(
                rng.choice(("What is the date of the manual?", "What is the date of the document?")),
                [date],
                field="date",
            ),
        ]
    return blocks, questions, centred


def make_prose_document(seed: int, kind: str | None = None, lang: str | None = None) -> DocContent:
    """The prose document for `seed` (kind and language drawn from the seed unless given): a pure function.
    A "manual" opens with a title block (title, authors, version and date) before its abstract and
    introduction; "notes" is a body page (a section heading and paragraphs)."""
    rng = random.Random(f"prose-{PROSE_VERSION}-{seed}")
    kind = kind or rng.choice(PROSE_KINDS)
    lang = lang or rng.choice(LANGS)
    if kind not in PROSE_KINDS or lang not in LANGS:
        raise ValueError(f"unknown prose document {kind!r}/{lang!r}: kinds {PROSE_KINDS}, languages {LANGS}")
    pkg = _package(rng)
    blocks: list[tuple[str, str]] = []
    centred = False
    questions: list[Question] = []
    fields: dict[str, str] = {}
    if kind == "manual":
        authors = [_person(rng, lang) for _ in range(rng.choice((1, 1, 2)))]
        version, date = _version(rng), _date(rng, lang)
        title_blocks, questions, centred = _title_block(rng, lang, pkg, authors, version, date)
        blocks += title_blocks
        fields.update(author=questions[0].answers[0], version=questions[1].answers[0], date=date)
    facts = rng.sample(_FACT_KINDS, rng.randint(3, 5))
    sentences = []
    for fact in facts:
        text, question, filled = _fact(fact, rng, lang, pkg)
        sentences.append(text)
        questions.append(question)
        if filled:
            fields[filled[0]] = filled[1]
    heads = (
        (("摘要", "1 引言"), ("说明", "2 使用方法"))
        if lang == "zh"
        else (("Abstract", "1 Introduction"), ("Overview", "2 Usage"))
    )
    head_a, head_b = rng.choice(heads)
    # a manual's title block takes a third of the page: fewer paragraphs, so every fact stays on it
    count = rng.randint(2, 3) if kind == "manual" else rng.randint(3, 5)
    paragraphs = _paragraphs(rng, lang, sentences, count)
    blocks.append((f"<h2>{html.escape(head_a)}</h2>", f"## {head_a}"))
    blocks.append((f"<p>{html.escape(paragraphs[0])}</p>", paragraphs[0]))
    blocks.append((f"<h2>{html.escape(head_b)}</h2>", f"## {head_b}"))
    for paragraph in paragraphs[1:]:
        blocks.append((f"<p>{html.escape(paragraph)}</p>", paragraph))
    body = "".join(f'<div data-block="{i}">{b[0]}</div>' for i, b in enumerate(blocks))
    css = (
        letter_page_css(lang, heading_pt=rng.choice((17, 20, 24)), heading_gap_pt=10).replace(
            "'Noto Sans CJK SC'" if lang == "zh" else "'DejaVu Sans'", rng.choice(_FAMILIES[lang])
        )
        + f"#body {{ font-size: {rng.choice((10, 10.5, 11, 12))}pt;"
        + f" line-height: {rng.choice((1.25, 1.35, 1.5))}; }}"
        + "h2 { font-size: 13pt; margin: 12pt 0 6pt 0; } p { text-align: justify; }"
        + ("h1, p.meta { text-align: center; }" if centred else "")
        + "p.meta { margin: 0 0 4pt 0; }"
    )
    document = letter_page_html(css, body)
    markdown = "\n\n".join(b[1] for b in blocks)
    return DocContent(f"prose-{kind}", lang, fields, questions, document, markdown)
