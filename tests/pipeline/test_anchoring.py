"""`anchor` in the pipeline: auto follows the model's config and the page's text layer, on/off override it,
each page reports what happened, and the prompt is the tokenizer's one anchored format."""

from __future__ import annotations

import json
import re

import pytest
from fake_engine import ScriptedRunner, scripted_model
from layer_fixtures import PROSE, invisible_pdf, plain_pdf
from pdf_fixtures import image_bytes

from jocr.documents.pages import LoadOptions, open_source
from jocr.lines.anchor import ANCHOR_VERSION, build_anchor
from jocr.pipeline import parse
from jocr.tokenizer import ANCHOR_OPEN, DEFAULT_PROMPT


def recording_model(version: int):
    model = scripted_model()
    model.model.config.anchor.version = version
    prompts = []
    check = model.scripted.check

    def record(req):
        check(req)
        prompts.append(list(req.prompt_ids))

    model.scripted.check = record
    return model, prompts


def test_auto_on_a_model_trained_without_anchors_changes_nothing():
    model, prompts = recording_model(0)
    doc = parse(plain_pdf(), model=model)
    page = doc.pages[0]
    assert not page.anchor.anchored and page.anchor.verdict is None  # the layer is not even read
    assert "anchor_s" not in page.timings
    assert page.to_dict()["anchor"] == {"anchored": False, "verdict": None, "note": None}
    assert prompts[0] == model.tokenizer.build_prompt(DEFAULT_PROMPT, [page.image_tokens])
    assert ANCHOR_OPEN.strip() not in model.tokenizer.decode(prompts[0])


def test_auto_on_an_anchored_model_uses_a_usable_layer():
    model, prompts = recording_model(ANCHOR_VERSION)
    doc = parse(plain_pdf(), model=model)
    page = doc.pages[0]
    assert page.anchor.anchored and page.anchor.verdict == "ok" and page.anchor.note == ""
    with open_source(plain_pdf(), LoadOptions()) as source:
        expected = build_anchor(source.text_layer(0), model.tokenizer, model.anchor_config.max_tokens)
    assert [w.text for w in page.anchor.windows] == [expected.text]
    assert prompts[0] == model.tokenizer.build_prompt(
        DEFAULT_PROMPT, [page.image_tokens], anchor=expected.text
    )
    text = model.tokenizer.decode(prompts[0])
    assert text.endswith("<anchor>\n" + expected.text + "\n</anchor>")
    assert "The quick brown fox jumps over the lazy dog." in text
    info = json.loads(json.dumps(page.to_dict()))["anchor"]
    assert (
        info["anchored"] is True and info["version"] == ANCHOR_VERSION and info["tokens"] == expected.tokens
    )
    assert "anchor_s" in page.timings


@pytest.mark.parametrize(
    "data, verdict, note",
    [
        (invisible_pdf(), "invisible", "invisible (an OCR layer)"),
        (image_bytes("png", (200, 300)), None, ""),
    ],
)
def test_pages_without_a_usable_layer_fall_back_with_a_note(data, verdict, note):
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(data, model=model, skip_blank=False).pages[0]
    assert not page.anchor.anchored and page.anchor.verdict == verdict and note in page.anchor.note
    assert page.error is None and page.markdown
    assert prompts[0] == model.tokenizer.build_prompt(DEFAULT_PROMPT, [page.image_tokens])


def test_an_anchor_that_fails_falls_back_to_the_image(monkeypatch):
    import jocr.lines.anchor as anchor_module

    def broken(*args, **kwargs):
        raise RuntimeError("broken layer\nsecond line")

    monkeypatch.setattr(anchor_module, "page_anchor", broken)
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(plain_pdf(), model=model).pages[0]
    assert page.error is None and not page.anchor.anchored
    assert page.anchor.note.startswith("text layer not used (broken layer") and "\n" not in page.anchor.note
    assert prompts[0] == model.tokenizer.build_prompt(DEFAULT_PROMPT, [page.image_tokens])


def test_on_and_off_override_the_config():
    model, _ = recording_model(0)
    page = parse(plain_pdf(), model=model, anchor="on").pages[0]
    assert page.anchor.anchored and page.anchor.note == "the model was not trained with anchors"
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(plain_pdf(), model=model, anchor="off").pages[0]
    assert not page.anchor.anchored
    assert prompts[0] == model.tokenizer.build_prompt(DEFAULT_PROMPT, [page.image_tokens])
    page = parse(image_bytes("png", (200, 300)), model=model, anchor="on", skip_blank=False).pages[0]
    assert not page.anchor.anchored and "no text layer" in page.anchor.note


def test_bad_anchor_mode_and_other_versions():
    model, _ = recording_model(0)
    with pytest.raises(ValueError, match="anchor must be auto, on or off"):
        parse(plain_pdf(), model=model, anchor="sometimes")
    model, _ = recording_model(ANCHOR_VERSION + 1)
    page = parse(plain_pdf(), model=model).pages[0]
    assert not page.anchor.anchored and "anchor version" in page.anchor.note


def test_cli_anchor_flag_and_json(tmp_path, capsys):
    from jocr.cli import main
    from jocr.config import tiny_config
    from jocr.model import OCRModel
    from jocr.tokenizer import Tokenizer

    model_dir = tmp_path / "model"
    config = tiny_config()
    config.anchor.version = ANCHOR_VERSION
    OCRModel(config).init_weights(seed=0).save_pretrained(model_dir)
    Tokenizer.byte_level().save(model_dir / "tokenizer.json")
    (tmp_path / "doc.pdf").write_bytes(plain_pdf())
    for mode, anchored in (("auto", True), ("off", False)):
        out = tmp_path / mode
        args = ["parse", "-q", "--max-tokens", "4", str(tmp_path / "doc.pdf"), "-o", str(out)]
        code = main([*args, "--format", "json", "--model", str(model_dir), "--anchor", mode])
        assert code == 0, capsys.readouterr().err
        data = json.loads((out / "doc.json").read_text())
        assert data["pages"][0]["anchor"]["anchored"] is anchored
    with pytest.raises(SystemExit) as exc:  # argparse's own usage error
        main(["parse", "-q", str(tmp_path / "doc.pdf"), "--anchor", "maybe"])
    assert exc.value.code == 2 and "--anchor" in capsys.readouterr().err


def _reference_reply(model):
    """The scripted engine answers each request with references to the runs of its anchor window."""
    tok = model.tokenizer

    def answer(req):
        from jocr.engine import GenerationResult, RequestStats

        numbers = re.findall(r"^@(\d+) ", tok.decode(req.prompt_ids), flags=re.M)
        ids = tok.encode(" ".join(f"@{n}" for n in numbers))
        return GenerationResult(token_ids=ids, finish_reason="stop", stats=RequestStats())

    model.scripted.answer = answer


@pytest.mark.parametrize("budget, windows", [(1024, 1), (80, 3)])
def test_references_resolve_and_long_pages_are_read_in_windows(budget, windows):
    # One request per window of the anchor; the model's `@i` become the runs' text, windows joined in order.
    model, prompts = recording_model(ANCHOR_VERSION)
    model.model.config.anchor.max_tokens = budget
    _reference_reply(model)
    page = parse(plain_pdf(), model=model).pages[0]
    assert len(page.anchor.windows) == len(prompts) == windows
    # each window numbers its runs from 1: three one-run windows are answered "@1" each; the three lines are
    # one wrapped paragraph on the page, so the page's tree joins them back whichever way they were read
    assert page.markdown == " ".join(PROSE)
    assert page.raw == ("@1 @2 @3" if windows == 1 else "@1\n\n@1\n\n@1")
    assert page.prompt_tokens == sum(len(p) for p in prompts)
    info = page.to_dict()["anchor"]
    assert info["windows"] == windows and info["lines"] == info["lines_total"] == 3 and not info["truncated"]


def test_a_window_the_engine_refuses_fails_its_page_and_the_run_goes_on():
    # The second window's request is refused after the first was submitted: the first is cancelled, its late
    # result is ignored, the page fails with the engine's message and the next input still parses.
    model, _ = recording_model(ANCHOR_VERSION)
    model.model.config.anchor.max_tokens = 80
    _reference_reply(model)
    runner_type = ScriptedRunner
    submit = runner_type.submit
    calls = []

    def refuse_second(self, request, on_token=None, on_done=None):
        calls.append(request)
        if len(calls) == 2:
            raise ValueError("prompt too long")
        return submit(self, request, on_token, on_done)

    runner_type.submit = refuse_second
    try:
        refused, after = parse(
            [plain_pdf(), image_bytes("png", (200, 300))], model=model, skip_blank=False, raise_errors=False
        )
    finally:
        runner_type.submit = submit
    assert refused.pages[0].error.endswith("page 1: prompt too long") and after.ok


def test_a_contents_page_is_read_from_its_lines_without_a_request():
    # docs/layout.md "Contents pages": under auto, a text-layer page that is a table of contents goes to the
    # rules over its lines (one nested list), not to the model; under "on" the model still reads it
    from pathlib import Path

    pdf = str(Path(__file__).resolve().parents[2] / "data/frozen-real/pdfs/pdf/rintro-p003.pdf")
    model, prompts = recording_model(ANCHOR_VERSION)
    page = parse(pdf, model=model).pages[0]
    assert prompts == [] and page.anchor.alone and "table of contents" in page.anchor.note
    assert "  - 1.1 The R environment 2\n" in page.markdown and "##" not in page.markdown
    parse(pdf, model=model, anchor="on")
    assert prompts  # one request per anchor window
