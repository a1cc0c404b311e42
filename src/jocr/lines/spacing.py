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

Punctuation after a Han character is full-width in printed Chinese: in the text layers of the development
sets' 40 Chinese pages under data/, a comma, semicolon, colon, question or exclamation mark between a Han
character and the next non-space character is full-width at 550 of 551 places (the other a typo, ",。"),
and at 68 of 72 line ends; after a full-width closing bracket at all 19, and between another character
and a Han character at all 68; a bracket opened right after a Han character is full-width at all 73
places, and no bracket pair mixes the two widths. RapidOCR writes the ASCII mark at about 1 in 25 of
those places ("因此,本书", "韩愈（768-824)"), which breaks every phrase comparison across it, so
`cjk_punctuated` puts the full-width mark back. An ASCII mark with a space after it is left as it is:
pages set in that style (", " after Han) exist, and the recogniser never writes a space after a mark it
read as full-width.
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


_FULL_WIDTH = {",": "\uff0c", ";": "\uff1b", ":": "\uff1a", "?": "\uff1f", "!": "\uff01"}
# after Han or a full-width bracket and before no space, or between any other character and Han
_CJK_MARK = re.compile(f"(?<=[{HAN}\uff09])([,;:?!])(?!\\s)|(?<=\\S)([,;:?!])(?=[{HAN}])")
_PAIR = re.compile("([(\uff08])([^()\uff08\uff09]*)([)\uff09])")  # an innermost bracket pair
_HAN_CHAR = re.compile(f"[{HAN}]")


def cjk_punctuated(line: Line) -> Line:
    """`line` with the punctuation printed Chinese sets full-width written so ("因此,本书" -> "因此，本书",
    "（768-824)" -> "（768-824）", "的(见下)" -> "的（见下）"); the line itself when there is none.

    A bracket pair opened right after a Han character or with one full-width bracket; a comma, semicolon,
    colon, question or exclamation mark right after a Han character or a full-width bracket and not
    followed by a space, or between another character and a Han character ("NJUREPO:南京")."""
    text = _PAIR.sub(lambda m: _bracketed(m, line.text), line.text)
    text = _CJK_MARK.sub(lambda m: _FULL_WIDTH[m.group(1) or m.group(2)], text)
    return line if text == line.text else replace(line, text=text)


def _bracketed(match: re.Match, text: str) -> str:
    opening, inner, closing = match.groups()
    before = text[match.start() - 1] if match.start() else ""
    if opening == "(" and closing == ")" and not _HAN_CHAR.fullmatch(before):
        return match.group(0)
    return f"\uff08{inner}\uff09"


def as_printed(line: Line) -> Line:
    """An OCR line's text as the page prints it: the spaces its word boxes show (`spaced_line`), the gap
    beside Han characters (`cjk_spaced`) and full-width Chinese punctuation (`cjk_punctuated`)."""
    return cjk_punctuated(cjk_spaced(spaced_line(line)))


def _latin(char: str) -> bool:
    return char.isascii() and not char.isspace()
