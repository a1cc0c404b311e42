"""Asking scans and photos (their lines read by OCR for the anchor and the answer's box), optional schema
fields and answers that validate against a schema, and bad input on the command line (one-line errors,
exit status 2; a blank page is not asked)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from PIL import Image
from test_ask import QUESTION, bundle_dir, cli, scripted  # noqa: F401 (bundle_dir: a fixture)
from test_ocr_pages import png, text_page

from jocr.pipeline import AskError, ask, extract
from jocr.pipeline.ask import AskConfig, FieldSpec, parse_schema, schema_answer


def test_an_image_is_asked_with_its_ocr_lines(bundle_dir):  # noqa: F811
    loaded, engine = scripted(bundle_dir, "Seventy bright yellow kites")
    answer = ask(png(text_page()), "What flew over the hills?", model=loaded, ocr="tesseract")
    [prompt] = engine.prompts
    assert "<anchor>" in prompt and "yellow kites flew" in prompt  # the OCR'd lines are the anchor
    assert answer.answer == "Seventy bright yellow kites" and answer.pages[0].anchored
    x0, y0, x1, y1 = answer.box  # the OCR'd line it is a span of, in the image's pixels (drawn at y 220)
    assert 60 <= x0 < x1 <= 900 and 200 <= y0 < y1 <= 270
    # without OCR the image is asked alone, and the answer has no box
    loaded, engine = scripted(bundle_dir, "Seventy bright yellow kites")
    answer = ask(png(text_page()), "What flew over the hills?", model=loaded, ocr="none")
    assert "<anchor>" not in engine.prompts[0] and answer.box is None and not answer.pages[0].anchored


def test_a_blank_page_is_not_asked(bundle_dir):  # noqa: F811
    loaded, engine = scripted(bundle_dir, "anything")
    blank = png(Image.new("RGB", (600, 800), "white"))
    answer = ask(blank, QUESTION, model=loaded)
    assert engine.prompts == [] and answer.answer == "" and "is blank: nothing to ask" in answer.error
    result = extract(blank, ["total"], model=loaded)
    assert result.values == {"total": None} and "is blank" in result.error


def test_optional_fields_and_schema_answers():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": ["number", "null"]}, "c": {"type": "integer"}},
        "required": ["a", "b"],
    }
    fields = parse_schema(schema)
    assert fields == [
        FieldSpec("a", "string", required=True),
        FieldSpec("b", "number", nullable=True, required=True),
        FieldSpec("c", "integer"),
    ]
    for values in ({"a": "x", "b": None, "c": None}, {"a": "x", "b": 2.5, "c": 3}):
        obj, refusal = schema_answer(values, fields)
        jsonschema.validate(obj, schema)
        assert refusal is None and obj["a"] == "x" and ("c" in obj) == (values["c"] is not None)
    obj, refusal = schema_answer({"a": None, "b": 1.0, "c": 1}, fields)
    assert obj is None and refusal == "no value on the page for the required field 'a'"
    for bad, message in (
        ({**schema, "required": ["z"]}, "not among the properties"),
        ({**schema, "required": "a"}, "list of field names"),
        ({"type": "object", "properties": {"a": {"type": ["string", "number"]}}}, "not supported"),
    ):
        with pytest.raises(AskError, match=message):
            parse_schema(bad)
    with pytest.raises(AskError, match="ocr must be one of"):
        AskConfig(ocr="paddle")


def test_cli_bad_input_is_one_line_exit_2(tmp_path, model_dir, capsys):
    from pdf_fixtures import text_pdf

    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(text_pdf(["one"]))
    blank = tmp_path / "blank.png"
    blank.write_bytes(png(Image.new("RGB", (600, 800), "white")))
    schemas = {
        "wide": {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(10_000)}},
        "recursive": {
            "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
            "$ref": "#",
        },
        "names": [1, "total"],
        "required": {"type": "object", "properties": {"a": {}}, "required": [1]},
    }
    for name, schema in schemas.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(schema))
    cases = [
        (["ask", str(pdf), "q" * 100_000], "the question is 100,000 bytes; at most 4,096"),
        (["ask", str(pdf), ""], "the question is empty"),
        (["ask", str(blank), QUESTION], "is blank: nothing to ask"),
        (["extract", str(pdf), "--schema", str(tmp_path / "wide.json")], "10,000 fields; at most 200"),
        (["extract", str(pdf), "--schema", str(tmp_path / "recursive.json")], "$ref is not supported"),
        (["extract", str(pdf), "--schema", str(tmp_path / "names.json")], "non-empty strings, not 1"),
        (["extract", str(pdf), "--schema", str(tmp_path / "required.json")], "list of field names"),
    ]
    for args, message in cases:
        code, out, err = cli(capsys, [*args, "--model", str(model_dir), "--max-tokens", "2"])
        assert code == 2 and message in err and err.count("\n") == 1 and not out, (args, err[:300])
        assert len(err) < 300


def test_pydantic_schemas_read_as_fields():
    """What the openai client sends for a pydantic model (`client.beta.chat.completions.parse`): titles,
    `additionalProperties`, and `anyOf` [T, null] for an Optional field."""
    schema = {
        "title": "Invoice",
        "type": "object",
        "properties": {
            "number": {"title": "Number", "type": "string"},
            "total": {"anyOf": [{"type": "number"}, {"type": "null"}], "title": "Total"},
        },
        "required": ["number", "total"],
        "additionalProperties": False,
    }
    assert parse_schema(schema) == [
        FieldSpec("number", "string", required=True),
        FieldSpec("total", "number", nullable=True, required=True),
    ]
    for options in ([{"type": "number"}, {"type": "string"}], [{"type": "number"}], "x"):
        with pytest.raises(AskError, match="not supported"):
            parse_schema({"type": "object", "properties": {"a": {"anyOf": options}}})


def test_python_api_bad_input_is_one_line_and_asks_nothing(bundle_dir):  # noqa: F811
    """The issue's bad input through `jocr.ask` / `jocr.extract`: an AskError of one line before any request
    reaches the engine; a page with no text (blank) is an answer with its error, not an exception."""
    from pdf_fixtures import text_pdf

    loaded, engine = scripted(bundle_dir, "anything")
    pdf = text_pdf(["Total: $5.00"])
    recursive = {
        "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
        "$ref": "#",
    }
    cases = [
        (lambda: ask(pdf, "q" * 100_000, model=loaded), "the question is 100,000 bytes; at most 4,096"),
        (lambda: ask(pdf, "", model=loaded), "the question is empty"),
        (lambda: extract(pdf, [f"f{i}" for i in range(10_000)], model=loaded), "10,000 fields; at most 200"),
        (lambda: extract(pdf, recursive, model=loaded), "$ref is not supported"),
        (lambda: extract(pdf, ["total", 7], model=loaded), "non-empty strings, not 7"),
    ]
    for call, message in cases:
        with pytest.raises(AskError) as info:
            call()
        assert message in str(info.value) and "\n" not in str(info.value)
    assert engine.prompts == []
    blank = png(Image.new("RGB", (600, 800), "white"))
    assert "is blank: nothing to ask" in ask(blank, QUESTION, model=loaded).error
    assert ask(pdf, QUESTION, model=loaded).error is None and len(engine.prompts) == 1  # others unaffected
