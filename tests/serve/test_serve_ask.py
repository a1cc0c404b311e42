"""Asking through the server: a chat whose text is a question (answered as `jocr ask` answers it, streamed
or not), `response_format` JSON schemas (the answer validates against the schema, or is refused), the
Reader's `X-Question` / `question`, and bad input on every route (a 4xx in OpenAI's error shape while a
good request goes on)."""

from __future__ import annotations

import base64
import json
import threading
from types import SimpleNamespace

import httpx
import jsonschema
import pytest
from PIL import Image
from serve_helpers import LiveServer, page_image, png_bytes
from starlette.testclient import TestClient

from jocr.documents.pages import LoadOptions, open_source
from jocr.engine.requests import GenerationResult
from jocr.engine.stats import RequestStats
from jocr.pipeline import LoadedModel
from jocr.pipeline.ask import (
    ANSWER_TOKENS,
    FIELDS_TOKENS,
    AskConfig,
    answer_text,
    answer_value,
    extract_prompt,
    parse_schema,
    question_anchor,
    question_ids,
)
from jocr.pipeline.ask_decoding import closes_json_object, fields_shape, question_shape
from jocr.serve.app import create_app
from jocr.serve.backend import EngineBackend
from jocr.serve.config import ServeConfig
from jocr.serve.openai import ApiError, ocr_prompt, parse_chat_request
from jocr.serve.service import OCRService, SamplingParams
from jocr.tokenizer import DEFAULT_PROMPT, PROMPTS

QUESTION = "What is the total amount?"
SCHEMA = {
    "type": "object",
    "properties": {
        "invoice_number": {"type": "string", "description": "the invoice's number"},
        "total": {"type": "number"},
        "paid": {"type": ["boolean", "null"]},
    },
    "required": ["invoice_number", "total", "paid"],
    "additionalProperties": False,
}


def invoice_pdf() -> bytes:
    from pdf_fixtures import text_pdf  # tests/documents, on the path through conftest.py

    return text_pdf(["Invoice No.: INV-2031   Total: $5.00"])


class ScriptedBackend(EngineBackend):
    """The real backend (preprocessing, prompts, anchors) whose engine answers every request with the text
    `answer`, recording each request's prompt ids."""

    answer = ""

    def submit(self, prompt_ids, views, params, on_token=None, on_done=None):
        self.prompts.append(list(prompt_ids))
        self.params.append(params)
        ids = self.tokenizer.encode(self.answer)[: params.max_tokens]
        result = GenerationResult(token_ids=ids, finish_reason="stop", stats=RequestStats())

        def run():
            if on_token is not None and ids:
                on_token(ids)
            on_done(result, None)

        threading.Thread(target=run, daemon=True).start()
        return SimpleNamespace(done=True, cancel=lambda: None)


def scripted_service(tiny_model, tokenizer, answer: str, **overrides) -> tuple[OCRService, ScriptedBackend]:
    settings = dict(
        max_batch=4,
        max_queue=8,
        default_max_tokens=256,
        max_tokens=512,
        allowed_hosts=("testserver",),
        anchor="on",
    )
    settings.update(overrides)
    config = ServeConfig(**settings)
    backend = ScriptedBackend.from_loaded(LoadedModel(model=tiny_model, tokenizer=tokenizer), 4, 8)
    backend.answer, backend.prompts, backend.params = answer, [], []
    return OCRService(backend, config), backend


def data_url(data: bytes, media: str) -> str:
    return f"data:{media};base64," + base64.b64encode(data).decode()


def chat(url: str, text: str | None = None, **extra) -> dict:
    content = [{"type": "image_url", "image_url": {"url": url}}]
    if text is not None:
        content.insert(0, {"type": "text", "text": text})
    return {"messages": [{"role": "user", "content": content}], **extra}


def json_schema(schema) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "invoice", "schema": schema, "strict": True}}


def parse(payload) -> object:
    return parse_chat_request(payload, max_tokens_cap=256, default_max_tokens=64, max_images=4)


# Telling a question from a reading prompt ---------------------------------------------------------------
@pytest.mark.parametrize(
    "text, prompt",
    [
        ("", DEFAULT_PROMPT),
        ("  ", DEFAULT_PROMPT),
        ("free", PROMPTS["free"]),
        ("Free OCR.", PROMPTS["free"]),
        ("free ocr", PROMPTS["free"]),
        ("<|grounding|>Convert the document to markdown.", PROMPTS["grounding"]),
        ("<|grounding|>OCR this image.", "<|grounding|>OCR this image."),
        ("<|grounding|>Locate <|ref|>the total<|/ref|> in the image.", None),  # kept verbatim (below)
        (QUESTION, None),
        ("Describe this image in detail.", None),
    ],
)
def test_reading_prompts_and_questions(text, prompt):
    got = ocr_prompt(text)
    if "Locate" in text:
        assert got == text  # any grounding prompt reads the page (its boxes become Markdown)
    else:
        assert got == prompt


def test_chat_request_tasks():
    url = data_url(png_bytes(page_image(0)), "image/png")
    task = parse(chat(url, f"  {QUESTION}\n"))
    assert (task.task, task.prompt, task.fields) == ("question", QUESTION, None)
    task = parse(chat(url, "<image>\nFree OCR."))  # DeepSeek-OCR's prompt as documented, <image> and all
    assert (task.task, task.prompt) == ("ocr", PROMPTS["free"])
    task = parse(chat(url, "Extract the invoice.", response_format=json_schema(SCHEMA)))
    assert task.task == "fields" and task.prompt == extract_prompt(parse_schema(SCHEMA))
    assert [(f.name, f.nullable, f.required) for f in task.fields] == [
        ("invoice_number", False, True),
        ("total", False, True),
        ("paid", True, True),
    ]
    assert parse(chat(url, QUESTION, response_format={"type": "text"})).task == "question"
    # unless the request says, an answer gets jocr ask's token budget, a schema's JSON jocr extract's
    budgets = [
        parse_chat_request(chat(url, text, **extra), 8192, 4096, 4).max_tokens
        for text, extra in ((None, {}), (QUESTION, {}), (None, {"response_format": json_schema(SCHEMA)}))
    ]
    assert budgets == [4096, ANSWER_TOKENS, FIELDS_TOKENS]
    assert parse(chat(url, QUESTION, max_tokens=200)).max_tokens == 200


RECURSIVE = {
    "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
    "$ref": "#",
}
# Under MAX_FIELDS fields, but their extraction prompt is over the question's byte budget.
LONG_FIELDS = {"type": "object", "properties": {f"field_{i:03d}_" + "x" * 30: {} for i in range(150)}}


@pytest.mark.parametrize(
    "text, response_format, message",
    [
        ("x" * 100_000, None, "at most 8192 characters"),
        ("é" * 2100, None, "question: the question is 4,200 bytes; at most 4,096"),
        ("<image> and <image>", None, "send the image as an image_url part"),
        (None, {"type": "json_object"}, "response_format type 'json_object' is not supported"),
        (
            None,
            json_schema({"type": "object", "properties": {f"f{i}": {} for i in range(10_000)}}),
            "at most 200",
        ),
        (None, json_schema(RECURSIVE), "$ref is not supported"),
        (None, json_schema(LONG_FIELDS), "bytes; at most 4,096"),
        (None, json_schema(["total", 7]), "field names must be non-empty strings, not 7"),
        (
            None,
            json_schema({"type": "object", "properties": {"a": {}}, "required": [1]}),
            "list of field names",
        ),
        (None, json_schema({"type": "object", "properties": {"a": {"type": "array"}}}), "not supported"),
        (None, {"type": "json_schema", "json_schema": {"name": "x"}}, "needs a schema"),
    ],
)
def test_bad_questions_and_schemas_are_400(text, response_format, message):
    url = data_url(png_bytes(page_image(0)), "image/png")
    extra = {} if response_format is None else {"response_format": response_format}
    with pytest.raises(ApiError) as info:
        parse(chat(url, text, **extra))
    assert info.value.status == 400 and message in info.value.message
    assert "\n" not in info.value.message and len(info.value.message) < 300


# Answers through the server -----------------------------------------------------------------------------
@pytest.fixture
def pdf_url():
    return data_url(invoice_pdf(), "application/pdf")


def test_chat_question_takes_the_ask_path(tiny_model, tokenizer, pdf_url):
    service, backend = scripted_service(tiny_model, tokenizer, " @1 ")
    client = TestClient(create_app(service.config, service))
    try:
        response = client.post("/v1/chat/completions", json=chat(pdf_url, QUESTION))
        assert response.status_code == 200, response.text
        # the prompt is the question and the page's anchor, built as `jocr ask` builds them
        loaded = backend.loaded
        with open_source(invoice_pdf(), LoadOptions()) as source:
            decision, lines = question_anchor(source, 0, None, loaded, AskConfig(anchor="on", ocr="none"))
        [anchor] = decision.texts
        [prompt] = backend.prompts
        assert backend.params[0].answer and backend.params[0].fields == ()  # decoded as an answer
        builder = backend.builder
        assert prompt == question_ids(builder, prompt.count(tokenizer.image_id), QUESTION, anchor)
        # the answer is the run it names, as `jocr ask` resolves it; not page Markdown
        content = response.json()["choices"][0]["message"]["content"]
        assert content == answer_text(" @1 ", anchor, QUESTION) == answer_value(lines.lines[0].text, QUESTION)
        # streamed, the deltas add up to the same answer
        with client.stream("POST", "/v1/chat/completions", json=chat(pdf_url, QUESTION, stream=True)) as r:
            assert r.status_code == 200
            events = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        deltas = [
            json.loads(e)["choices"][0]["delta"].get("content", "")
            for e in events[:-1]
            if json.loads(e)["choices"]
        ]
        assert "".join(deltas) == content
    finally:
        service.close()


def test_an_asking_request_is_decoded_as_jocr_ask_decodes_it(tiny_model, tokenizer):
    """The backend shapes an asking request's decoding with `jocr ask`'s rules (`request_shape`), keeps the
    request's own stop strings and budget, and leaves a reading request as it was."""
    backend = EngineBackend.from_loaded(LoadedModel(model=tiny_model, tokenizer=tokenizer), 2, 2)
    seen = []
    backend.scheduler = SimpleNamespace(
        submit=lambda request, on_token=None, on_done=None: seen.append(request)
    )
    anchored = tokenizer.build_prompt(QUESTION, 0, anchor="page 10x10\n@1 0,0 x")
    plain = tokenizer.build_prompt(QUESTION, 0)
    backend.submit(anchored, [], SamplingParams(20, answer=True))
    backend.submit(plain, [], SamplingParams(20, answer=True, stop=["END"]))
    backend.submit(plain, [], SamplingParams(300, answer=True, fields=("total",)))
    backend.submit(plain, [], SamplingParams(100, stop=["END"]))
    assert seen[0].first_banned_ids == question_shape(tokenizer).first_banned_ids
    assert seen[0].stop_strings == ("\n",) and seen[0].logprobs and seen[0].max_tokens == 20
    assert seen[1].first_banned_ids == question_shape(tokenizer).first_banned_ids
    assert seen[1].stop_strings == ("\n", "END")
    assert seen[2].stop_when is closes_json_object and seen[2].max_tokens == 300
    assert seen[2].first_banned_ids == fields_shape(tokenizer, ["total"]).first_banned_ids
    reading = seen[3]
    assert (reading.first_banned_ids, reading.stop_when, reading.logprobs) == (frozenset(), None, False)
    assert reading.stop_strings == ("END",) and reading.max_tokens == 100


def test_json_schema_answers_validate_or_are_refused(tiny_model, tokenizer, pdf_url):
    answer = '{"invoice_number": "INV-2031", "total": "$5.00", "paid": "maybe"}'
    service, backend = scripted_service(tiny_model, tokenizer, answer)
    client = TestClient(create_app(service.config, service))
    try:
        body = chat(pdf_url, response_format=json_schema(SCHEMA))
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        message = response.json()["choices"][0]["message"]
        value = json.loads(message["content"])
        jsonschema.validate(value, SCHEMA)
        assert value == {"invoice_number": "INV-2031", "total": 5.0, "paid": None}
        assert message["refusal"] is None
        assert backend.tokenizer.decode(backend.prompts[0]).count(extract_prompt(parse_schema(SCHEMA))) == 1
        # a required field the page does not give: refused, never invented
        backend.answer = '{"invoice_number": "INV-2031"}'
        message = client.post("/v1/chat/completions", json=body).json()["choices"][0]["message"]
        assert message["content"] is None and "required field 'total'" in message["refusal"]
        with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as r:
            chunks = [json.loads(x[6:]) for x in r.iter_lines() if x.startswith("data: {")]
        assert any(
            "required field 'total'" in (c["choices"] or [{}])[0].get("delta", {}).get("refusal", "")
            for c in chunks
        )
        # optional fields (not required) are left out; a found value is kept
        optional = {
            "type": "object",
            "properties": {"invoice_number": {"type": "string"}, "total": {"type": "number"}},
        }
        message = client.post(
            "/v1/chat/completions", json=chat(pdf_url, response_format=json_schema(optional))
        ).json()["choices"][0]["message"]
        assert json.loads(message["content"]) == {"invoice_number": "INV-2031"}
    finally:
        service.close()


def test_reader_question(tiny_model, tokenizer):
    service, backend = scripted_service(tiny_model, tokenizer, "INV-2031")
    client = TestClient(create_app(service.config, service))
    pdf = base64.b64encode(invoice_pdf()).decode()
    try:
        response = client.post("/", json={"pdf": pdf}, headers={"X-Question": "What is the invoice number?"})
        assert response.status_code == 200, response.text
        assert response.text == "INV-2031" and response.headers["x-answer-page"] == "1"
        assert tokenizer.decode(backend.prompts[0]).count("What is the invoice number?") == 1
        # the body's question, non-ASCII percent-encoded in the header, JSON with the page and the line's box
        response = client.post(
            "/", json={"pdf": pdf, "question": "发票号码是多少？"}, headers={"Accept": "application/json"}
        )
        body = response.json()
        assert body["question"] == "发票号码是多少？" and body["answer"] == "INV-2031" and body["page"] == 1
        assert body["box"] is not None and len(body["pages"]) == 1
        response = client.post("/", json={"pdf": pdf}, headers={"X-Question": "%E5%8F%91%E7%A5%A8%EF%BC%9F"})
        assert response.status_code == 200 and tokenizer.decode(backend.prompts[-1]).count("发票？") == 1
    finally:
        service.close()


# Bad input on every route, with a good request in flight ----------------------------------------------
def test_bad_input_is_4xx_and_a_good_request_goes_on(tiny_model, tokenizer):
    service, backend = scripted_service(tiny_model, tokenizer, "INV-2031")
    server = LiveServer(create_app(service.config, service))
    pdf = invoice_pdf()
    pdf_url = data_url(pdf, "application/pdf")
    blank = data_url(png_bytes(Image.new("RGB", (320, 240), "white")), "image/png")
    b64 = base64.b64encode(pdf).decode()
    bad = [
        ("/v1/chat/completions", chat(pdf_url, "q" * 100_000), {}),
        ("/v1/chat/completions", chat(pdf_url, "é" * 3000), {}),
        (
            "/v1/chat/completions",
            chat(pdf_url, response_format=json_schema({f"f{i}": "" for i in range(10_000)})),
            {},
        ),
        ("/v1/chat/completions", chat(pdf_url, response_format=json_schema(RECURSIVE)), {}),
        ("/v1/chat/completions", chat(pdf_url, response_format=json_schema(LONG_FIELDS)), {}),
        ("/v1/chat/completions", chat(pdf_url, response_format=json_schema([1, 2])), {}),
        ("/v1/chat/completions", chat(blank, QUESTION), {}),
        ("/", {"pdf": b64, "question": "q" * 100_000}, {}),
        ("/", {"pdf": b64, "question": "   "}, {}),
        ("/", {"pdf": b64, "question": 7}, {}),
        ("/", {"pdf": b64}, {"X-Question": ""}),
        ("/", {"pdf": b64}, {"X-Question": "q" * 100_000}),
        ("/", {"pdf": b64}, {"X-Question": "%FF%FE"}),
        (
            "/",
            {"image": base64.b64encode(png_bytes(Image.new("RGB", (320, 240), "white"))).decode()},
            {"X-Question": QUESTION},
        ),
    ]
    good: list = []

    def ask_good():
        with httpx.Client(base_url=server.url, timeout=120) as c:
            good.append(c.post("/v1/chat/completions", json=chat(pdf_url, QUESTION)))

    try:
        thread = threading.Thread(target=ask_good)
        thread.start()
        with httpx.Client(base_url=server.url, timeout=120) as c:
            for path, body, headers in bad:
                response = c.post(path, json=body, headers=headers)
                assert 400 <= response.status_code < 500, (path, response.status_code, response.text[:200])
                error = response.json()["error"]
                assert error["type"] == "invalid_request_error" and "\n" not in error["message"]
        thread.join(120)
        assert good[0].status_code == 200
        assert good[0].json()["choices"][0]["message"]["content"] == "INV-2031"
        assert service.admission.in_flight == 0
    finally:
        server.stop()
        service.close()


def test_openai_client_parses_a_pydantic_model(tiny_model, tokenizer):
    """The official client's structured outputs (`chat.completions.parse` with a pydantic model: its strict
    JSON schema, an Optional field as anyOf [T, null]) get a JSON answer the client parses into the model."""
    import openai
    from pydantic import BaseModel

    class Invoice(BaseModel):
        invoice_number: str
        total: float
        due_date: str | None

    service, backend = scripted_service(
        tiny_model, tokenizer, '{"invoice_number": "INV-2031", "total": "$5.00"}'
    )
    server = LiveServer(create_app(service.config, service))
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        content = [{"type": "image_url", "image_url": {"url": data_url(invoice_pdf(), "application/pdf")}}]
        reply = client.chat.completions.parse(
            model="jocr", messages=[{"role": "user", "content": content}], response_format=Invoice
        )
        assert reply.choices[0].message.parsed == Invoice(invoice_number="INV-2031", total=5.0, due_date=None)
        reply = client.chat.completions.create(
            model="jocr",
            messages=[{"role": "user", "content": [*content, {"type": "text", "text": QUESTION}]}],
            max_tokens=128,  # the scripted answer is longer than a question's default budget
        )
        assert reply.choices[0].message.content == '{"invoice_number": "INV-2031", "total": "$5.00"}'
    finally:
        server.stop()
        service.close()


def test_the_caption_prompt_takes_the_caption_path(tiny_model, tokenizer, pdf_url):
    """A chat with the caption prompt asks as `jocr parse --task caption` asks: the caption prompt and the
    image's own anchor (one window), decoded as a caption (a line of text, not run references alone), the
    references in it resolved."""
    from jocr.pipeline.ask_decoding import CAPTION_TOKENS, caption_shape
    from jocr.pipeline.caption import caption_ids

    url = data_url(png_bytes(page_image(0)), "image/png")
    for text in ("caption", PROMPTS["caption"]):
        task = parse(chat(url, text))
        assert (task.task, task.prompt, task.asks) == ("caption", PROMPTS["caption"], True)
    assert parse_chat_request(chat(url, "caption"), 8192, 4096, 4).max_tokens == CAPTION_TOKENS
    service, backend = scripted_service(tiny_model, tokenizer, "An invoice of @1")
    client = TestClient(create_app(service.config, service))
    try:
        response = client.post("/v1/chat/completions", json=chat(pdf_url, "caption"))
        assert response.status_code == 200, response.text
        with open_source(invoice_pdf(), LoadOptions()) as source:
            decision, lines = question_anchor(
                source, 0, None, backend.loaded, AskConfig(anchor="on", ocr="none")
            )
        anchor = decision.texts[0]
        [prompt] = backend.prompts
        assert prompt == caption_ids(backend.builder, prompt.count(tokenizer.image_id), anchor)
        assert backend.params[0].caption and backend.params[0].answer
        content = response.json()["choices"][0]["message"]["content"]
        assert content == "An invoice of " + lines.lines[0].text
    finally:
        service.close()
    seen = []
    backend = EngineBackend.from_loaded(LoadedModel(model=tiny_model, tokenizer=tokenizer), 2, 2)
    backend.scheduler = SimpleNamespace(
        submit=lambda request, on_token=None, on_done=None: seen.append(request)
    )
    anchored = tokenizer.build_prompt(PROMPTS["caption"], 0, anchor="page 10x10\n@1 0,0 x")
    backend.submit(anchored, [], SamplingParams(20, answer=True, caption=True))
    assert seen[0].first_banned_ids == caption_shape(tokenizer).first_banned_ids
    assert seen[0].stop_strings == ("\n",) and seen[0].max_tokens == 20


def text_image() -> Image.Image:
    """A scanned page's picture: two lines of 30 px DejaVu Sans, no text layer."""
    from PIL import ImageDraw

    from jocr.synth.fonts import get_font

    image = Image.new("RGB", (900, 400), "white")
    draw = ImageDraw.Draw(image)
    font = get_font("sans", "regular", 30)
    for text, y in (("Invoice number INV-2031", 80), ("Seventy bright yellow kites", 200)):
        draw.text((80, y), text, fill="black", font=font)
    return image


def test_jocr_serve_ocr_reads_a_scan_asked_a_question(tiny_model, tokenizer):
    """`jocr serve --ocr` (ServeConfig.ocr) gives a question on an image the scan's OCR lines as its anchor,
    as `jocr ask --ocr` does; by default (none) the image is asked alone. A page read, not asked, is never
    OCR'd."""
    import argparse

    from jocr.cli import serve_cmd

    parser = argparse.ArgumentParser()
    serve_cmd.add_arguments(parser)
    assert serve_cmd.build_config(parser.parse_args([])).ocr == "none"
    assert serve_cmd.build_config(parser.parse_args(["--ocr", "tesseract"])).ocr == "tesseract"
    url = data_url(png_bytes(text_image()), "image/png")
    for ocr, anchored in (("none", False), ("tesseract", True)):
        service, backend = scripted_service(tiny_model, tokenizer, "Seventy", ocr=ocr)
        client = TestClient(create_app(service.config, service))
        try:
            response = client.post("/v1/chat/completions", json=chat(url, "What flew over the hills?"))
            assert response.status_code == 200, response.text
            prompt = tokenizer.decode(backend.prompts[0])
            assert ("yellow kites" in prompt) is anchored, (ocr, prompt[-200:])
            response = client.post("/v1/chat/completions", json=chat(url, "ocr"))  # reading: no OCR anchor
            assert response.status_code == 200 and "yellow kites" not in tokenizer.decode(backend.prompts[1])
        finally:
            service.close()
