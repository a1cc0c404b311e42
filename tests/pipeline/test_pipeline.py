"""The parse pipeline with a scripted engine: batching across documents, order, laziness, errors."""

from __future__ import annotations

import io

import pytest
from fake_engine import scripted_model
from pdf_fixtures import encrypted_pdf, image_bytes, text_pdf
from PIL import Image

from jocr.documents.pages import DocumentError
from jocr.layout.postprocess import PAGE_SPLIT
from jocr.pipeline import iter_documents, parse


def _grey_pdf(levels: list[int]) -> bytes:
    """One page per grey level, so the scripted engine's reply tells the pages apart, each with a mark in
    its corner (in the opposite shade) so that it is not a blank page."""
    pages = [Image.new("L", (60, 80), v) for v in levels]
    for page, v in zip(pages, levels):
        page.paste(255 - v, (2, 2, 12, 8))
    buf = io.BytesIO()
    pages[0].save(buf, "PDF", save_all=True, append_images=pages[1:], resolution=72)
    return buf.getvalue()


def test_pages_batched_across_documents_in_order():
    model = scripted_model()
    docs = parse([_grey_pdf([0, 255, 0]), _grey_pdf([255, 255])], model=model, batch_size=2)
    assert model.scripted.submitted == 5 and max(model.scripted.batches) <= 2
    assert [len(d.pages) for d in docs] == [3, 2]
    assert [p.markdown for p in docs[0].pages] == [
        "# Page\n\nlevel -1.0",
        "# Page\n\nlevel 1.0",
        "# Page\n\nlevel -1.0",
    ]
    sep = f"\n\n{PAGE_SPLIT}\n\n"
    assert docs[0].markdown == sep.join(
        ["# Page\n\nlevel -1.0", "# Page\n\nlevel 1.0", "# Page\n\nlevel -1.0"]
    )
    page = docs[1].pages[1]
    assert page.page == 2 and page.finish_reason == "stop" and page.num_tokens == len("# Page\n\nlevel 1.0")
    assert (page.width, page.height) == (120, 160)  # 60x80 pt at 144 dpi
    assert set(page.timings) == {"render_s", "preprocess_s", "generate_s"}
    assert docs[1].metadata["num_pages"] == 2 and docs[1].metadata["kind"] == "pdf"


def test_page_selection_and_single_input_returns_document():
    doc = parse(_grey_pdf([0, 255, 0, 255]), pages="2,4", model=scripted_model())
    assert [p.page for p in doc.pages] == [2, 4]
    assert all(p.markdown.endswith("level 1.0") for p in doc.pages)


def test_bad_inputs_keep_errors_and_others_finish(tmp_path):
    bad = tmp_path / "bad.pdf"
    bad.write_text("not a pdf")
    good = tmp_path / "good.png"
    good.write_bytes(image_bytes("PNG"))
    model = scripted_model()
    docs = list(iter_documents([str(good), str(bad), encrypted_pdf("pw"), str(good)], model, batch_size=4))
    assert [d.ok for d in docs] == [True, False, False, True]
    assert docs[1].error.startswith(f"{bad}: unsupported file type")
    assert "--password" in docs[2].error
    assert model.scripted.submitted == 2
    with pytest.raises(DocumentError, match="bad.pdf: unsupported file type"):
        parse([str(good), str(bad)], model=model)


def test_page_out_of_range_is_a_document_error():
    with pytest.raises(DocumentError, match=r"page 9 out of range \(document has 1 pages\)"):
        parse(image_bytes("PNG"), pages="9", model=scripted_model())


def test_grounding_boxes_and_truncation_close_tables():
    reply = lambda level: "<|ref|>title<|/ref|><|det|>[[0, 0, 999, 499]]<|/det|>\n# T\n<table><tr><td>1"  # noqa: E731
    # On a 100 x 50 pt page the text sits below the bottom edge: a blank page, read only when asked.
    doc = parse(text_pdf(["x"], size=(100, 50)), model=scripted_model(reply), skip_blank=False)
    page = doc.pages[0]
    assert page.markdown == "# T\n<table><tr><td>1"
    assert [b.to_dict() for b in page.boxes] == [{"label": "title", "x1": 0, "y1": 0, "x2": 200, "y2": 49}]
    doc = parse(text_pdf(["x"]), model=scripted_model(reply), max_tokens=40)
    assert doc.pages[0].finish_reason == "length"
    assert doc.pages[0].markdown.endswith("</table>")


def test_a_grounding_answer_with_bad_boxes_cut_off_mid_box_reads_with_notes():
    import jsonschema

    from jocr.layout.tree import tree_schema

    reply = lambda level: (  # noqa: E731
        "<|ref|>text<|/ref|><|det|>[[-5, 100, 500, 1e9]]<|/det|>\nEdge.\n\n"
        "<|ref|>image<|/ref|><|det|>[[600, 600, 200, 200]]<|/det|>\n\n"
        "<|ref|>text<|/ref|><|det|>[[10, 50, 9"
    )
    doc = parse(image_bytes("PNG"), model=scripted_model(reply), figures="files", ocr="none")
    page = doc.pages[0]  # a 120 x 80 image
    assert page.markdown == "Edge.\n\n![](page_p1_fig1.png)"
    assert page.tree.notes == [
        "the answer ends inside a grounding tag, dropped: '<|ref|>text<|/ref|><|det|>[[10, 50, 9'",
        "grounding box 1 (text): outside the page, clamped",
        "grounding box 2 (image): inverted, corners put in order",
    ]
    assert [b.bbox for b in page.tree.blocks] == [(0, 8, 60, 80), (24, 16, 72, 48)]
    (figure,) = page.figures
    assert figure.image.size == (48, 32)
    jsonschema.validate(page.to_dict()["tree"], tree_schema())


def test_rendering_is_lazy(monkeypatch):
    """Pages are rendered only as decode slots free up: never more than the batch plus its waiting room
    (batch_size + batch_size // 2) ahead of the finished ones."""
    from jocr.documents import pages as pages_mod

    model = scripted_model(step_s=0.01)
    ahead: list[int] = []
    original = pages_mod.PdfSource.render

    def spy(self, index):
        ahead.append(index + 1 - model.scripted.completed)
        return original(self, index)

    monkeypatch.setattr(pages_mod.PdfSource, "render", spy)
    doc = parse(text_pdf([f"p{i}" for i in range(12)]), model=model, batch_size=2)
    assert len(doc.pages) == 12 and doc.ok
    assert max(ahead) <= 3


def test_generation_failure_marks_pages_not_run():
    model = scripted_model()
    model.scripted.fail_levels = {1.0}
    docs = parse([_grey_pdf([0, 255]), _grey_pdf([0])], model=model, raise_errors=False)
    assert [d.ok for d in docs] == [False, True]
    assert docs[0].pages[0].error is None
    assert "page 2: generation failed (scripted failure)" in docs[0].pages[1].error


def test_a_page_whose_output_cannot_be_built_fails_alone(monkeypatch):
    from jocr.layout.request import PageRequestBuilder

    real = PageRequestBuilder.page_output
    calls = []

    def page_output(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("max() arg is an empty sequence")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PageRequestBuilder, "page_output", page_output)
    docs = parse([_grey_pdf([0, 100, 200])], model=scripted_model(), raise_errors=False)
    errors = [p.error for p in docs[0].pages]
    assert errors[0] is None and errors[2] is None
    assert errors[1].endswith("page 2: output not built (max() arg is an empty sequence)")


def test_blank_pages_come_back_empty_without_running_the_model():
    blank = Image.new("L", (60, 80), 250)
    buf = io.BytesIO()
    marked = Image.new("L", (60, 80), 0)
    marked.paste(255, (2, 2, 12, 8))
    marked.save(buf, "PDF", save_all=True, append_images=[blank, marked], resolution=72)
    model = scripted_model()
    doc = parse(buf.getvalue(), model=model)
    assert model.scripted.submitted == 2 and doc.ok
    page = doc.pages[1]
    assert page.markdown == "" and page.finish_reason == "blank" and page.num_tokens == 0
    assert (page.width, page.height) == (120, 160) and set(page.timings) == {"render_s", "preprocess_s"}
    assert doc.pages[0].markdown == doc.pages[2].markdown == "# Page\n\nlevel -1.0"
    model = scripted_model()
    doc = parse(buf.getvalue(), model=model, skip_blank=False)
    assert model.scripted.submitted == 3 and doc.pages[1].markdown == "# Page\n\nlevel 1.0"


def test_json_shape():
    doc = parse(image_bytes("PNG"), model=scripted_model())
    data = doc.to_dict()
    assert set(data) == {"source", "metadata", "error", "markdown", "pages"}
    assert set(data["pages"][0]) >= {"page", "markdown", "boxes", "tokens", "timings", "finish_reason"}


def test_stopping_early_closes_runner_and_sources(monkeypatch):
    from jocr.documents import pages as pages_mod

    closed: list[str] = []
    original = pages_mod.PdfSource.close

    def spy(self):
        closed.append(self.name)
        original(self)

    monkeypatch.setattr(pages_mod.PdfSource, "close", spy)
    model = scripted_model()
    gen = iter_documents([_grey_pdf([0]), _grey_pdf([0, 255, 0, 255])], model, batch_size=1, names=["a", "b"])
    first = next(gen)
    assert first.source == "a" and first.ok
    gen.close()
    assert "a" in closed and "b" in closed


def test_jocr_parse_is_a_plain_function():
    import types

    import jocr
    import jocr.pipeline

    assert isinstance(jocr.parse, types.FunctionType) and jocr.parse is jocr.pipeline.parse
    doc = jocr.parse(image_bytes("PNG"), model=scripted_model())
    assert doc.ok and doc.pages[0].markdown.startswith("# Page")


def test_each_input_is_opened_once_and_announced(monkeypatch):
    from jocr.pipeline import stream

    opened: list[str] = []
    original = stream.open_source

    def spy(item, options, name=None):
        opened.append(name)
        return original(item, options, name=name)

    monkeypatch.setattr(stream, "open_source", spy)
    announced: list[tuple[str, int]] = []
    docs = list(
        iter_documents(
            [_grey_pdf([0, 0]), b"not a document"],
            scripted_model(),
            names=["a", "b"],
            on_open=lambda doc: announced.append((doc.source, len(doc.pages))),
        )
    )
    assert opened == ["a", "b"] and announced == [("a", 2), ("b", 0)]
    assert docs[0].ok and docs[1].error


def test_a_shared_runner_stays_open_and_a_closed_run_cancels_its_requests():
    from fake_engine import ScriptedRunner

    from jocr.pipeline import DocumentRun

    model = scripted_model(step_s=0.5)  # one page at a time, half a second each: the second is in flight
    runner = ScriptedRunner(model.scripted, batch_size=1)
    try:
        doc = next(iter_documents([_grey_pdf([0, 255])], model, runner=runner, batch_size=1))
        assert doc.ok and not runner.closed  # the caller's scheduler is not closed by the run
        delivered: list[tuple] = []
        run = DocumentRun([_grey_pdf([0] * 4)], model, delivered.append, runner=runner, batch_size=1)
        assert run.advance(limit=1) == [] and len(run.handles) == 1  # one page a call when limited
        assert run.advance() == [] and len(run.handles) == 2  # the window: the batch and one waiting
        assert not run.wants_pages and not run.done
        handles = model.scripted.handles[-2:]
        run.close()
        assert run.done and not runner.closed
        assert all(h.cancelled for h in handles)  # pages still in flight were cancelled
    finally:
        runner.close()
