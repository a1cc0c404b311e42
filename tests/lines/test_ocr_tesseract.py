"""Tesseract as a line source: the languages scripts/setup.sh installs (English and Simplified Chinese, from
.ci/apt-packages.txt), a Chinese line read with them, and words joined as the script writes them."""

from __future__ import annotations

from PIL import Image, ImageDraw

from jocr.lines.ocr import OCRLinesConfig, read_image
from jocr.lines.ocr_tesseract import installed_languages, join_words
from jocr.lines.types import OK
from jocr.synth.fonts import get_font

ZH = "文档解析与版面分析"


def test_setup_installs_english_and_simplified_chinese():
    assert {"eng", "chi_sim"} <= installed_languages(), "tesseract-ocr-eng / -chi-sim: .ci/apt-packages.txt"


def test_a_chinese_line_is_read_without_spaces_between_characters():
    image = Image.new("L", (520, 120), 255)
    ImageDraw.Draw(image).text((30, 30), ZH, fill=0, font=get_font("sans", "regular", 44, cjk=True))
    lines = read_image(image, OCRLinesConfig(engine="tesseract", languages="chi_sim+eng", orient=False))
    assert lines.verdict == OK and lines.source == "tesseract"
    text = "".join(ln.text for ln in lines.lines)
    assert " " not in text
    assert sum(ch in text for ch in ZH) >= len(ZH) - 1  # one character of nine may be misread


def test_words_join_with_spaces_except_between_cjk_characters():
    assert join_words(["The", "quick", "fox"]) == "The quick fox"
    assert join_words(["文", "档", "解析"]) == "文档解析"
    assert join_words(["使用", "PDF", "文件"]) == "使用 PDF 文件"
    assert join_words(["版面", "。", "Next"]) == "版面。 Next"
