from jocr.train.filters import DuplicateFilter, FilterConfig, is_degenerate


def test_clean_markdown_is_not_degenerate():
    text = "# Results\n\nThe yield rose 4.5% in 2023.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n"
    assert not is_degenerate(text)


def test_repeated_tail_is_degenerate():
    assert is_degenerate("Introduction to the method " + "the the " * 20)
    assert is_degenerate("Total" + "0" * 40)


def test_short_legitimate_repeats_pass():
    # a row of dashes or a few repeated words is normal Markdown, not a loop
    assert not is_degenerate("Name\n----------\nvalue value value")


def test_repeated_line_is_degenerate():
    text = "\n".join(["<tr><td>1</td><td>2</td></tr>"] * 12)
    assert is_degenerate(text)
    assert not is_degenerate(text, cfg=FilterConfig(max_line_repeats=20, min_tail_repeats=50))


def test_token_run_is_degenerate():
    assert is_degenerate("abc", token_ids=[5] * 30)
    assert not is_degenerate("abc", token_ids=[5, 6] * 10)


def test_duplicates_normalise_whitespace_and_case():
    f = DuplicateFilter()
    assert f.accept("Hello  World\n")
    assert not f.accept("hello world")
    assert f.accept("hello world!")
    assert len(f) == 2


def test_duplicate_capacity_forgets_oldest():
    f = DuplicateFilter(capacity=2)
    for t in ("a", "b", "c"):
        assert f.accept(t)
    assert f.accept("a")  # forgotten
    assert not f.accept("c")
