"""Page furniture from the anchors' run positions: headers, footers and page numbers set apart at the page's
edges go; a body that reaches the edge, and a title below the top band, stay."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
import pytest

from jocr.layout.furniture import furniture_runs
from jocr.layout.request import page_text
from jocr.lines.anchor import build_windows
from jocr.lines.references import anchor_runs
from jocr.lines.textlayer import read_page
from jocr.tokenizer import Tokenizer

DATA = Path(__file__).parents[1] / "documents" / "data" / "olmocr-bench"
MODELS = Path(__file__).parents[2] / "models"


def anchor(*runs: tuple[int, str]) -> str:
    """An anchor of runs at grid heights `y` (x = 100), numbered in the order given."""
    return "\n".join(["page 600x800", *(f"@{i} 100,{y} {text}" for i, (y, text) in enumerate(runs, 1))])


BODY = [(100 + 20 * i, f"body line {i}") for i in range(30)]  # pitch 20, from 100 down to 680


def dropped(anchors: list[str]) -> list[list[str]]:
    drops = furniture_runs(anchors)
    return [[anchor_runs(a)[n] for n in sorted(d)] for a, d in zip(anchors, drops, strict=True)]


def test_header_footer_and_page_number_set_apart_go():
    page = anchor((8, "Journal of Things"), (22, "Vol. 3"), *BODY, (950, "Published by Someone"), (975, "12"))
    assert dropped([page]) == [["Journal of Things", "Vol. 3", "Published by Someone", "12"]]


def test_edge_runs_close_to_the_body_stay():
    # the body starts inside the top band and ends inside the bottom one, one pitch apart: nothing goes
    page = anchor((30, "first line"), *[(50 + 20 * i, f"line {i}") for i in range(47)])
    assert page_runs_kept(page) == 48
    # a title at 68 (mathfuncs.pdf of the olmOCR-Bench sample) is below the top band: it stays
    assert dropped([anchor((68, "The 20 Most Important Equations"), *BODY)]) == [[]]
    # lines one pitch apart down into the bottom band: the body's last lines, not a footer
    long_body = [(100 + 20 * i, f"line {i}") for i in range(42)]  # down to 920
    assert dropped([anchor(*long_body, (940, "last words"), (960, "signature"))]) == [[]]


def test_a_lone_page_number_at_the_edge_goes_however_close():
    # a slide: its footer line well up from the edge, the page number in the corner below it
    slide = [(240 + 49 * i, f"slide line {i}") for i in range(8)]  # pitch 49, down to 583
    page = anchor(*slide, (885, "NETS 2015"), (960, "1"))
    assert dropped([page]) == [["1"]]
    # the outermost line holds more than a number: not a page number
    assert dropped([anchor(*slide, (885, "NETS 2015"), (960, "Total 12"))]) == [[]]
    # at the top, a line's pitch above the body
    assert dropped([anchor((10, "7"), *[(30 + 20 * i, f"line {i}") for i in range(40)])]) == [["7"]]


def page_runs_kept(page: str) -> int:
    return len(anchor_runs(page)) - len(furniture_runs([page])[0])


def test_furniture_is_a_property_of_the_whole_page_across_windows():
    first = anchor((8, "Running head"), *BODY[:15])
    second = anchor(*BODY[15:], (960, "7"))
    assert dropped([first, second]) == [["Running head"], ["7"]]
    # each window alone sees too few levels to tell its edges
    assert dropped([anchor((8, "head"), (100, "one line"))]) == [[]]


def test_page_text_leaves_furniture_out_even_when_named_or_unread():
    page = anchor((8, "Running head"), *BODY[:5], (960, "7"))
    text = page_text(["@1\n\n@2 @3 @4 @5 @6\n\n@7"], [page], ["stop"])
    assert text.strip() == "body line 0 body line 1 body line 2 body line 3 body line 4"
    unread = page_text(["@2 @3 @4"], [page], ["length"])
    assert unread == "body line 0 body line 1 body line 2\n\nbody line 3\nbody line 4"


@pytest.mark.parametrize(
    ("pdf", "expected"),
    [
        # a header above the two columns, written last in the content stream, and a footer
        (
            "multi_column_miss.pdf",
            [
                "Advocacy in Action",
                "447",
                "www.tobaccocontrol.com",
                "Downloaded from http://tobaccocontrol.bmj.com/ on July 12, 2017 - "
                "Published by group.bmj.com",
            ],
        ),
        (
            "headers_footers_ff4f7dad_pg1.pdf",
            [
                "UvA-DARE is a service provided by the library of the University of Amsterdam "
                "(http://dare.uva.nl)",
                "Download date: 28 Dec 2018",
            ],
        ),
    ],
)
def test_real_pages(pdf, expected):
    tok = Tokenizer.from_dir(MODELS)
    with pdfium.PdfDocument(str(DATA / pdf)) as doc:
        layer = read_page(doc[0])
    windows = [w.text for w in build_windows(layer, tok, 1400)]
    assert [text for texts in dropped(windows) for text in texts] == expected


def _ocr_page(width: float, height: float, top: list[tuple[float, str]]) -> dict[int, str]:
    """`edge_furniture` of an OCR'd page: lines `top` (x, text) on one row near the top edge, then a gap,
    then twelve body lines; every box 30 px tall."""
    from jocr.layout.furniture import edge_furniture
    from jocr.layout.geometry import source_lines
    from jocr.lines.types import RAPIDOCR, Line

    lines = [Line(text, (x, 20, x + 12 * len(text), 50), 30, 0, 0.9, RAPIDOCR) for x, text in top]
    lines += [
        Line(f"body line {k} of the slide", (60, 150 + 36 * k, 500, 180 + 36 * k), 30, 0, 0.9, RAPIDOCR)
        for k in range(12)
    ]
    items = source_lines(lines, RAPIDOCR)
    return {items[i].text: kind for i, kind in edge_furniture(items, width, height).items()}


def test_a_slide_title_in_the_top_band_stays_a_navigation_bar_goes():
    # a landscape page (a slide) carries no running header: one line alone at its top is its title, even
    # set no larger than the body; several entries across the top (a navigation bar) are still furniture
    assert _ocr_page(1000, 750, [(60, "Pronunciation of the name")]) == {}
    assert set(_ocr_page(1000, 750, [(60, "Intro"), (300, "Methods"), (600, "Results")])) == {
        "Intro",
        "Methods",
        "Results",
    }
    # the same line at the top of an upright page is a running header
    title = "Pronunciation of the name"
    assert _ocr_page(750, 1000, [(60, title)]) == {title: "header"}


def test_a_sheet_found_short_of_the_lines_is_taken_to_reach_them():
    # a scanned slide with dark tiles: the sheet was found as rows 100-400 of the image, the tiles taken for
    # a table around it, and every line under row 400 was dropped as a running footer
    from jocr.layout.furniture import edge_furniture
    from jocr.layout.geometry import source_lines
    from jocr.lines.types import RAPIDOCR, Line

    tops = [120 + 36 * k for k in range(11)] + [580 + 36 * k for k in range(7)]
    lines = [
        Line(f"line {k} of the page", (60, y, 500, y + 30), 30, 0, 0.9, RAPIDOCR) for k, y in enumerate(tops)
    ]
    items = source_lines(lines, RAPIDOCR)
    assert edge_furniture(items, 1000, 900, paper=(100, 400)) == {}
    # a sheet that holds its lines is measured from its own edges: a footer under a gap goes
    footer = Line("Proceedings of the meeting", (60, 850, 500, 880), 30, 0, 0.9, RAPIDOCR)
    items = source_lines(lines[:11] + [footer], RAPIDOCR)
    assert list(edge_furniture(items, 1000, 1400, paper=(100, 900)).values()) == ["footer"]


def _ocr_rows(rows: list[list[tuple[float, float, float, str]]], width: float = 1275, height: float = 1651):
    """{text: kind} of the furniture among OCR lines given as rows of (x0, x1, top, text), 30 px tall."""
    from jocr.layout.furniture import edge_furniture
    from jocr.layout.geometry import source_lines
    from jocr.lines.types import RAPIDOCR, Line

    lines = [Line(text, (x0, y, x1, y + 30), 30, 0, 0.9, RAPIDOCR) for row in rows for x0, x1, y, text in row]
    items = source_lines(lines, RAPIDOCR)
    return {items[i].text: kind for i, kind in edge_furniture(items, width, height).items()}


CHINESE_BODY = [[(150, 1135, 201 + 34 * k, f"正文第 {k} 行，印刷的中文行距较宽")] for k in range(35)]


def test_a_running_head_with_its_page_number_goes_under_a_narrow_gap():
    # the scan of a Chinese manual page (real5 asyman-p012): the page number and the chapter's title on one
    # row at 9% of the height, 1.7 line pitches above the body, read as two lines 5 px apart
    head = [(151, 170, 143, "8"), (957, 1137, 148, "第四章 绘图命令")]
    assert _ocr_rows([head, *CHINESE_BODY]) == {"8": "page_number", "第四章 绘图命令": "header"}
    title_first = [(233, 427, 143, "从键盘输入变到油墨"), (1100, 1120, 150, "9")]  # the number at the right
    assert _ocr_rows([title_first, *CHINESE_BODY]) == {"从键盘输入变到油墨": "header", "9": "page_number"}


def test_a_top_row_one_pitch_above_the_body_or_without_a_number_stays():
    # a table's first row at the top of a page (an item and its count), one pitch above the next row
    table_row = [(150, 400, 167, "Widgets shipped"), (1000, 1040, 167, "42")]
    assert _ocr_rows([table_row, *CHINESE_BODY]) == {}
    # a title with a date beside it, no lone number, 1.7 pitches above the body
    dated = [(150, 700, 143, "Annual report"), (1000, 1130, 143, "May 2024")]
    assert _ocr_rows([dated, *CHINESE_BODY]) == {}
    # a lone number in the middle of the row is no page number at its end
    middle = [(150, 400, 143, "Part one"), (600, 620, 143, "3"), (900, 1130, 143, "Part two")]
    assert _ocr_rows([middle, *CHINESE_BODY]) == {}
    # a section number before its title at the top of a page (read as two lines): a heading, not a head
    heading = [(150, 170, 143, "2"), (195, 420, 143, "Methods and materials")]
    assert _ocr_rows([heading, *CHINESE_BODY]) == {}
    # a number at the row's end but short of the text's edge (a table's last column, a date's day)
    inset = [(150, 700, 143, "第四章 绘图命令"), (900, 930, 143, "8")]
    assert _ocr_rows([inset, *CHINESE_BODY]) == {}
    # below the band (a heading further down the page): stays
    low = [(151, 170, 250, "8"), (957, 1137, 250, "第四章 绘图命令")]
    body_below = [[(150, 1135, 308 + 34 * k, f"正文第 {k} 行") for k in range(30)]]
    assert _ocr_rows([low, *[[line] for line in body_below[0]]]) == {}
