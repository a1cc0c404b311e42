"""benchmarks/accuracy_sets.py: a frozen set is taken by name (`--sets real3-pdf`), with its pages' files
and languages from the set's sources.json, and an unknown name is refused with the names there are."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from accuracy_sets import build_sets  # noqa: E402


def _args(sets: str, tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(
        sets=sets,
        page_ids=None,
        out=str(tmp_path),
        olmocr_sample=str(REPO / "tests/data/olmocr-bench-sample"),
        frozen_real=str(REPO / "data/frozen-real"),
        frozen_real2=str(REPO / "data/frozen-real2"),
        frozen_real3=str(REPO / "data/frozen-real3"),
        frozen_real4=str(REPO / "data/frozen-real4"),
        frozen_real5=str(REPO / "data/frozen-real5"),
        frozen_real_math=str(REPO / "data/frozen-real-math"),
        omnidocbench=str(tmp_path / "no-omnidocbench"),
    )


def test_the_third_frozen_set_is_taken_by_name(tmp_path):
    (bset,) = build_sets(_args("real3-pdf", tmp_path))
    assert bset.name == "real3-pdf" and bset.tests == REPO / "data/frozen-real3/pdf.jsonl"
    assert len(bset.pages) == 15 and all(p.path.is_file() for p in bset.pages)
    assert sorted(p.lang for p in bset.pages).count("zh") == 4
    assert {p.rel for p in bset.pages if p.lang == "zh"} >= {"pdf/ctexfaq-p010.pdf", "pdf/tlmgr-p008.pdf"}


def test_the_fifth_frozen_set_is_chinese_in_three_variants(tmp_path):
    scan, photo = build_sets(_args("real5-photo,real5-scan", tmp_path))
    assert photo.tests == REPO / "data/frozen-real5/photo.jsonl" and scan.name == "real5-scan"
    assert len(photo.pages) == 11 and {p.lang for p in photo.pages} == {"zh"}
    assert all(p.path.suffix == ".jpg" and p.path.is_file() for p in photo.pages + scan.pages)


def test_the_math_sets_pixel_copies_are_taken_by_name(tmp_path):
    dev, held = build_sets(_args("math-scan,math3-photo", tmp_path))
    assert dev.tests == REPO / "data/frozen-real-math/scan.jsonl" and len(dev.pages) == 7
    assert held.tests == REPO / "data/frozen-real-math/heldout2/photo.jsonl" and len(held.pages) == 8
    assert all(p.path.suffix == ".jpg" and p.path.is_file() for p in dev.pages + held.pages)


def test_sets_are_taken_together_and_an_unknown_name_is_refused(tmp_path):
    names = [s.name for s in build_sets(_args("real2-pdf,real3-pdf", tmp_path))]
    assert names == ["real2-pdf", "real3-pdf"]
    with pytest.raises(SystemExit, match="real3-pdf"):
        build_sets(_args("real9-pdf", tmp_path))


def test_the_fourth_frozen_set_is_taken_by_name_with_its_photographs(tmp_path):
    (bset,) = build_sets(_args("real4-photo", tmp_path))
    assert bset.name == "real4-photo" and bset.tests == REPO / "data/frozen-real4/photo.jsonl"
    assert len(bset.pages) == 14 and all(p.path.is_file() and p.path.suffix == ".jpg" for p in bset.pages)
    assert sorted(p.lang for p in bset.pages).count("zh") == 3


def test_a_scan_set_is_taken_as_image_pdfs_with_the_scans_tests(tmp_path):
    """`real5-scanpdf`: the scans put in one-page PDFs with no text layer, under the output folder, with
    the scan set's page names, tests and languages; written once."""
    from PIL import Image

    from jocr.documents.pages import LoadOptions, open_source

    scans, pdfs = build_sets(_args("real5-scan,real5-scanpdf", tmp_path))
    assert pdfs.name == "real5-scanpdf" and pdfs.tests == scans.tests
    assert [(p.rel, p.lang) for p in pdfs.pages] == [(p.rel, p.lang) for p in scans.pages]
    assert all(
        p.path.suffix == ".pdf" and p.path.parent == tmp_path / "_scanpdf" / "real5-scanpdf"
        for p in pdfs.pages
    )
    with open_source(str(pdfs.pages[0].path), LoadOptions()) as source:
        layer = source.text_layer(0)
        assert source.num_pages == 1 and (layer is None or not layer.lines)
        with Image.open(scans.pages[0].path) as scan:  # the 150-dpi scan rendered at 144 dpi
            assert abs(source.render(0).width - scan.width * 144 / 150) <= 2
    written = pdfs.pages[0].path.stat().st_mtime_ns
    (again,) = build_sets(_args("real5-scanpdf", tmp_path))
    assert again.pages[0].path.stat().st_mtime_ns == written
