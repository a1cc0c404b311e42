"""The anchor: format, grid, the per-line cap, the token-budget rule (windows of the runs, "..." at a cut),
and run references (`@i`): `reference_target` and `resolve_references` are exact inverses."""

from __future__ import annotations

import re
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from jocr.layout.request import page_text
from jocr.lines.anchor import (
    ANCHOR_VERSION,
    CUT_MARK,
    anchor_lines,
    build_anchor,
    build_windows,
    cap_text,
    page_runs,
    reference_target,
    region_anchor,
    window_target,
)
from jocr.lines.references import (
    anchor_runs,
    resolve_references,
    unread_runs,
    without_open_reference,
)
from jocr.lines.textlayer import read_page
from jocr.lines.types import OK, Line, PageLines
from jocr.tokenizer import Tokenizer

DATA = Path(__file__).parents[1] / "documents" / "data" / "olmocr-bench"
MODELS = Path(__file__).parents[2] / "models"
VECTOR = Path(__file__).parents[2] / "data" / "frozen-test" / "vector"


def small_layer() -> PageLines:
    return PageLines(
        width=600.0,
        height=800.0,
        verdict=OK,
        lines=[
            Line("Title of the page", (60.0, 40.0, 300.0, 60.0), 18.0, 700),
            Line("first  line\tof body", (60.0, 100.0, 540.0, 112.0), 10.0, 400),
            Line("second line", (600.0, 800.0, 600.0, 800.0), 10.0, 400),
        ],
    )


def test_format_and_grid():
    lines = anchor_lines(small_layer())
    assert lines == [
        "page 600x800",
        "@1 100,50 Title of the page",
        "@2 100,125 first line of body",
        "@3 999,999 second line",
    ]
    assert anchor_runs("\n".join(lines)) == {
        1: "Title of the page",
        2: "first line of body",
        3: "second line",
    }


def test_cap_text_keeps_head_and_tail_at_spaces():
    text = " ".join(f"word{i}" for i in range(100))
    capped = cap_text(text, 60)
    assert len(capped) <= 60 and " ... " in capped
    assert capped.startswith("word0 word1") and capped.endswith("word98 word99")
    assert cap_text("short", 60) == "short"


def test_budget_keeps_a_prefix_and_marks_the_cut():
    tok = Tokenizer.byte_level()
    layer = small_layer()
    full = build_anchor(layer, tok, max_tokens=10_000)
    assert not full.truncated and full.lines == 3 and full.text == "\n".join(anchor_lines(layer))
    assert full.tokens == len(tok.encode(full.text)) and full.version == ANCHOR_VERSION
    cut = build_anchor(layer, tok, max_tokens=full.tokens - 1)
    assert cut.truncated and cut.lines == 2 and cut.text.endswith("\n" + CUT_MARK)
    assert cut.tokens <= full.tokens - 1 and cut.tokens == len(tok.encode(cut.text))
    assert full.text.startswith(cut.text[: -len(CUT_MARK)])
    tiny = build_anchor(layer, tok, max_tokens=4)
    assert tiny.lines == 0 and tiny.tokens <= 4


@pytest.mark.parametrize("budget", [256, 512, 1024])
def test_real_page_with_the_bundled_tokenizer(budget):
    tok = Tokenizer.from_dir(MODELS)
    with pdfium.PdfDocument(str(DATA / "multi_column_miss.pdf")) as doc:
        layer = read_page(doc[0])
    anchor = build_anchor(layer, tok, max_tokens=budget)
    full = build_anchor(layer, tok, max_tokens=100_000)
    # Measured with the bundled 384-token BPE: the whole anchor of this page is 5,283 tokens (117 runs),
    # so every budget here cuts it.
    assert full.tokens == 5283 and full.lines == full.lines_total == 117
    assert anchor.truncated and budget - 60 < anchor.tokens <= budget
    assert anchor.text.startswith("page 612x792\n")


ANCHOR = "\n".join(
    [
        "page 600x800",
        "@1 100,100 Results",
        "@2 100,125 Revenue rose by 12%",
        "@3 100,140 in the third",
        "@4 100,155 quarter.",
        "@5 100,170 3",
    ]
)


@pytest.mark.parametrize(
    "markdown, target",
    [
        ("# Results\n\nRevenue rose by 12% in the third quarter.", "# @1\n\n@2 @3 @4"),
        # a run inside a word, or before a digit, stays text (`@3` must not read as `@31`)
        ("Results2 in the third5 quarter.x", "Results2 in the third5 @4x"),
        # table cells; a run that occurs twice is taken once, in order
        ("<td>Results</td><td>3</td><td>3</td>", "<td>@1</td><td>@5</td><td>3</td>"),
    ],
)
def test_reference_target_and_resolution_are_inverses(markdown, target):
    assert reference_target(markdown, ANCHOR) == target
    assert resolve_references(target, ANCHOR) == markdown


def test_text_holding_a_reference_like_number_is_no_target():
    # Its `@12` could not be told from a reference: the page is left as it is for training, and reading it
    # back drops the number, which names no run (the one place where the two are not inverses).
    markdown = "write to me@3x.com or @12"
    assert reference_target(markdown, ANCHOR) == markdown
    assert resolve_references(markdown, ANCHOR) == "write to me@3x.com or "


def test_resolution_of_model_output():
    # adjacent references (CJK runs have no space between them); an unknown number is dropped, an e-mail stays
    assert resolve_references("@1@2 and @9, me@3.org", ANCHOR) == "ResultsRevenue rose by 12% and , me@3.org"
    assert without_open_reference("# @1\n\n@2 @1") == "# @1\n\n@2 "
    # a run named again is the model looping back: written once, where it was first named (training targets
    # name each run at most once, so this never breaks the inverse above)
    assert (
        resolve_references("@2 @3\n\n@2 @3 @4 @2@2", ANCHOR)
        == "Revenue rose by 12% in the third\n\n  quarter. "
    )
    assert without_open_reference("total @") == "total " and without_open_reference("@1 x") == "@1 x"


def test_a_window_cut_short_keeps_the_runs_it_never_reached():
    """An answer that ran out of room (finish reason "length") is followed by the runs past the last one it
    named, one a line; an answer that stopped is not, nor is an unanchored page."""
    assert unread_runs("# @1\n\n@2 @9", ANCHOR) == "in the third\nquarter.\n3"  # @9 names no run
    assert unread_runs("@1 @5", ANCHOR) == "" and unread_runs("no references", ANCHOR).startswith("Results")
    texts, anchors = ["# @1\n\n@2", "# @1 @2 @3 @4 @5"], [ANCHOR, ANCHOR]
    assert page_text(texts, anchors, ["length", "stop"]) == (
        "# Results\n\nRevenue rose by 12%\n\nin the third\nquarter.\n3\n\n"
        "# Results Revenue rose by 12% in the third quarter. 3"
    )
    assert page_text(texts, anchors, ["stop", "stop"]) == page_text(texts, anchors)
    assert "third" not in page_text(texts[:1], anchors[:1], [None])  # still being written (a stream)
    assert page_text(["#  words"], (), ["length"]) == "#  words"


def test_words_broken_across_lines_are_joined_back():
    runs = ["page 600x800", "@1 10,10 an irretrie\u00ad", "@2 10,20 vably negative force", "@3 10,30 non-"]
    broken = "\n".join(runs)
    # the next part follows in the same paragraph or the next one; nothing after it: a hyphen shows
    assert page_text(["@1 @2"], [broken]) == "an irretrievably negative force"
    assert page_text(["@1\n\n@2"], [broken]) == "an irretrievably negative force"
    assert page_text(["@1\n\n# @2"], [broken]) == "an irretrie-\n\n# vably negative force"
    assert page_text(["@3 @2"], [broken]) == "non- vably negative force"
    # a stream that ends inside the broken word holds the word back until its next part comes
    assert page_text(["@2\n\n@1"], [broken], [None]) == "vably negative force\n\nan "


def test_references_on_the_frozen_vector_pages():
    # Every frozen vector page: the reference form reads back to exactly its Markdown, and it is shorter.
    tok = Tokenizer.from_dir(MODELS)
    plain = written = 0
    for pdf in sorted((VECTOR / "pdfs").glob("*.pdf")):
        with pdfium.PdfDocument(str(pdf)) as doc:
            layer = read_page(doc[0])
        anchor = build_anchor(layer, tok, max_tokens=100_000)
        markdown = (VECTOR / "gt" / f"{pdf.stem}_pg1_repeat1.md").read_text(encoding="utf-8").strip()
        target = reference_target(markdown, anchor.text)
        assert resolve_references(target, anchor.text) == markdown
        plain += len(tok.encode(markdown))
        written += len(tok.encode(target))
    # Measured: the model writes 0.40 of the Markdown's tokens (tables' cells that the layer merges, formulas
    # and Markdown syntax stay text).
    assert round(written / plain, 2) == 0.40


def test_windows_cover_the_runs_in_order_within_the_budget():
    tok = Tokenizer.from_dir(MODELS)
    with pdfium.PdfDocument(str(DATA / "multi_column_miss.pdf")) as doc:
        layer = read_page(doc[0])
    windows = build_windows(layer, tok, max_tokens=1400)
    # Measured: 117 runs in 4 windows of at most 1,400 tokens.
    assert [w.first for w in windows] == [1, 29, 56, 91]
    assert sum(w.lines for w in windows) == 117 and all(w.tokens <= 1400 for w in windows)
    # each window numbers its runs from 1
    assert windows[0].text.endswith("\n" + CUT_MARK) and windows[1].text.startswith("page 612x792\n...\n@1 ")
    assert windows[-1].text.splitlines()[-1].startswith("@27 ") and windows[-1].lines == 27
    whole = anchor_lines(layer)
    assert page_runs(windows) == {i: line.split(" ", 2)[2] for i, line in enumerate(whole[1:], 1)}
    assert build_windows(layer, tok, max_tokens=1400, max_windows=2)[-1].first == 29
    assert build_anchor(layer, tok, 1400).text == windows[0].text


def test_window_targets_rebuild_the_page():
    # Each window's part of a page in reference form names only its runs; joined in order the parts give the
    # page's text back (a block cut by a window edge gains a blank line).
    tok = Tokenizer.byte_level()
    pdf = sorted((VECTOR / "pdfs").glob("*.pdf"))[0]
    with pdfium.PdfDocument(str(pdf)) as doc:
        layer = read_page(doc[0])
    windows = build_windows(layer, tok, max_tokens=300, max_windows=100)
    assert len(windows) > 3
    markdown = (VECTOR / "gt" / f"{pdf.stem}_pg1_repeat1.md").read_text(encoding="utf-8").strip()
    parts = [window_target(markdown, windows, i) for i in range(len(windows))]
    for window, part in zip(windows, parts):
        numbers = {int(n) for n in re.findall(r"(?<![A-Za-z0-9_@])@([0-9]+)", part)}
        assert numbers <= set(range(1, window.lines + 1))
    joined = "\n\n".join(resolve_references(p, w.text) for p, w in zip(parts, windows) if p)
    assert "".join(joined.split()) == "".join(markdown.split())  # all text, in order


def test_a_region_is_anchored_as_a_page_of_its_own():
    layer = small_layer()
    region = layer.crop((50.0, 90.0, 550.0, 130.0))  # holds the body line's centre only
    assert (region.width, region.height) == (500.0, 40.0) and region.usable
    assert [line.text for line in region.lines] == ["first  line\tof body"]
    assert region.lines[0].box == (10.0, 10.0, 490.0, 22.0) and layer.lines[1].box[0] == 60.0
    anchor = region_anchor(layer, (50, 90, 550, 130), Tokenizer.byte_level(), 1024)
    assert anchor == "page 500x40\n@1 20,250 first line of body"
    assert region_anchor(layer, (0, 300, 100, 400), Tokenizer.byte_level()) is None  # no run inside
    unusable = PageLines(width=600.0, height=800.0, lines=layer.lines)
    assert region_anchor(unusable, (50, 90, 550, 130), Tokenizer.byte_level()) is None


def test_run_window_is_a_window_of_the_pages_runs_with_cut_marks():
    from jocr.lines.anchor import anchor_runs, build_windows, page_runs, run_window

    texts = ["alpha one", "beta two", "gamma three", "delta four", "epsilon five"]
    boxes = [(60.0, 40.0 + 20 * i, 300.0, 52.0 + 20 * i) for i in range(5)]
    layer = PageLines(
        width=600.0, height=800.0, verdict=OK, lines=[Line(t, b, 10.0, 400) for t, b in zip(texts, boxes)]
    )
    tok = Tokenizer.byte_level()
    runs = page_runs(build_windows(layer, tok, 4096))
    window = run_window(layer, tok, 1, 2, 4096)
    assert window.first == 2 and window.lines == 2
    assert [runs[window.first + k - 1] for k in anchor_runs(window.text)] == ["beta two", "gamma three"]
    lines = window.text.splitlines()
    assert lines[1] == lines[-1] == CUT_MARK  # runs before and after it
    whole = run_window(layer, tok, 0, 99, 4096)
    assert whole.lines == 5 and CUT_MARK not in whole.text
