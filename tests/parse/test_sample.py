"""The bundled sample document: three 384-pixel pages at 144 dpi whose ground truth is samples/sample.md."""

from __future__ import annotations

from pathlib import Path

from jocr.documents.pages import open_source

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_sample_pdf_renders_to_the_training_size():
    with open_source(SAMPLES / "sample.pdf") as src:
        assert src.kind == "pdf" and src.num_pages == 3
        sizes = {src.render(i).size for i in range(3)}
    assert sizes == {(384, 384)}


def test_sample_ground_truth_has_text_table_and_formula():
    truth = (SAMPLES / "sample.md").read_text()
    pages = truth.split("<--- Page Split --->")
    assert len(pages) == 3
    assert pages[0].strip().startswith("# ")
    assert "<table>" in pages[1] and "$$" in pages[2]
