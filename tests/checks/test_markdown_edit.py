from jocr.checks.markdown_edit import (
    canonical_markdown,
    markdown_edit_distance,
    structure_edit_distance,
    typed_blocks,
)

PAGE = """# Title

First paragraph, written
over two lines with **bold**.

- one item
- another item
  that runs on

<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>

```
x <- 1
```

$$ E = mc^2 $$
"""


def test_identical_pages_are_at_zero_and_an_empty_page_at_one():
    assert markdown_edit_distance(PAGE, PAGE) == 0.0
    assert markdown_edit_distance("", PAGE) == 1.0
    assert markdown_edit_distance("", "") == 0.0
    assert structure_edit_distance(PAGE, PAGE) == 0.0


def test_blocks_and_their_kinds():
    kinds = [kind for kind, _ in typed_blocks(PAGE)]
    assert kinds == ["heading", "paragraph", "item", "item", "row", "row", "code", "formula"]
    assert canonical_markdown(PAGE).split("\n")[:4] == [
        "# Title",
        "First paragraph, written over two lines with bold.",
        "- one item",
        "- another item that runs on",
    ]


def test_soft_line_breaks_emphasis_and_heading_level_do_not_count():
    other = (
        PAGE.replace("written\nover", "written over")
        .replace("**bold**", "bold")
        .replace("# Title", "### Title")
    )
    assert markdown_edit_distance(other, PAGE) == 0.0


def test_an_html_table_equals_the_same_pipe_table():
    pipe = PAGE.replace(
        "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>",
        "| a | b |\n|---|---|\n| 1 | 2 |",
    )
    assert markdown_edit_distance(pipe, PAGE) == 0.0


def test_structure_counts_where_the_text_barely_moves():
    flat = PAGE.replace("# Title", "Title").replace("- one item\n- another", "one item\nanother")
    text = markdown_edit_distance(flat, PAGE)
    assert 0.0 < text < 0.05
    assert structure_edit_distance(flat, PAGE) >= 2 / 8
    split = PAGE.replace("written\nover", "written\n\nover")
    assert structure_edit_distance(split, PAGE) == 1 / 9


def test_chinese_lines_join_without_a_space():
    assert canonical_markdown("这是第一行\n第二行。") == "这是第一行第二行。"
    assert canonical_markdown("这是 Debian\nEdu 手册") == "这是 Debian Edu 手册"
