"""generate_page: determinism, profile contracts, ground truth vs unit tests, metadata, degradations."""

from __future__ import annotations

import io
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jocr.checks import load_test
from jocr.checks.math import renders
from jocr.synth import PROFILES, FontMissingError, generate_page, split_of, split_seeds
from jocr.synth.formulas import MATH_FONTSETS, display_formula, inline_formula, render_math


def png_bytes(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_same_seed_same_bytes(profile):
    a = generate_page(11, profile, degrade=True)
    b = generate_page(11, profile, degrade=True)
    assert png_bytes(a.image) == png_bytes(b.image)
    assert png_bytes(a.clean) == png_bytes(b.clean)
    assert a.markdown == b.markdown and a.tests == b.tests and a.meta == b.meta
    c = generate_page(12, profile, degrade=True)
    assert c.markdown != a.markdown and png_bytes(c.image) != png_bytes(a.image)


def test_cpu_small_contract():
    sizes = Counter()
    for seed in range(40):
        page = generate_page(seed, "cpu-small")
        assert page.image.size == (384, 384) and page.image.mode == "RGB"
        assert 0 < len(page.markdown) <= 500
        assert 1 <= len(page.meta["blocks"]) <= 4
        # DejaVu's cap height is 0.73 em: 20 px text has capitals of at least 14 px.
        assert page.meta["style"]["body_px"] >= 20
        assert page.meta["language"] == "en"
        # Bright paper, dark ink.
        assert min(page.meta["style"]["paper"]) >= 234 and max(page.meta["style"]["ink"]) <= 90
        sizes.update(block["category"] for block in page.meta["blocks"])
    assert set(sizes) == {"heading", "paragraph", "list", "table", "formula"}, sizes


def test_cpu_lines_are_single_short_lines():
    for seed in range(30):
        page = generate_page(seed, "cpu-lines")
        assert page.image.size == (384, 384)
        assert 1 <= len(page.meta["blocks"]) <= 3
        assert len(page.markdown) <= 200
        body = page.meta["style"]["body_px"]
        for block in page.meta["blocks"]:
            if block["category"] == "paragraph":
                x0, y0, x1, y1 = block["bbox"]
                assert y1 - y0 < 1.6 * body


def test_document_profiles_vary_layout_language_and_tables():
    columns, languages, spans = Counter(), Counter(), 0
    for seed in range(16):
        page = generate_page(seed, "page")
        assert 1024 <= max(page.image.size) <= 1600
        columns[page.meta["columns"]] += 1
        languages[page.meta["language"]] += 1
        spans += "rowspan=" in page.markdown or "colspan=" in page.markdown
    assert columns[1] and columns[2], columns
    assert languages["en"] and languages["zh"], languages
    assert spans >= 3
    dense = [generate_page(seed, "dense") for seed in range(6)]
    kinds = Counter(b["category"] for page in dense for b in page.meta["blocks"])
    assert kinds["table"] + kinds["caption"] + kinds["formula"] > 0.6 * sum(kinds.values()), kinds


def _run(record: dict, markdown: str) -> bool:
    return load_test(record).run(markdown).passed


@pytest.mark.parametrize("profile,seeds", [("cpu-lines", 15), ("cpu-small", 30), ("page", 8), ("dense", 6)])
def test_every_emitted_test_passes_on_its_ground_truth(profile, seeds):
    total = dropped = 0
    for seed in range(seeds):
        page = generate_page(seed, profile)
        for record in page.tests:
            assert record["pdf"] == f"{page.meta['name']}.png" and record["page"] == 1
            assert _run(record, page.markdown), record
        total += page.meta["tests_total"]
        dropped += page.meta["tests_dropped"]
        assert page.meta["tests_dropped"] == len(page.dropped_tests)
    # Dropping is a safety net, not how tests become correct: almost every candidate test must hold.
    assert dropped <= 0.05 * total, (dropped, total)


def test_tests_fail_on_another_pages_output():
    """Content tests are specific to their page: on a different page's ground truth nearly all fail."""
    pages = [generate_page(seed, "page") for seed in range(6)]
    passed = counted = 0
    for page, other in zip(pages, pages[1:] + pages[:1]):
        for record in page.tests:
            if record["type"] in ("baseline", "absent"):
                continue
            counted += 1
            passed += _run(record, other.markdown)
    assert counted > 50 and passed <= 0.05 * counted, (passed, counted)


def test_targeted_corruptions_fail_their_tests():
    page = next(p for p in (generate_page(s, "dense") for s in range(20)) if p.meta["language"] == "en")
    table_tests = [t for t in page.tests if t["type"] == "table" and ("left" in t or "right" in t)]
    math_tests = [t for t in page.tests if t["type"] == "math"]
    absent_tests = [t for t in page.tests if t["type"] == "absent" and "last_n" not in t]
    assert table_tests and math_tests
    for record in table_tests[:3]:
        # Replace the neighbour the test names: the relation no longer holds.
        neighbour = record.get("left") or record.get("right")
        corrupted = page.markdown.replace(f">{neighbour}<", ">XXXX<")
        assert not _run(record, corrupted), record
    for record in math_tests[:3]:
        assert not _run(record, page.markdown.replace(record["math"], "x+y")), record
    for record in absent_tests:
        assert not _run(record, page.markdown + "\n\n" + record["text"]), record


def test_test_types_and_relations_are_all_emitted():
    types, relations = Counter(), Counter()
    for seed in range(12):
        for record in generate_page(seed, "page").tests:
            types[record["type"]] += 1
            if record["type"] == "table":
                relations.update(
                    k for k in ("up", "down", "left", "right", "top_heading", "left_heading") if k in record
                )
    assert {"present", "absent", "order", "table", "math", "baseline"} <= set(types), types
    assert all(relations[k] for k in ("up", "down", "left", "right", "top_heading", "left_heading")), (
        relations
    )
    page_numbers = [
        r
        for seed in range(12)
        for r in generate_page(seed, "page").tests
        if r["type"] == "absent" and "last_n" in r
    ]
    assert page_numbers and all(r["last_n"] == 20 for r in page_numbers)


def test_metadata_boxes_and_spans():
    for profile in ("cpu-small", "page"):
        for seed in range(10):
            page = generate_page(seed, profile)
            w, h = page.image.size
            blocks = page.meta["blocks"]
            for block in blocks + page.meta["furniture"]:
                x0, y0, x1, y1 = block["bbox"]
                assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h, block
            # md_span slices give back each block, in reading order, joined by blank lines.
            pieces = [page.markdown[a:b] for a, b in (blk["md_span"] for blk in blocks)]
            assert "\n\n".join(pieces) == page.markdown
            # Blocks of one column never overlap.
            for a, b in zip(blocks, blocks[1:]):
                if a["column"] == b["column"]:
                    assert a["bbox"][3] <= b["bbox"][1]
            for item in page.meta["furniture"]:
                assert item["text"] not in page.markdown or item["category"] == "page_number"
            assert page.meta["generator_version"] and page.meta["seed"] == seed


def test_formula_templates_render_in_mathtext_and_katex():
    formulas = set()
    for seed in range(150):
        rng = random.Random(seed)
        formulas.add(display_formula(rng))
        formulas.add(inline_formula(rng))
    assert len(formulas) > 100
    for i, latex in enumerate(sorted(formulas)):
        assert renders(latex), latex
        # Every fontset the generator picks from, in turn.
        coverage, depth = render_math(latex, 22, MATH_FONTSETS[i % len(MATH_FONTSETS)])
        assert coverage.max() > 128 and 0 <= depth < coverage.shape[0]


def test_degradation_is_graded_and_keeps_the_clean_twin():
    diffs = {0.2: [], 1.0: []}
    for seed in range(8):
        plain = generate_page(seed, "cpu-small")
        for strength in diffs:
            page = generate_page(seed, "cpu-small", degrade=strength)
            assert png_bytes(page.clean) == png_bytes(plain.image)
            assert page.markdown == plain.markdown and page.tests == plain.tests
            assert page.meta["degrade"]["strength"] == strength and page.meta["degrade"]["ops"]
            a = np.asarray(page.image, dtype=np.float32)
            diffs[strength].append(np.abs(a - np.asarray(plain.image, dtype=np.float32)).mean())
    assert np.mean(diffs[0.2]) < np.mean(diffs[1.0])
    assert generate_page(3, "cpu-small").clean is None


def test_splits_are_disjoint():
    train, val, test = (set(split_seeds(s, 50)) for s in ("train", "val", "test"))
    assert not (train & val or train & test or val & test)
    assert {split_of(s) for s in val} == {"val"} and {split_of(s) for s in test} == {"test"}
    with pytest.raises(ValueError):
        split_seeds("holdout", 3)
    with pytest.raises(ValueError):
        split_seeds("test", 2, start=10**9 - 1)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="unknown synth profile"):
        generate_page(0, "poster")
    with pytest.raises(ValueError, match="non-negative"):
        generate_page(-1, "cpu-small")


def test_missing_font_is_a_clear_error(monkeypatch):
    from jocr.synth import fonts

    fonts.font_path.cache_clear()
    monkeypatch.setattr(fonts, "_CJK_DIRS", ("/nonexistent",))
    try:
        with pytest.raises(FontMissingError, match="fonts-noto-cjk"):
            fonts.font_path("sans", "regular", True)
    finally:
        fonts.font_path.cache_clear()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=0, max_value=3 * 10**9 - 1),
    profile=st.sampled_from(["cpu-lines", "cpu-small", "page"]),
)
def test_any_seed_gives_a_consistent_page(seed, profile):
    page = generate_page(seed, profile)
    assert page.markdown.strip() and page.meta["blocks"]
    assert page.meta["tests_dropped"] <= max(1, page.meta["tests_total"] // 10)
    for record in page.tests:
        assert _run(record, page.markdown), record
