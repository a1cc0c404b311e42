"""HTTP behaviour around the model: authentication, overload (429 + Retry-After, never a hang), clients that
go away, metrics, streaming that adds up to the final post-processed text, and the `jocr serve` command."""

from __future__ import annotations

import asyncio
import base64
import threading

import httpx
import pytest
from serve_helpers import LiveServer, gated_service, make_service, page_image, png_bytes, wait_for
from starlette.testclient import TestClient

from jocr.cli import main as cli_main
from jocr.layout.postprocess import postprocess_page
from jocr.serve import service as service_mod
from jocr.serve.app import create_app
from jocr.serve.config import ServeConfig
from jocr.serve.service import OCRService, SamplingParams, Transcription


def _chat_body(image=None, **extra) -> dict:
    data = base64.b64encode(png_bytes(image or page_image(0))).decode()
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    return {"messages": [{"role": "user", "content": [part]}], **extra}


def test_api_keys(tiny_model, tokenizer):
    service = make_service(tiny_model, tokenizer, api_keys=("secret-1", "secret-2"))
    client = TestClient(create_app(service.config, service))
    try:
        assert client.get("/health").status_code == 200  # health never needs a key
        assert client.get("/").status_code == 200  # the demo page itself is public; its API calls are not
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "secret-1"}):
            response = client.get("/v1/models", headers=headers)
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json()["error"]["type"] == "authentication_error"
        assert client.post("/v1/chat/completions", json=_chat_body()).status_code == 401
        assert client.get("/https://example.com/a.pdf").status_code == 401
        assert client.get("/metrics").status_code == 401
        response = client.get("/v1/models", headers={"Authorization": "Bearer secret-2"})
        assert response.status_code == 200
        assert response.json()["data"][0]["id"] == "jocr-tiny"
    finally:
        service.close()


def test_overload_answers_429_with_retry_after(tiny_model, tokenizer):
    service, gate = gated_service(tiny_model, tokenizer)
    server = LiveServer(create_app(service.config, service))
    try:
        results = []

        def send():
            with httpx.Client(base_url=server.url, timeout=60) as c:
                results.append(c.post("/v1/chat/completions", json=_chat_body()).status_code)

        threads = [threading.Thread(target=send) for _ in range(2)]
        for t in threads:
            t.start()
        wait_for(lambda: service.admission.in_flight == 2)  # one decoding, one queued: capacity reached
        with httpx.Client(base_url=server.url, timeout=60) as c:
            # Refused at once, not after waiting for a slot: both slots stay held at the gate until it opens
            # below, so an answer that waited for one could not come (the client's timeout would end it).
            refused = c.post("/v1/chat/completions", json=_chat_body())
            assert refused.status_code == 429
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["type"] == "rate_limit_error"
            reader = c.post("/", json={"image": base64.b64encode(png_bytes(page_image(1))).decode()})
            assert reader.status_code == 429
            gate.set()
            for t in threads:
                t.join(60)
            assert results == [200, 200]
            assert c.get("/health").json()["in_flight"] == 0
            metrics = c.get("/metrics").text
        assert "jocr_rejected_total 2" in metrics
        assert 'jocr_requests_total{endpoint="/v1/chat/completions",status="429"} 1' in metrics
        assert 'jocr_requests_total{endpoint="/v1/chat/completions",status="200"} 2' in metrics
        assert "jocr_pages_total 2" in metrics
        assert 'jocr_request_latency_seconds_count{endpoint="/v1/chat/completions"} 3' in metrics
    finally:
        gate.set()
        server.stop()


def test_client_gone_mid_stream_frees_its_slot(tiny_model, tokenizer):
    service, gate = gated_service(tiny_model, tokenizer)
    server = LiveServer(create_app(service.config, service))
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            with c.stream("POST", "/v1/chat/completions", json=_chat_body(stream=True)) as response:
                assert response.status_code == 200
                # The line iterator is held: a dropped one is closed at once, which closes the connection
                # (httpcore's stream) and raced the check below against the server noticing it.
                lines = response.iter_lines()
                assert next(lines).startswith("data: ")
                assert service.admission.in_flight == 1  # still connected, held at the gate
            # The connection is closed with the generation still held at the gate.
            wait_for(lambda: service.admission.in_flight == 0)
            gate.set()
            assert c.post("/v1/chat/completions", json=_chat_body()).status_code == 200
    finally:
        gate.set()
        server.stop()


class ScriptedGenerator:
    """A generator that emits fixed token chunks, to test how streaming meets post-processing."""

    model_id = "scripted"

    def __init__(self, tokenizer, raw: str, chunk: int):
        self.tokenizer = tokenizer
        ids = tokenizer.encode(raw)
        self.chunks = [ids[i : i + chunk] for i in range(0, len(ids), chunk)]
        self.ids = ids

    def prepare(self, image):
        return None, 0

    def prompt_ids(self, prompt, counts, anchor=None):
        return [0]

    def submit(self, prompt_ids, views, params, on_token, on_done):
        class Result:
            token_ids = self.ids
            finish_reason = "length"
            stats = None

        for chunk in self.chunks:
            on_token(chunk)
        on_done(Result(), None)
        return object()

    def cancel(self, handle):
        pass

    def decode(self, ids):
        return self.tokenizer.decode(ids)

    def finish(self, raw, size, finish_reason):
        return postprocess_page(raw, size[0], size[1], finish_reason)[0]


RAW = (
    "<|ref|>title<|/ref|><|det|>[[10, 20, 300, 40]]<|/det|>\n# Quarterly  report   \n\n\n\n"
    "Revenue grew by $x^2 + 1$ percent,   \r\nsee table:\n<table><tr><td>a</td><td>b</td></tr>"
    "<tr><td>1</td><td>2\u00e9\u4e2d</td>"
)


@pytest.mark.parametrize("chunk", [1, 3, 7])
def test_stream_deltas_add_up_to_final_text(tokenizer, monkeypatch, chunk):
    monkeypatch.setattr(service_mod, "STREAM_INTERVAL_S", 0.0)
    service = OCRService(ScriptedGenerator(tokenizer, RAW, chunk), ServeConfig())
    service.admission.acquire()

    async def collect():
        items = []
        submitted = await service.submit([page_image(0)], "ocr", SamplingParams(max_tokens=10))
        async for item in service.transcribe(submitted):
            items.append(item)
        return items

    items = asyncio.run(collect())
    service.close()
    final = items[-1]
    assert isinstance(final, Transcription)
    deltas = items[:-1]
    assert len(deltas) > 3  # streamed in pieces, not in one piece at the end
    expected = postprocess_page(RAW, 320, 240, "length")[0]
    assert final.text == expected
    assert "".join(deltas) == expected
    assert "<|" not in "".join(deltas)


def test_cli_errors_are_one_line(capsys, tmp_path):
    assert cli_main(["serve", "--max-batch", "0"]) == 2
    assert capsys.readouterr().err.strip().endswith("--max-batch must be >= 1")
    assert cli_main(["serve", "--model", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no model directory" in err


def test_cli_vllm_engine_hands_over_or_explains(capsys, tmp_path, monkeypatch):
    """`--engine vllm` passes the model, address and draft depth to the vLLM launcher, or says what is
    missing."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        assert cli_main(["serve", "--engine", "vllm", "--model", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "jocr[vllm]" in err
        monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    import jocr.integrations.vllm as vllm_integration

    seen = []
    monkeypatch.setattr(vllm_integration, "main", lambda argv: seen.append(argv) or 0)
    args = ["serve", "--engine", "vllm", "--model", str(tmp_path), "--port", "8123"]
    assert cli_main(args + ["--num-speculative-tokens", "1", "--api-key", "k"]) == 0
    expected = [str(tmp_path), "--host", "127.0.0.1", "--port", "8123", "-k", "1", "--cpu", "--api-key", "k"]
    assert seen == [expected]
    assert cli_main(["serve", "--engine", "vllm"]) == 2
    assert "needs --model" in capsys.readouterr().err


def test_cli_serves_a_model_directory(tiny_model, tokenizer, tmp_path, monkeypatch):
    """`jocr serve --model DIR` loads the directory and builds the app it hands to uvicorn (captured here and
    served in-process: a subprocess would spend most of the test importing torch)."""
    import uvicorn

    tiny_model.save_pretrained(tmp_path)
    tokenizer.save(tmp_path / "tokenizer.json")
    captured = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: captured.update(app=app, **kw))
    monkeypatch.setenv("JOCR_API_KEY", "k")
    args = ["serve", "--model", str(tmp_path), "--port", "8123", "--max-batch", "2", "--max-queue", "3"]
    assert cli_main(args) == 0
    assert captured["host"] == "127.0.0.1" and captured["port"] == 8123
    client = TestClient(captured["app"])
    try:
        headers = {"Authorization": "Bearer k"}
        assert client.get("/v1/models").status_code == 401
        assert client.get("/v1/models", headers=headers).json()["data"][0]["id"] == tmp_path.name
        assert client.get("/health").json()["capacity"] == 5
        response = client.post("/v1/chat/completions", json=_chat_body(max_tokens=8), headers=headers)
        assert response.status_code == 200, response.text
        assert 1 <= response.json()["usage"]["completion_tokens"] <= 8
    finally:
        captured["app"].state.service.close()


@pytest.mark.parametrize("stream", [False, True])
def test_engine_refusal_is_a_400_before_streaming(tiny_model, tokenizer, stream):
    """A request the engine refuses (prompt + max_tokens over its max_seq_len) is a 400, streamed or not:
    streaming requests are submitted before the status line goes out."""
    service = make_service(tiny_model, tokenizer, max_tokens=10**6)
    client = TestClient(create_app(service.config, service))
    try:
        response = client.post("/v1/chat/completions", json=_chat_body(max_tokens=900_000, stream=stream))
        assert response.status_code == 400
        assert "max_seq_len" in response.json()["error"]["message"]
        assert service.admission.in_flight == 0
    finally:
        service.close()
