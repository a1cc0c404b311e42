"""An anchored answer checked against its anchor: which runs it skipped and where they go back, and whether
it typed a run's text out instead of naming it."""

from jocr.layout.anchor_check import (
    compact,
    foreign_text,
    made_up,
    names_a_run,
    skipped_runs,
    typed_in,
    without_foreign,
)


def test_runs_skipped_between_named_runs_go_back_after_the_run_before_them():
    assert skipped_runs([1, 2, 5, 6], range(1, 7)) == [(2, [3, 4])]
    assert skipped_runs([1, 3, 6], range(1, 7)) == [(1, [2]), (3, [4, 5])]


def test_runs_before_the_first_named_run_go_back_before_it():
    assert skipped_runs([3, 4], range(1, 5)) == [(None, [1, 2])]


def test_the_order_the_answer_names_runs_in_does_not_matter():
    # the answer read the second half first: runs are placed by the text layer's order of what it named
    assert skipped_runs([5, 6, 1, 2], range(1, 7)) == [(2, [3, 4])]


def test_runs_after_the_last_named_run_only_with_tail():
    assert skipped_runs([1, 2], range(1, 5)) == []
    assert skipped_runs([1, 2], range(1, 5), tail=True) == [(2, [3, 4])]


def test_furniture_and_named_runs_are_never_skipped():
    assert skipped_runs([2, 3, 5], range(1, 7), drop=[1, 4]) == []
    assert skipped_runs([2, 5], range(1, 7), drop=[1]) == [(2, [3, 4])]


def test_an_answer_that_names_no_run_skips_nothing_but_its_tail():
    assert skipped_runs([], range(1, 7)) == []
    assert skipped_runs([], range(1, 4), drop=[1], tail=True) == [(None, [2, 3])]


def test_a_run_typed_out_in_the_answer_is_found_despite_spacing_and_syntax():
    answer = compact("# 安装 主服务器\n\n<table><tr><td>who wrote a short</td></tr></table> report")
    assert typed_in("安装主服务器", answer)
    assert typed_in("who wrote a short report", answer)
    assert not typed_in("a report nobody wrote", answer)


def test_a_short_run_is_never_taken_as_typed():
    # "1" or "cost" are in almost any answer: that says nothing of whether the answer holds the run
    assert not typed_in("cost", compact("its cost and its cost"))


def test_a_block_whose_typed_words_are_not_in_the_runs_is_made_up():
    runs = compact("这是 Debian Edu 12 发行版的手册。 3.1 网络 2")
    assert made_up("<table><tr><td>北京</td><td>1991</td><td>£1,722.14</td></tr></table>", runs)
    assert not made_up("<table><tr><td>3.1</td><td>网络</td><td>2</td></tr></table>", runs)
    assert not made_up("# @3 ", runs)  # nothing typed: nothing made up


def test_an_answer_names_a_run_only_with_a_number_its_window_has():
    assert names_a_run("# @2 and me@163.com", {1: "a", 2: "b"})
    assert not names_a_run("@7 @8", {1: "a", 2: "b"})
    assert not names_a_run("同比增长", {1: "a"})


ENGLISH = "The committee met on three occasions. Revenue rose by 12% to 1,204 units."


def test_what_an_answer_types_that_the_runs_never_give_is_found():
    # another script, primes, U+FFFD, HTML bold in Markdown: typed by the answer, on no run
    assert foreign_text("@1 同比 @2", ENGLISH) == ["同", "比"]
    assert foreign_text("## @1 b\u2032\u2033", ENGLISH) == ["\u2032", "\u2033"]
    assert foreign_text("@1 \ufffd@2", ENGLISH) == ["\ufffd"]
    assert foreign_text("<b>@1</b>", ENGLISH) == ["<b>", "</b>"]
    # Latin letters typed into a page whose runs hold none
    assert foreign_text("@1 abc", "委员会开会三次") == ["a", "b", "c"]
    # a table's HTML, Markdown syntax, ASCII on a Latin page and what the runs hold are the page's own
    assert foreign_text("<table><tr><td>@1</td><td>x</td></tr></table>", ENGLISH) == []
    assert foreign_text("## 1. **@1** | $x$ - @2", ENGLISH) == []
    page = "<b>b\u2032翻 b\u2032\u2032b\u2032译b\u2032':</b>"  # what OCR read on eduzh-p07's scan
    assert foreign_text(f"@1 {page}", page) == []


def test_foreign_pieces_come_out_and_the_runs_text_stays():
    found = foreign_text("<b>@1 同</b> @2", ENGLISH)
    assert without_foreign("<b>The committee 同</b> met", found) == "The committee met"
    assert without_foreign("The committee", []) == "The committee"
