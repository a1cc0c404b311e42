"""Spaces an OCR recogniser left out of a line's text where its own word boxes show a gap.

RapidOCR's recogniser reads a whole line at once and its word boxes come from the characters' positions,
split at spaces and where letters meet digits. On photographed pages it sometimes writes a numbered
heading without the space between its number and its title ("3.11.1Numbering hierarchy") while the words
it returns, "3.11.1" and "Numbering", stand an em apart: a gap no letter of a word leaves. Such a gap puts
the space back. Only between two Latin (ASCII) characters: spacing next to Chinese is the CJK join's
business (`jocr.layout.geometry`), not the boxes'.

Between a Han character and a Latin letter or digit beside it, printed Chinese sets a gap (xeCJK and
ctex do, as do most word processors' autospace), and the text layer of such a page carries it as a space:
1,208 of the 1,239 such places in the text layers of the development sets' Chinese pages under data/. OCR
recognisers drop it about half the time ("TEX急就帖" beside "Donald Knuth 开发的" on one page), and a
character box is too coarse to tell, so `cjk_spaced` puts it in wherever it is missing.
"""

from __future__ import annotations

import re
from dataclasses import replace

from jocr.cjk import HAN
from jocr.lines.types import Line

# A gap between two words' boxes of at least this share of the line's height is a space: a word space
# is about a quarter of a line box's height, the gap after a section number about one; letters of one
# word split apart (a digit after a letter) sit closer than either.
SPACE_GAP = 0.6


def spaced_line(line: Line) -> Line:
    """`line` with a space put back between two of its words that its text runs together and its word
    boxes set `SPACE_GAP` line heights apart; the line itself when nothing changes (no words, words that
    do not spell out its text in order, no such gap)."""
    words = line.words or []
    height = line.box[3] - line.box[1]
    if len(words) < 2 or height <= 0:
        return line
    text, out, pos = line.text, [], 0
    for k, word in enumerate(words):
        start = text.find(word.text, pos)
        if start < 0:
            return line
        out.append(text[pos:start])
        if k and start == pos and _latin(text[start - 1]) and _latin(text[start]):
            if word.box[0] - words[k - 1].box[2] >= SPACE_GAP * height:
                out.append(" ")
        out.append(word.text)
        pos = start + len(word.text)
    out.append(text[pos:])
    spaced = "".join(out)
    return line if spaced == text else replace(line, text=spaced)


_HAN_BESIDE_LATIN = re.compile(f"(?<=[{HAN}])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[{HAN}])")


def cjk_spaced(line: Line) -> Line:
    """`line` with a space between each Han character and a Latin letter or digit its text runs together
    with it ("TEX急就帖" -> "TEX 急就帖", "第1节" -> "第 1 节"); the line itself when there is none."""
    text = _HAN_BESIDE_LATIN.sub(" ", line.text)
    return line if text == line.text else replace(line, text=text)


def _latin(char: str) -> bool:
    return char.isascii() and not char.isspace()
