from __future__ import annotations

import lxml.html

from jocr.layout.postprocess import (
    PAGE_SPLIT,
    Box,
    checked_box,
    clean_markdown,
    close_open_tables,
    extract_grounding,
    grid_to_pixels,
    join_pages,
    parse_boxes,
    postprocess_page,
    unfinished_tag,
)

GROUNDED = (
    "<|ref|>title<|/ref|><|det|>[[100, 50, 899, 120]]<|/det|>\n# Annual Report\n\n"
    "<|ref|>text<|/ref|><|det|>[[100, 150, 899, 400], [100, 420, 500, 480]]<|/det|>\nRevenue grew 4.5%.\n\n"
    "<|ref|>table<|/ref|><|det|>[[0, 500, 999, 999]]<|/det|>\n<table><tr><td>a</td></tr></table>"
)


def test_grounding_tags_removed_and_boxes_in_pixels():
    text, boxes = extract_grounding(GROUNDED, width=1000, height=2000)
    assert "<|" not in text
    assert "# Annual Report" in text and "Revenue grew 4.5%." in text and "<table>" in text
    assert [b.label for b in boxes] == ["title", "text", "text", "table"]
    # int(x / 999 * width) as DeepSeek-OCR's script maps the 0-999 grid to pixels.
    assert boxes[0] == Box("title", int(100 / 999 * 1000), int(50 / 999 * 2000), int(899 / 999 * 1000), 240)
    assert boxes[3] == Box("table", 0, 1001, 1000, 2000)


def test_grid_to_pixels_clamps_and_orders():
    assert grid_to_pixels([1200, -5, 0, 999], 999, 999) == (0, 0, 999, 999)
    assert grid_to_pixels([500, 600, 100, 200], 999, 999) == (100, 200, 500, 600)


def test_malformed_det_payloads_are_skipped_not_evaluated():
    assert parse_boxes("[[1, 2, 3, 4], [5, 6], __import__('os')]") == [(1.0, 2.0, 3.0, 4.0)]
    text, boxes = extract_grounding("<|ref|>x<|/ref|><|det|>[[1,2,3<|/det|>body", 100, 100)
    assert text == "body" and boxes == []


def test_truncated_and_stray_tags_removed():
    text, boxes = extract_grounding(
        "intro <|ref|>the cat<|/ref|> sat <|det|>[[1, 2, 3, 4]]<|/det|> <|ref|>", 999, 999
    )
    assert text.split() == ["intro", "the", "cat", "sat"]
    assert boxes == [Box("", 1, 2, 3, 4)]


def test_clean_markdown():
    raw = "<｜begin▁of▁sentence｜>a \\coloneqq b  \r\n\r\n\r\n\r\nnext\\eqqcolon<｜end▁of▁sentence｜>\n\n"
    assert clean_markdown(raw) == "a := b\n\nnext=:"


def test_close_open_tables_on_truncation():
    cut = "text\n<table><tr><td>1</td><td>2</td></tr><tr><td>3</td><td>4"
    fixed = close_open_tables(cut)
    assert fixed.endswith("</td></tr></table>")
    rows = lxml.html.fromstring(fixed.split("\n", 1)[1]).findall(".//tr")
    assert [[td.text for td in r] for r in rows] == [["1", "2"], ["3", "4"]]
    assert close_open_tables("<table><tr><td>x</td></tr></table>") == "<table><tr><td>x</td></tr></table>"
    assert close_open_tables("<table><tr><td>x</td></t").endswith("<td>x</td></tr></table>")


def test_postprocess_page_only_closes_tables_when_cut():
    md, boxes = postprocess_page("<table><tr><td>x", 10, 10, finish_reason="stop")
    assert md == "<table><tr><td>x"
    md, _ = postprocess_page("<table><tr><td>x", 10, 10, finish_reason="length")
    assert md == "<table><tr><td>x</td></tr></table>"


def test_join_pages():
    assert join_pages(["a", "b"]) == f"a\n\n{PAGE_SPLIT}\n\nb"
    assert join_pages(["a"]) == "a"
    assert join_pages(["a", "b"], marker=None) == "a\n\nb"


def test_checked_box_clamps_orders_and_drops_boxes_of_no_area():
    assert checked_box([1, 2, 3, 4], 999, 999) == ((1, 2, 3, 4), "")
    assert checked_box([-5, 0, 1e9, 999], 999, 999) == ((0, 0, 999, 999), "outside the page, clamped")
    assert checked_box([500, 600, 100, 200], 999, 999) == (
        (100, 200, 500, 600),
        "inverted, corners put in order",
    )
    assert checked_box([5, 5, 5, 9], 999, 999) == (None, "of no area, dropped")
    assert checked_box([2000, 0, 3000, 10], 999, 999) == (None, "of no area, dropped")  # off the page


def test_numbers_with_exponents_are_read_and_an_unfinished_tag_is_cut_off():
    assert parse_boxes("[[1e2, 0, 2.5E+2, 1e9]]") == [(100.0, 0.0, 250.0, 1e9)]
    assert unfinished_tag("a <|ref|>x<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|> b") == (
        "a <|ref|>x<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|> b",
        "",
    )
    assert unfinished_tag("a\n<|ref|>text<|/ref|><|det|>[[1, 2") == (
        "a\n",
        "<|ref|>text<|/ref|><|det|>[[1, 2",
    )
    text, boxes = extract_grounding(
        "a\n<|ref|>t<|/ref|><|det|>[[1,2,3,4]]<|/det|>b\n<|ref|>t<|/ref|><|det|>[[5", 999, 999
    )
    assert text.split() == ["a", "b"] and boxes == [Box("t", 1, 2, 3, 4)]
