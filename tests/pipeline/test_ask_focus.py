"""Which stretch of runs a question is asked over (jocr.pipeline.ask_focus)."""

from __future__ import annotations

from jocr.pipeline.ask_focus import focus_run, question_terms


def test_question_terms_keep_content_words_numbers_and_chinese_pairs():
    assert question_terms("Which pdfTeX version does character protrusion require?") == {
        "pdftex",
        "version",
        "character",
        "protrusion",
        "require",
    }
    assert "v2" in question_terms("Is it v2 of the package?")
    assert question_terms("zhnumber 支持哪些编码？") == {"zhnumber", "支持", "持哪", "哪些", "些编", "编码"}
    assert question_terms("Who is it?") == set()


def test_the_run_sharing_most_question_words_is_chosen():
    runs = [
        "The float package",
        "Anselm Lingnau",
        "This style option improves the interface for defining floating objects",
        "It incorporates the functionality of David Carlisle's style option here, giving",
        "floating environments a [H] option",
    ]
    assert focus_run(runs, "Whose style option here does the package incorporate?") == 3
    assert focus_run(runs, "What colour is the sky?") is None


def test_a_sentence_wrapped_onto_the_next_run_counts_half():
    runs = ["Character protrusion requires", "pdfTeX version 1.40 or later.", "Font expansion requires"]
    # run 0 holds two terms and the next run two more; run 2 one term and nothing after it
    assert focus_run(runs, "Which pdfTeX version does character protrusion require?") == 0
    assert focus_run(["版本 v2.5.10", "支持 GBK 和 Big5 编码。"], "zhnumber 支持哪些编码？") == 1
