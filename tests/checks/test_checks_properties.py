"""Property tests: no scorer crashes or runs away on arbitrary Markdown/HTML (unclosed tags, huge or deeply
nested tables, stray math delimiters, empty input)."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jocr.checks import load_test
from jocr.checks.omnidoc import gt_blocks, match_page, split_markdown
from jocr.checks.reward import reward_terms
from jocr.checks.teds import teds

TOKENS = [
    "<table>", "</table>", "<tr>", "</tr>", "<td>", "</td>", "<th>", '<td colspan="3">', '<td rowspan="0">',
    '<td rowspan="x">', "<thead>", "|", "| --- |", "\n", "\n\n", "$", "$$", "\\(", "\\)", "\\[", "\\]",
    "\\frac{",
    "}", "{", "^", "_", "**", "*", "#", " ", "a", "1", "x", "中", "😀", "<br>", "[^1]", "<sup>1</sup>", "ab",
]  # fmt: skip
markup = st.lists(st.sampled_from(TOKENS) | st.text(max_size=5), max_size=120).map("".join)

TESTS = [
    load_test(d)
    for d in (
        {"pdf": "a.pdf", "page": 1, "id": "p", "type": "present", "text": "ab 1", "max_diffs": 1},
        {"pdf": "a.pdf", "page": 1, "id": "q", "type": "absent", "text": "x"},
        {"pdf": "a.pdf", "page": 1, "id": "o", "type": "order", "before": "ab", "after": "1x"},
        {
            "pdf": "a.pdf",
            "page": 1,
            "id": "t",
            "type": "table",
            "cell": "a",
            "up": "1",
            "top_heading": "x",
            "left_heading": "ab",
        },
        {"pdf": "a.pdf", "page": 1, "id": "m", "type": "math", "math": "\\frac{a}{b}"},
        {"pdf": "a.pdf", "page": 1, "id": "b", "type": "baseline"},
        {"pdf": "a.pdf", "page": 1, "id": "f", "type": "format", "text": "ab", "format": "italic"},
        {
            "pdf": "a.pdf",
            "page": 1,
            "id": "n",
            "type": "footnote",
            "marker": "1",
            "appears_after_marker": "ab",
        },
    )
]
GT_PAGE = {
    "layout_dets": [
        {"category_type": "text_block", "text": "ab 1 x", "order": 1},
        {"category_type": "equation_isolated", "latex": "\\frac{a}{b}", "order": 2},
        {"category_type": "table", "html": "<table><tr><td>a</td><td>1</td></tr></table>", "order": 3},
        {"category_type": "header", "text": "x", "order": None},
    ],
    "extra": {"relation": []},
}
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(markup)
def test_unit_tests_never_crash(md):
    start = time.process_time()
    for test in TESTS:
        result = test.run(md)
        assert isinstance(result.passed, bool) and 0.0 <= result.score <= 1.0
    assert time.process_time() - start < 5.0


@FAST
@given(markup, markup)
def test_teds_omnidoc_and_reward_never_crash(pred, ref):
    start = time.process_time()
    assert 0.0 <= teds(pred, ref) <= 1.0
    match_page(gt_blocks(GT_PAGE), split_markdown(pred))
    terms = reward_terms(pred, ref, [t.to_dict() for t in TESTS[:3]])
    assert all(0.0 <= v <= 1.0 for v in terms.values())
    assert time.process_time() - start < 5.0


def test_empty_input():
    for test in TESTS:
        assert test.run("").passed in (True, False)
    assert reward_terms("", "")["reward"] >= 0.0
    assert split_markdown("") == []


def test_huge_and_deeply_nested_tables_stay_bounded():
    huge = "<table>" + "<tr>" + "<td>c</td>" * 60 + "</tr>" * 1 + ("<tr>" + "<td>v</td>" * 60 + "</tr>") * 300
    nested = "<table><tr><td>" * 200 + "x" + "</td></tr></table>" * 200
    unclosed = "<table><tr><td>a<td>b<tr><td>c" * 200
    for md in (huge, nested, unclosed, "| a |\n" * 3000):
        start = time.process_time()
        for test in TESTS:
            test.run(md)
        teds(md, huge)
        reward_terms(md, huge)
        match_page(gt_blocks(GT_PAGE), split_markdown(md))
        assert time.process_time() - start < 10.0  # CPU seconds: robust to a loaded machine
