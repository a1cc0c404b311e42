"""The anchor: format, grid, the per-line cap and the token-budget rule (a prefix of the runs + "...")."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
import pytest

from jocr.documents.anchor import ANCHOR_VERSION, CUT_MARK, anchor_lines, build_anchor, cap_text
from jocr.documents.textlayer import OK, TextLayer, TextLine, read_page
from jocr.tokenizer import Tokenizer

DATA = Path(__file__).parent / "data" / "olmocr-bench"
MODELS = Path(__file__).parents[2] / "models"


def small_layer() -> TextLayer:
    return TextLayer(
        width=600.0,
        height=800.0,
        verdict=OK,
        lines=[
            TextLine("Title of the page", (60.0, 40.0, 300.0, 60.0), 18.0, 700),
            TextLine("first  line\tof body", (60.0, 100.0, 540.0, 112.0), 10.0, 400),
            TextLine("second line", (600.0, 800.0, 600.0, 800.0), 10.0, 400),
        ],
    )


def test_format_and_grid():
    lines = anchor_lines(small_layer())
    assert lines == [
        "page 600x800",
        "100,50 Title of the page",
        "100,125 first line of body",
        "999,999 second line",
    ]


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
    # Measured with the bundled 384-token BPE: the whole anchor of this page is 4,810 tokens (6,443
    # characters), so every budget here cuts it.
    assert full.tokens == 4810 and full.lines == full.lines_total == 118
    assert anchor.truncated and budget - 60 < anchor.tokens <= budget
    assert anchor.text.startswith("page 612x792\n")
    assert anchor.to_dict()["truncated"] is True
