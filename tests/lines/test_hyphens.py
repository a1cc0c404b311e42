"""A hyphen at a line's end (`jocr.lines.hyphens`): a word the typesetter broke joins without it, a compound
or an identifier broken at its own hyphen keeps it, and the page's own spelling decides first."""

from __future__ import annotations

from jocr.lines.hyphens import (
    SOFT_HYPHEN,
    PageWords,
    join_soft_hyphens,
    keeps_hyphen,
    without_open_broken_word,
)


def test_a_word_the_typesetter_broke_joins_without_its_hyphen():
    for left, right in [("an irretrie", "vably negative"), ("be", "tween them"), ("(ap", "pearing in"),
                        ("Mathe", "matische Nachrichten"), ("Inde", "pendent）格式的文档"),
                        ("INTRODUC", "TION")]:  # fmt: skip
        assert not keeps_hyphen(left, right), (left, right)


def test_a_compound_or_an_identifier_keeps_its_hyphen():
    for left, right in [
        ("运行 debian", "edu-profile-udeb...”。"),  # the part after the break holds a hyphen
        ("the debian-edu", "profile-udeb package"),  # so does the part before it
        ("x86", "64 builds"),  # digits
        ("see /usr/share", "doc/README"),  # a path
        ("the S and S", "Plus environments"),  # a capitalised word goes on
        ("a non", "English page"),
        ("GNU", "based systems"),  # an acronym before a word in lower case
        ("JavaScript", "based"),  # mixed case
        ("an e", "mail address"),  # one letter: hyphenation leaves two at least
        ("1990", "(2000)"),  # no word after the break
    ]:
        assert keeps_hyphen(left, right), (left, right)


def test_the_pages_own_spelling_decides_first():
    page = PageWords(["a single-character control sequence", "in the post-conflict period", "guidelines"])
    assert keeps_hyphen("should be a single", "character control", page)
    assert not keeps_hyphen("should be a single", "character control")  # nothing to go by: hyphenation
    assert keeps_hyphen("in the post", "conflict period", page)
    assert not keeps_hyphen("the strict guide", "lines of the FSF.", page)
    # an identifier's spelling on the page wins over its look
    assert not keeps_hyphen("the Java", "Script code", PageWords(["JavaScript"]))


def test_page_words_leave_out_the_words_broken_at_a_lines_end():
    page = PageWords(["an irretrie" + SOFT_HYPHEN, "vably negative force.", "(Human-readable)"])
    assert "irretrie" not in page and "human-readable" in page and "force" in page


def test_broken_words_in_a_text_join_back():
    assert join_soft_hyphens("co\u00ad\n  op") == "coop"
    assert join_soft_hyphens("an irretrie\u00ad vably negative force") == "an irretrievably negative force"
    assert join_soft_hyphens("运行 debian\u00ad\nedu-profile-udeb") == "运行 debian-edu-profile-udeb"
    # the text's own spelling of the word counts as the page's when no page is given
    assert join_soft_hyphens("human-readable and human\u00ad readable") == "human-readable and human-readable"
    assert join_soft_hyphens("a broken\u00ad") == "a broken-"  # nothing after it: a hyphen shows
    assert join_soft_hyphens("plain text") == "plain text"


def test_a_stream_ending_inside_a_broken_word_holds_it_back():
    assert without_open_broken_word("an irretrie\u00ad ") == "an "
    assert without_open_broken_word("an irretrievably") == "an irretrievably"
