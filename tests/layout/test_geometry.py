"""Plain geometry and text helpers of the rules over lines (`jocr.layout.geometry`)."""

from __future__ import annotations

from jocr.layout.geometry import text_width


def test_text_width_counts_cjk_characters_twice():
    assert text_width("column") == 6
    assert text_width("新闻正文") == 8
    assert text_width("第2版 news") == 2 + 1 + 2 + 5  # two wide characters, a digit, a space, four letters
    assert text_width("ＡＢ") == 4  # full-width Latin prints wide too
    assert text_width("") == 0
