"""The bundled sample document: three 384-pixel pages at 144 dpi whose ground truth is samples/sample.md."""

from __future__ import annotations

from pathlib import Path

from jocr.documents.pages import open_source

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
# Enough for each page's heading, first rows or formula; the whole sample reads in about 40 s of CPU.
MAX_TOKENS = 96


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


def test_bundled_model_reads_the_sample_the_same_with_and_without_drafts():
    """The bundled checkpoint on the bundled sample: FastMTP speculation (verified greedily) gives exactly
    the tokens of plain greedy decoding, page by page."""
    import jocr
    from jocr.pipeline import load_model

    model = load_model(SAMPLES.parent / "models")
    assert model.has_mtp
    plain = jocr.parse(SAMPLES / "sample.pdf", model=model, spec=0, max_tokens=MAX_TOKENS, ocr="none")
    drafted = jocr.parse(SAMPLES / "sample.pdf", model=model, spec="auto", max_tokens=MAX_TOKENS, ocr="none")
    assert [p.finish_reason for p in plain.pages] == [p.finish_reason for p in drafted.pages]
    assert [p.raw for p in drafted.pages] == [p.raw for p in plain.pages]
    assert drafted.markdown == plain.markdown
    assert plain.pages[0].markdown.startswith("#") and "<table>" in plain.pages[1].markdown
