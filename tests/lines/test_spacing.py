"""A space the recogniser left out between two words its own word boxes set a wide gap apart."""

from __future__ import annotations

from jocr.lines.spacing import spaced_line
from jocr.lines.types import RAPIDOCR, Line, Word


def ocr_line(text: str, words: list[tuple[str, float, float]], height: float = 25.0) -> Line:
    return Line(
        text,
        (words[0][1], 100.0, words[-1][2], 100.0 + height),
        height,
        0,
        0.99,
        RAPIDOCR,
        [Word(t, (x0, 100.0, x1, 100.0 + height), 1.0) for t, x0, x1 in words],
    )


def one_word(text: str) -> Line:
    """An OCR line whose text is one word box, 25 px a character."""
    return ocr_line(text, [(text, 0.0, 25.0 * len(text))])


def test_a_section_number_set_an_em_apart_keeps_its_space():
    # RapidOCR on a photographed heading: "3.11.1Numbering hierarchy", its words 29 px apart on a 25 px line
    line = ocr_line(
        "3.11.1Numbering hierarchy", [("3.11.1", 337, 396), ("Numbering", 425, 537), ("hierarchy", 546, 641)]
    )
    assert spaced_line(line).text == "3.11.1 Numbering hierarchy"


def test_words_set_close_stay_joined_and_other_lines_are_unchanged():
    tight = ocr_line("v2.0 release", [("v", 100, 112), ("2.0", 113, 150), ("release", 160, 240)])
    assert spaced_line(tight).text == "v2.0 release"  # a split inside a word, no gap: no space
    spaced = ocr_line("3.1 Output", [("3.1", 100, 140), ("Output", 170, 260)])
    assert spaced_line(spaced).text == "3.1 Output"
    cjk = ocr_line("第1节", [("第", 100, 125), ("1", 150, 162), ("节", 190, 215)])
    assert spaced_line(cjk).text == "第1节"  # spacing next to Chinese is not decided from gaps
    unmatched = ocr_line("Abetter way", [("A", 100, 115), ("betterr", 140, 230), ("way", 240, 290)])
    assert spaced_line(unmatched).text == "Abetter way"  # words that do not spell the text: left alone
    no_words = Line("3.11.1Numbering", (0, 0, 100, 20), 20, 0, None, RAPIDOCR, None)
    assert spaced_line(no_words) is no_words


def test_a_space_goes_between_han_characters_and_latin_letters_or_digits():
    from jocr.lines.spacing import cjk_spaced

    assert cjk_spaced(one_word("TEX急就帖是为科学工作者")).text == "TEX 急就帖是为科学工作者"
    assert cjk_spaced(one_word("第1节 简介，见表2。")).text == "第 1 节 简介，见表 2。"
    kept = one_word("Donald Knuth 开发的（1978）")  # spaced already; punctuation is not Han
    assert cjk_spaced(kept) is kept


def test_punctuation_after_han_characters_is_full_width():
    from jocr.lines.spacing import cjk_punctuated

    # RapidOCR's ASCII marks on scans of printed full-width ones (real5 development scans)
    read = one_word("因此,本书给读者提供了探索和使用")
    assert cjk_punctuated(read).text == "因此，本书给读者提供了探索和使用"
    assert cjk_punctuated(one_word("需要注意的是;xpinyin 缺省")).text == "需要注意的是；xpinyin 缺省"
    assert cjk_punctuated(one_word("怎么会呢?")).text == "怎么会呢？"  # at the line's end too
    assert cjk_punctuated(one_word("①韩愈（768-824),字退之")).text == "①韩愈（768-824），字退之"
    assert cjk_punctuated(one_word("见上文(第 87 页)的宏集")).text == "见上文（第 87 页）的宏集"


def test_ascii_punctuation_set_with_a_space_or_beside_latin_text_stays():
    from jocr.lines.spacing import cjk_punctuated

    for text in (
        "准安装形式, 也就是在这本书中",  # a page set with ", " after Han
        "add(图) 命令, 把",  # a call in code: the bracket opens after a Latin letter
        "plain TEX (第 87 页) 的宏集",  # a bracket after a space
        "f(x, y) = 1; g(z): h?",  # no Han at all
        "机械工程与自动化, 2015, 2 : 1",
    ):
        kept = one_word(text)
        assert cjk_punctuated(kept) is kept, text


def test_an_ocr_line_is_written_as_printed_in_one_place():
    from jocr.lines.spacing import as_printed

    line = ocr_line("3.1Output 第1节,见下", [("3.1", 0, 40), ("Output", 70, 160), ("第1节,见下", 170, 320)])
    assert as_printed(line).text == "3.1 Output 第 1 节，见下"


def test_a_mark_between_latin_text_and_han_characters_is_full_width():
    from jocr.lines.spacing import cjk_punctuated

    line = ocr_line("NJUREPO:南京大学本科生泛用报告", [("NJUREPO:南京大学本科生泛用报告", 0.0, 500.0)])
    assert cjk_punctuated(line).text == "NJUREPO：南京大学本科生泛用报告"
    code = ocr_line("printf(x); 中文注释", [("printf(x); 中文注释", 0.0, 300.0)])
    assert cjk_punctuated(code) is code  # a space before the Han text: left as it is
