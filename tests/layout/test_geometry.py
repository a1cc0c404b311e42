"""Plain geometry and text helpers of the rules over lines (`jocr.layout.geometry`): text widths as they
print, rows of lines."""

from __future__ import annotations

from jocr.layout.geometry import list_item, rows_of, source_lines, text_width
from jocr.lines.types import RAPIDOCR, Line


def test_text_width_counts_cjk_characters_twice():
    assert text_width("column") == 6
    assert text_width("新闻正文") == 8
    assert text_width("第2版 news") == 2 + 1 + 2 + 5  # two wide characters, a digit, a space, four letters
    assert text_width("ＡＢ") == 4  # full-width Latin prints wide too
    assert text_width("") == 0


def ocr_line(text: str, box: tuple[float, float, float, float]) -> Line:
    return Line(text, box, box[3] - box[1], 0, 0.9, RAPIDOCR)


def test_lines_one_under_the_other_are_two_rows_however_tall_their_boxes():
    # a photographed page askew: each line's axis-aligned box is 50 px tall at a 22 px pitch, so the boxes
    # of consecutive lines overlap by 28 px, more than half their height
    lines = [
        ocr_line(f"line {k} of a paragraph read off a photo", (100, 100 + 22 * k, 900, 150 + 22 * k))
        for k in range(3)
    ]
    rows = rows_of(source_lines(lines, RAPIDOCR))
    assert [[ln.text for ln in row.lines] for row in rows] == [[ln.text] for ln in lines]


def test_lines_side_by_side_are_one_row():
    lines = [ocr_line("a term", (100, 100, 200, 130)), ocr_line("its description", (300, 104, 700, 134))]
    rows = rows_of(source_lines(lines, RAPIDOCR))
    assert [[ln.text for ln in row.lines] for row in rows] == [["a term", "its description"]]


def test_lines_of_cjk_text_and_punctuation_join_without_a_space():
    from jocr.layout.geometry import join_text, joined_without_space

    assert joined_without_space("当服务器安装", "在一台机器上")
    assert joined_without_space("例如设置摘要，", "「本文概要」")  # CJK punctuation on either side
    assert not joined_without_space("是正式的", "Debian 子项目")
    assert not joined_without_space("the end of a line", "the next")
    assert join_text(["当服务器安装", "在一台机器上，", "而它的", "Debian 子项目"]) == (
        "当服务器安装在一台机器上，而它的 Debian 子项目"
    )


def test_list_items_are_bulleted_or_numbered_lines():
    for text in ("• Milk", "1. First,", "(b) the second", " - a dash"):
        assert list_item(text), text
    for text in ("1.20", "Items", "•Eggs"):  # a number, a word, a bullet glued to its word
        assert not list_item(text), text


def test_lines_broken_at_a_hyphen_join_with_it_or_without_as_the_page_spells_the_word():
    from jocr.layout.geometry import join_text
    from jocr.lines.hyphens import PageWords

    assert join_text(["an irretrie\u00ad", "vably negative force"]) == "an irretrievably negative force"
    joined = join_text(["完成安装 - 运行 debian\u00ad", "edu-profile-udeb"])
    assert joined == "完成安装 - 运行 debian-edu-profile-udeb"
    page = PageWords(["a human-readable name"])
    assert join_text(["more human\u00ad", "readable."], page) == "more human-readable."
    assert join_text(["more human\u00ad", "readable."]) == "more humanreadable."  # nothing to go by
