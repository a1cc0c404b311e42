"""The formula prompt on the server: read by the bundle's formula reader when the model has one (as `jocr
parse --task formula` reads an image), else by the model under that prompt; streamed or not."""

from __future__ import annotations

import json

from serve_helpers import page_image, png_bytes
from starlette.testclient import TestClient
from test_serve_ask import chat, data_url, parse, scripted_service

from jocr.engine.formula import FormulaReading
from jocr.serve.app import create_app
from jocr.tokenizer import PROMPTS


def test_the_formula_prompt_is_its_own_task_and_asks_nothing():
    url = data_url(png_bytes(page_image(0)), "image/png")
    for text in ("formula", PROMPTS["formula"]):
        task = parse(chat(url, text))
        assert (task.task, task.prompt, task.asks) == ("formula", PROMPTS["formula"], False)


def _served(tiny_model, tokenizer, tiny_formula_reader, monkeypatch, readings):
    service, backend = scripted_service(tiny_model, tokenizer, "from the engine")
    reader = tiny_formula_reader()
    backend.loaded.formula_loader = lambda: (reader, None)
    monkeypatch.setattr("jocr.engine.formula.read_strips", lambda model, vocab, strips, max_tokens: readings)
    return service, backend, TestClient(create_app(service.config, service))


def test_a_formula_request_is_read_by_the_formula_reader(
    tiny_model, tokenizer, tiny_formula_reader, monkeypatch
):
    url = data_url(png_bytes(page_image(0)), "image/png")
    service, backend, client = _served(tiny_model, tokenizer, tiny_formula_reader, monkeypatch,
                                       [FormulaReading("x^{2}", True)])  # fmt: skip
    try:
        response = client.post("/v1/chat/completions", json=chat(url, "formula"))
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["choices"][0]["message"]["content"] == "$$\nx^{2}\n$$"
        assert body["choices"][0]["finish_reason"] == "stop" and backend.prompts == []  # not the engine
        streamed = client.post("/v1/chat/completions", json=chat(url, "formula", stream=True))
        events = [line[6:] for line in streamed.text.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c.get("choices"))
        assert text == "$$\nx^{2}\n$$" and chunks[-1]["choices"][0]["finish_reason"] == "stop"
    finally:
        service.close()


def test_a_crop_read_as_no_formula_gets_an_empty_answer(
    tiny_model, tokenizer, tiny_formula_reader, monkeypatch
):
    url = data_url(png_bytes(page_image(0)), "image/png")
    service, _, client = _served(tiny_model, tokenizer, tiny_formula_reader, monkeypatch,
                                 [FormulaReading("x x x x", False)])  # fmt: skip
    try:
        response = client.post("/v1/chat/completions", json=chat(url, "formula"))
        assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == ""
    finally:
        service.close()


def test_without_a_formula_reader_the_model_reads_under_the_formula_prompt(tiny_model, tokenizer):
    url = data_url(png_bytes(page_image(0)), "image/png")
    service, backend = scripted_service(tiny_model, tokenizer, "E=mc^2")
    client = TestClient(create_app(service.config, service))
    try:
        response = client.post("/v1/chat/completions", json=chat(url, "formula"))
        assert response.status_code == 200, response.text
        (prompt,) = backend.prompts
        assert tokenizer.decode(prompt).endswith(PROMPTS["formula"])
    finally:
        service.close()
