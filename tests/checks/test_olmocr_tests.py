"""olmOCR-Bench unit tests: the sample's official score, test-by-test agreement with the official scorer's
recorded verdicts (tests/checks/data/olmocr_official_verdicts.json, made by benchmarks/olmocr_agreement.py),
and the rules of each test type on small hand-made cases."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from jocr.checks import load_test, load_tests
from jocr.checks.math import formulas_match
from jocr.checks.unittests import BaselineTest, ValidationError

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "olmocr-bench-sample"
VERDICTS = json.loads((Path(__file__).parent / "data" / "olmocr_official_verdicts.json").read_text())


def _agreement_module():
    spec = importlib.util.spec_from_file_location(
        "olmocr_agreement", ROOT / "benchmarks" / "olmocr_agreement.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_candidate(bench: Path, candidate: str) -> dict[str, bool]:
    tests = load_tests(bench / "dataset.jsonl") + load_tests(bench / "blanks.jsonl")
    pdfs = sorted(str(p.relative_to(bench / "pdfs")) for p in (bench / "pdfs").rglob("*.pdf"))
    for pdf in pdfs:
        if not any(t.type == "baseline" and t.pdf == pdf for t in tests):
            tests.append(BaselineTest(id=f"{pdf}_baseline", pdf=pdf, page=1, type="baseline"))
    out = {}
    for t in tests:
        stem = t.pdf[:-4]
        files = sorted((bench / candidate).glob(f"{stem}_pg{t.page}_repeat*.md"))
        out[t.id] = t.run(files[0].read_text(encoding="utf-8")).passed
    return out


def test_sample_scores_94_3_like_the_official_scorer():
    verdicts = _run_candidate(SAMPLE, "olmocr_pipeline")
    groups = {"dataset": [], "blanks": [], "baseline": []}
    blank_ids = {t.id for t in load_tests(SAMPLE / "blanks.jsonl")}
    for test_id, passed in verdicts.items():
        key = "blanks" if test_id in blank_ids else "baseline" if test_id.endswith("_baseline") else "dataset"
        groups[key].append(passed)
    overall = sum(sum(v) / len(v) for v in groups.values()) / 3
    assert len(verdicts) == 120
    assert round(overall * 100, 1) == 94.3
    assert verdicts == VERDICTS["tests"]["olmocr_pipeline"]


def test_agreement_with_official_verdicts_on_perturbed_candidates(tmp_path):
    module = _agreement_module()
    module.perturb(str(SAMPLE), str(tmp_path), seeds=2)
    agree = total = 0
    disagreements = []
    for candidate, official in VERDICTS["tests"].items():
        ours = _run_candidate(tmp_path, candidate)
        for test_id, verdict in official.items():
            total += 1
            agree += ours[test_id] == verdict
            if ours[test_id] != verdict:
                disagreements.append((candidate, test_id))
    assert total == 1800
    assert agree == total and not disagreements, disagreements  # measured: 0 of 1,800 differ


@pytest.mark.parametrize("key", ["formula_pairs", "formula_pairs_demo"])
def test_formula_pairs_agree_with_official_renderer(key):
    pairs = VERDICTS[key]
    agree = sum(formulas_match(ref, cand) == ok for ref, cand, ok in pairs)
    assert len(pairs) > 200 and sum(ok for *_, ok in pairs) > 30
    assert agree == len(pairs)  # measured: 0 of 265 (sample) and 0 of 797 (demo) differ


def _t(**kw):
    return load_test({"pdf": "a.pdf", "page": 1, "id": "t", **kw})


def test_present_absent_thresholds_and_normalisation():
    t = _t(type="present", text="The “quick” brown fox", max_diffs=1)
    assert t.run('the **The "quick"   brown fox** jumps').passed
    # partial_ratio is Indel-based: one substituted letter costs two, so max_diffs=1 does not cover it (the
    # official scorer computes exactly these floats too).
    near = t.run('The "quick" brown fix')
    assert not near.passed and 0.95 < near.score < 1.0
    assert t.run('The "quick" brown fx').passed
    miss = t.run("nothing of the sort")
    assert not miss.passed and 0.0 <= miss.score < 1.0
    a = _t(type="absent", text="CONFIDENTIAL")
    assert a.run("public text").passed
    assert not a.run("CONFIDENTIAL memo").passed
    first = _t(type="present", text="header", first_n=10)
    assert first.run("header and then body").passed and not first.run("body body body header").passed


def test_order_exact_and_fuzzy():
    t = _t(type="order", before="alpha beta", after="gamma delta")
    assert t.run("alpha beta ... gamma delta").passed
    assert not t.run("gamma delta ... alpha beta").passed
    assert t.run("gamma delta alpha beta gamma delta").passed  # some before-start precedes some after-start
    fuzzy = _t(type="order", before="alpha beta", after="gamma delta", max_diffs=1)
    assert fuzzy.run("alpha bta then gamma delta").passed
    with pytest.raises(ValidationError):
        _t(type="order", before="ab", after="cd", max_diffs=2)


HTML = """<table><thead><tr><th>Name</th><th colspan="2">Scores</th></tr></thead>
<tr><td rowspan="2">Ann</td><td>1</td><td>2</td></tr><tr><td>3</td><td>4</td></tr></table>"""


def test_table_relations_spans_and_headings():
    assert _t(type="table", cell="1", left="Ann", right="2", down="3").run(HTML).passed
    assert _t(type="table", cell="3", left="Ann", top_heading="Scores").run(HTML).passed
    assert _t(type="table", cell="Ann", top_heading="Name").run(HTML).passed
    partial = _t(type="table", cell="1", left="Ann", right="9", down="3").run(HTML)
    assert not partial.passed and partial.score == pytest.approx(3 / 4)
    # On the main branch a relation whose neighbour does not exist fails.
    assert not _t(type="table", cell="2", right="anything").run(HTML).passed
    md = "| h1 | h2 |\n|---|---|\n| a | b |\n| c | d |"
    assert _t(type="table", cell="d", top_heading="h2", left_heading="c", up="b").run(md).passed
    assert not _t(type="table", cell="d", ignore_markdown_tables=True).run(md).passed


def test_math_exact_mathml_and_layout():
    t = _t(type="math", math="\\frac{a}{b}")
    assert t.run("text $\\frac{a}{b}$ more").passed
    assert t.run("\\[ \\dfrac{a}{b} + 1 \\]").passed  # its MathML contains the reference's <mfrac>
    assert not t.run("\\[ \\frac{b}{a} \\]").passed
    assert t.run("\\( \\frac {a} {b} \\)").passed  # same MathML
    spacing = _t(type="math", math="\\int_{a}^{b} f(x) d x")
    assert spacing.run("$$\\int_a^b f(x) \\, dx$$").passed  # MathML differs (mspace); layout matches
    assert not spacing.run("$$\\int_a^b g(x) dx$$").passed
    with pytest.raises(ValidationError):
        _t(type="math", math="\\frac{a")


def test_baseline_rules():
    b = BaselineTest(pdf="a.pdf", page=1, id="b", type="baseline")
    assert b.run("Some text.").passed
    assert not b.run("  ** -- ").passed
    assert not b.run("Text " + "ab" * 40).passed
    assert b.run("Text " + "ab" * 10).passed
    assert not b.run("Text 中文").passed
    blank = BaselineTest(pdf="a.pdf", page=1, id="c", type="baseline", max_length=5)
    assert blank.run("abc").passed and not blank.run("abcdefgh").passed


def test_format_and_footnote():
    assert _t(type="format", text="Results", format="heading").run("## Results\nbody").passed
    assert _t(type="format", text="important", format="bold").run("an **important** word").passed
    assert not _t(type="format", text="important", format="italic").run("an **important** word").passed
    fn = _t(type="footnote", marker="2", appears_before_marker="as shown", appears_after_marker="See Smith")
    assert fn.run(
        "as shown[^2] here\n\n[^2]: See Smith 2020"
    ).passed  # the definition follows within 200 chars
    assert not fn.run(
        "as shown[^2] " + "x" * 300 + "\n\n[^2]: See Smith 2020"
    ).passed  # only a definition there
    assert not fn.run("as shown[^3] See Smith").passed
    assert fn.run("as shown<sup>2</sup> See Smith 2020").passed
    assert _t(type="footnote", marker="3").run("text³").passed


def test_loading_errors_are_one_line():
    with pytest.raises(ValidationError, match="unknown test type"):
        load_test({"pdf": "a", "page": 1, "id": "x", "type": "nope"})
    with pytest.raises(ValidationError, match="invalid JSON"):
        load_test("{not json")
    t = load_test(
        {"pdf": "a", "page": 1, "id": "x", "type": "present", "text": "hi", "category": "synthetic"}
    )
    assert t.to_dict()["category"] == "synthetic"
