"""Contents pages from their lines: entries with page numbers after leaders or a gap, numbers paired with
their rows on a skewed photo, levels from numbering or indentation, one nested list on the rules' path and
in an anchored answer's tree; pages that only look like contents (a table of figures, an index, a
glossary, a price list) left alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from page_fixtures import Text, page_layer

from jocr.layout.contents import contents_split, is_contents_page
from jocr.layout.geometry import body_size, source_lines
from jocr.layout.line_rules import lines_tree, tree_of_lines
from jocr.layout.render import page_markdown
from jocr.layout.request import page_text
from jocr.lines.anchor import anchor_lines
from jocr.lines.types import RAPIDOCR, Line

REPO = Path(__file__).resolve().parents[2]
RINTRO_PDF = REPO / "data/frozen-real/pdfs/pdf/rintro-p003.pdf"
RINTRO_PHOTO_LINES = REPO / "tests/data/ocr-lines/rintro-p003-photo.json"


def markdown_of(lines: list[Text]) -> str:
    layer = page_layer(lines)
    return page_markdown(lines_tree(layer.lines, layer.width, layer.height))


def split_of(lines: list[Text]):
    layer = page_layer(lines)
    items = source_lines(layer.lines)
    return contents_split(items, body_size(items))


def toc(entries, top=110, pitch=16, leaders=True, gap_x=480) -> list[Text]:
    """A contents page: (number, title, page, depth) rows under a "Contents" title; the page number after
    dot leaders on the title's line, or set apart at `gap_x`."""
    page = [Text(72, 80, "Contents", 16, "bold")]
    for k, (number, title, pg, depth) in enumerate(entries):
        y = top + pitch * k
        x = 72 + 15 * depth
        if number:
            page.append(Text(x, y, number))
            x += 30
        if leaders:
            page.append(Text(x, y, f"{title} . . . . . . . . . . . . . . {pg}"))
        else:
            page += [Text(x, y, title), Text(gap_x, y, pg)]
    return page


ENTRIES = [
    ("", "Preface", "v", 0),
    ("1", "Introduction", "1", 0),
    ("1.1", "Scope of the report", "2", 1),
    ("1.2", "Methods", "4", 1),
    ("1.2.1", "Sampling", "4", 2),
    ("2", "Results", "9", 0),
    ("2.1", "Tables and figures", "12", 1),
    ("3", "Discussion", "15", 0),
]
EXPECTED = (
    "# Contents\n\n- Preface v\n- 1 Introduction 1\n  - 1.1 Scope of the report 2\n  - 1.2 Methods 4\n"
    "    - 1.2.1 Sampling 4\n- 2 Results 9\n  - 2.1 Tables and figures 12\n- 3 Discussion 15"
)


def test_entries_after_dot_leaders_are_one_nested_list():
    assert markdown_of(toc(ENTRIES)) == EXPECTED


def test_page_numbers_set_apart_by_a_gap_are_their_entries():
    assert markdown_of(toc(ENTRIES, leaders=False)) == EXPECTED


def test_unnumbered_entries_take_their_levels_from_indentation():
    entries = [("", t, p, d) for _, t, p, d in ENTRIES]
    md = markdown_of(toc(entries, leaders=False))
    assert md.splitlines()[2:5] == ["- Preface v", "- Introduction 1", "  - Scope of the report 2"]
    assert "    - Sampling 4" in md


def test_a_title_wrapped_over_two_rows_is_one_entry():
    page = toc(ENTRIES[:3], leaders=False)
    page += [Text(117, 158, "Statistical methods and the design of"), Text(132, 170, "the field study")]
    page += [Text(480, 170, "5"), Text(102, 186, "2.1"), Text(132, 186, "Results"), Text(480, 186, "9")]
    md = markdown_of(page)
    assert "- Statistical methods and the design of the field study 5" in md
    assert "the field study\n" not in md


def ocr(x: float, y: float, text: str, height: float = 30, char: float = 15) -> Line:
    return Line(text, (x, y, x + char * len(text), y + height), height, 0, 0.95, RAPIDOCR)


@pytest.mark.parametrize("shift", [14, -48])
def test_numbers_of_a_skewed_photo_pair_with_their_own_rows(shift):
    # the right-hand column lies 14-20 px lower than the rows it belongs to (a row pitch is 30 px), or,
    # on a sheet turned the other way further, 1.6 pitches higher (physics-p1's photo): each number goes
    # to its own row, not a neighbour's; an entry whose number OCR lost keeps its title
    titles = ["Vectors and assignment", "Vector arithmetic", "Logical vectors", "Missing values",
              "Character vectors", "Index vectors", "Other types of objects"]  # fmt: skip
    pages = ["8", "9", None, "11", "11", "12", "13"]
    lines = [ocr(240, 200, "2 Simple manipulations .. 8", 40)]
    lines.append(ocr(240, 140, "Contents", 40))  # a heading above: no number slips up onto it
    for k, (title, pg) in enumerate(zip(titles, pages, strict=True)):
        y = 250 + 30 * k
        lines += [ocr(280, y, f"2.{k + 1}", 26), ocr(330, y - 4, title, 40)]
        if pg:
            lines.append(ocr(1000, y + shift + k, pg, 26))
    md = page_markdown(lines_tree(lines, 1400, 1800, unit="px", source=RAPIDOCR))
    assert md.splitlines()[md.splitlines().index("- 2 Simple manipulations 8") :] == [
        "- 2 Simple manipulations 8",
        "  - 2.1 Vectors and assignment 8",
        "  - 2.2 Vector arithmetic 9",
        "  - 2.3 Logical vectors",
        "  - 2.4 Missing values 11",
        "  - 2.5 Character vectors 11",
        "  - 2.6 Index vectors 12",
        "  - 2.7 Other types of objects 13",
    ]


def test_a_chinese_contents_page_is_a_list():
    rows = [
        ("第一章", "概述", "1", 0),
        ("1.1", "背景", "2", 1),
        ("1.2", "目标", "3", 1),
        ("第二章", "安装", "5", 0),
    ]
    lines = [ocr(200, 100, "目录", 50, 40)]
    for k, (number, title, pg, depth) in enumerate(rows):
        y = 200 + 45 * k
        lines.append(ocr(200 + 40 * depth, y, f"{number} {title}......................", 32, 30))
        lines.append(ocr(1100, y, pg, 32))
    md = page_markdown(lines_tree(lines, 1400, 1800, unit="px", source=RAPIDOCR))
    assert md.splitlines()[-4:] == ["- 第一章 概述 1", "  - 1.1 背景 2", "  - 1.2 目标 3", "- 第二章 安装 5"]


# -- pages that are not contents --------------------------------------------------------------------------


def test_a_table_of_figures_is_not_contents():
    rows = [("North", 12, 15, 20), ("South", 14, 18, 22), ("East", 16, 19, 25), ("West", 18, 21, 27)]
    page = [Text(72, 80, "Results by region", 14, "bold")]
    for k, (name, *values) in enumerate(rows):
        y = 110 + 14 * k
        page += [Text(72, y, name)] + [Text(300 + 90 * j, y, str(v)) for j, v in enumerate(values)]
    assert split_of(page) is None
    assert "<table>" in markdown_of(page)


def test_an_index_page_is_not_contents():
    words = ["abline, 12, 45", "aggregate . . . . 88", "apply, 3, 17", "array . . . . 20",
             "attach . . . . 7", "attributes . . . . 14", "axis, 60, 61", "barplot . . . . 5"]  # fmt: skip
    page = [Text(72, 80, "Index", 16, "bold")] + [Text(72, 110 + 14 * k, w) for k, w in enumerate(words)]
    assert split_of(page) is None


def test_a_glossary_is_not_contents():
    terms = ["Anchor: the page's runs given to the model", "Run: one line of the text layer",
             "Window: the runs one request reads", "Leader: dots that lead the eye to a number"]  # fmt: skip
    page = [Text(72, 80, "Glossary", 16, "bold")] + [Text(72, 110 + 14 * k, t) for k, t in enumerate(terms)]
    assert split_of(page) is None


def test_a_price_list_is_not_contents():
    items = [("Coffee", "3.50"), ("Tea", "2.80"), ("Cake", "4.20"), ("Soup", "6.00"), ("Bread", "1.90")]
    page = [Text(72, 80, "Menu", 16, "bold")]
    page += [Text(72, 110 + 14 * k, f"{a} . . . . . . . . . . {b}") for k, (a, b) in enumerate(items)]
    assert split_of(page) is None
    items = [("Coffee", "3"), ("Tea", "2"), ("Cake", "4"), ("Soup", "6"), ("Bread", "1")]  # whole prices
    page = [Text(72, 80, "Menu", 16, "bold")] + [Text(72, 110 + 14 * k, a) for k, (a, _) in enumerate(items)]
    page += [Text(480, 110 + 14 * k, b) for k, (_, b) in enumerate(items)]
    assert split_of(page) is None


# -- real pages ---------------------------------------------------------------------------------------


def rintro_layer():
    import pypdfium2 as pdfium

    from jocr.lines.textlayer import read_page

    with pdfium.PdfDocument(str(RINTRO_PDF)) as doc:
        return read_page(doc[0])


def assert_contents_list(md: str, lost_numbers: int = 0) -> None:
    """The R intro's contents: a list, each section number on its title's item, no entry a heading."""
    entries = [ln for ln in md.splitlines() if re.match(r"\s*- ", ln)]
    assert len(entries) >= 35  # 36 on the page
    assert not [ln for ln in md.splitlines() if ln.startswith("#") and ln != "# Table of Contents"][1:]
    assert "- 1.10 Executing commands from or diverting output to a file" in md
    assert "  - 2.7 Index vectors; selecting and modifying subsets of a data set 12" in md
    assert "- 5 Arrays and matrices 20" in md
    assert not re.search(r"^\s*- [0-9.]+\s*$", md, re.M)  # no number without its title
    assert ". . ." not in md and "...." not in md
    paged = [ln for ln in entries if re.search(r" [0-9]+$", ln)]
    assert len(paged) >= len(entries) - lost_numbers


def test_the_r_intro_contents_page_pdf_is_a_list():
    layer = rintro_layer()
    assert is_contents_page(layer.lines, layer.width, layer.height)
    md = page_markdown(lines_tree(layer.lines, layer.width, layer.height))
    assert_contents_list(md)
    assert md.startswith("# Table of Contents\n\n- Preface 1\n- 1 Introduction and preliminaries 2\n")


def test_the_r_intro_contents_page_photo_is_a_list():
    data = json.loads(RINTRO_PHOTO_LINES.read_text(encoding="utf-8"))
    md = page_markdown(tree_of_lines(data, "px"))
    # RapidOCR read 23 of the page's 36 page numbers, each on its own entry here; "Preface", whose number
    # it lost, stands above the first entry with one and reads as a heading
    assert_contents_list(md, lost_numbers=12)
    assert "  - 2.4 Logical vectors 10\n  - 2.5 Missing values 11\n  - 2.6 Character vectors 11" in md


def test_a_chinese_contents_page_photo_is_a_list_its_numbers_on_their_rows():
    # the page's "Contents" heading stands above the first entry: no page number slips up onto it
    data = json.loads((REPO / "tests/data/ocr-lines/eduzh-p02-photo.json").read_text(encoding="utf-8"))
    md = page_markdown(tree_of_lines(data, "px"))
    assert "- 1 Debian Edu 12 别名 Bookworm 的手册 1\n- 2 关于 Debian Edu 和 Skolelinux 1\n" in md
    assert "  - 2.1 部分历史及为何使用两个名称 1\n- 3 结构 2\n  - 3.1 网络 2\n" in md
    assert "- Contents" not in md


def test_an_anchored_answer_on_a_contents_page_gives_way_to_the_list():
    # the answer the anchored member gave in the audit: headings, numbers split from their titles
    layer = rintro_layer()
    anchor = "\n".join(anchor_lines(layer))
    answer = "\n\n".join(f"### @{n}" for n in range(2, len(layer.lines) + 1))
    md = page_text([answer], [anchor], ["stop"], lines=layer.lines)
    assert_contents_list(md.replace("\n\n", "\n"))


@pytest.mark.parametrize("name", ["rintro-p007", "amsldoc-p15", "refman-p0402", "eduzh-p07"])
def test_other_real_pages_are_not_contents(name):
    import pypdfium2 as pdfium

    from jocr.lines.textlayer import read_page

    with pdfium.PdfDocument(str(REPO / f"data/frozen-real/pdfs/pdf/{name}.pdf")) as doc:
        layer = read_page(doc[0])
    assert not is_contents_page(layer.lines, layer.width, layer.height)


def real_layer(path: str):
    import pypdfium2 as pdfium

    from jocr.lines.textlayer import read_page

    with pdfium.PdfDocument(str(REPO / path)) as doc:
        return read_page(doc[0])


@pytest.mark.parametrize(
    "path, expected",
    [
        (
            "data/frozen-real/pdfs/pdf/eduzh-p02.pdf",
            "- 2 关于 Debian Edu 和 Skolelinux 1\n  - 2.1 部分历史及为何使用两个名称 1\n- 3 结构 2\n"
            "  - 3.1 网络 2\n    - 3.1.1 缺省网络设置 2\n",
        ),
        (
            "data/frozen-real5/pdfs/pdf/zhlineskip-p001.pdf",
            "- 第 1 节 简介 1\n  - 1.1 宏包依赖 1\n  - 1.2 中西有别 2\n- 第 2 节 功能介绍 3\n",
        ),
    ],
)
def test_chinese_contents_pages_are_lists(path, expected):
    layer = real_layer(path)
    assert expected in page_markdown(lines_tree(layer.lines, layer.width, layer.height))


def test_a_page_with_contents_and_a_first_section_is_no_contents_page_but_its_contents_are_a_list():
    # physics-p1: a title, the contents, then section 1's text: the model reads the page (its prose),
    # and its answer's contents give way to the list
    layer = real_layer("data/frozen-real/pdfs/pdf/physics-p1.pdf")
    assert not is_contents_page(layer.lines, layer.width, layer.height)
    anchor = "\n".join(anchor_lines(layer))
    answer = "\n\n".join(f"@{n}" for n in range(1, len(layer.lines) + 1))
    md = page_text([answer], [anchor], ["stop"], lines=layer.lines)
    assert "- 1 Before you start 1\n\n  - 1.1 The purpose of this package 1" in md
    assert "The goal of this package is to make typesetting equations" in md
