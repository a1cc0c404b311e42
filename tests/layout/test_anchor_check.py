"""An anchored answer checked against its anchor: which runs it skipped and where they go back, and whether
it typed a run's text out instead of naming it."""

from jocr.layout.anchor_check import compact, made_up, names_a_run, skipped_runs, typed_in


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
