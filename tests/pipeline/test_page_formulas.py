"""A born-digital page's display formulas reach its Markdown and tree through the default parse and through
`jocr batch`'s page stage (jocr.layout.formulas): the lines inside a formula become one `formula` block of
its LaTeX, read from the page's glyphs, whatever the model wrote for those lines."""

from __future__ import annotations

import json
from pathlib import Path

import jocr
from jocr.checks.formula import exact_match
from jocr.layout.formulas import formula_region
from jocr.layout.tree import FORMULA
from jocr.lines.anchor import PageAnchor
from jocr.pipeline import load_model

ROOT = Path(__file__).resolve().parents[2]
FORMULAS = ROOT / "data" / "frozen-test" / "formulas"


def _row(stem: str) -> dict:
    rows = [json.loads(x) for x in (FORMULAS / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    return next(r for r in rows if r["id"] == stem)


def test_default_parse_writes_the_page_formula_as_latex():
    row = _row("f001")
    doc = jocr.parse(FORMULAS / row["pdf"], model=load_model(ROOT / "models"), max_tokens=96)
    page = doc.pages[0]
    assert page.anchor.anchored and page.anchor.formulas
    formulas = [b for b in page.tree.blocks if b.type == FORMULA]
    assert len(formulas) == 1 and exact_match(row["latex"], formulas[0].text), formulas
    assert formulas[0].markdown in page.markdown and page.markdown.count("$$") == 2


def test_batch_page_state_carries_lines_and_formulas():
    """`jocr batch` hands a page's decision between processes as plain data: its lines and formulas come
    back equal."""
    doc = jocr.parse(FORMULAS / _row("f001")["pdf"], model=load_model(ROOT / "models"), max_tokens=8)
    anchor = doc.pages[0].anchor
    back = PageAnchor.from_state(json.loads(json.dumps(anchor.state())))
    assert back.page_lines == anchor.page_lines and back.tree_lines
    assert [formula_region(f) for f in back.formulas] == anchor.formulas


def test_default_parse_writes_inline_formulas():
    """A manual page with inline math: the default parse writes it `$...$` in its prose, beside the display
    formula, whatever the model wrote for those lines."""
    from jocr.checks.math import extract_formulas, match_any

    pdf = ROOT / "data" / "frozen-real-math" / "pdfs" / "refman-p1492.pdf"
    doc = jocr.parse(pdf, model=load_model(ROOT / "models"), max_tokens=16)
    assert doc.pages[0].anchor.anchored
    found = extract_formulas(doc.markdown)
    assert match_any(r"p(x)=\binom{n}{x} p^{x}(1-p)^{n-x}", found), found
    assert match_any(r"F(x) \geq p", found) and match_any(r"x=0, \ldots, n", found), found
    assert "216-222$" not in doc.markdown  # a page range in prose stays text
