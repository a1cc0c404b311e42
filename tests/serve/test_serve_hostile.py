"""Hostile input against a real server: every case is a 4xx with a clear one-line message, and the server
stays healthy afterwards. SSRF targets are refused directly, through the Reader and behind a redirect from a
loopback file server that the fetch limits allow (that exact endpoint only)."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image
from serve_helpers import page_image, png_bytes


def _data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode()


def _chat(url: str) -> dict:
    return {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]}


def _huge_png() -> bytes:
    """A valid 10000 x 10000 (100-megapixel) image that compresses to a few kB: a decompression bomb."""
    buf = io.BytesIO()
    Image.new("1", (10_000, 10_000), 1).save(buf, format="PNG")
    return buf.getvalue()


SSRF_TARGETS = [
    ("http://127.0.0.1:{live_port}/health", "loopback"),
    ("http://[::1]:80/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://10.0.0.1/doc.pdf", "private"),
    ("http://localhost:{live_port}/", "loopback"),
    ("file:///etc/passwd", "scheme"),
    ("http://[::169.254.169.254]/latest/meta-data/", "metadata"),  # IPv4-compatible
    ("http://[::ffff:0:169.254.169.254]/", "metadata"),  # IPv4-translated
    ("http://[64:ff9b:1::a9fe:a9fe]/", "metadata"),  # NAT64 local-use
]
REDIRECT_TARGETS = [
    ("http://127.0.0.1:{live_port}/health", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://10.0.0.1/", "private"),
    ("file:///etc/passwd", "scheme 'file'"),
]


def _cases():
    """(name, method, path, body (bytes | dict), headers, expected status, expected message part)."""
    cases = [
        ("malformed JSON", "POST", "/v1/chat/completions", b'{"messages": [', {}, 400, "malformed JSON"),
        ("JSON not an object", "POST", "/v1/chat/completions", b"[1, 2]", {}, 400, "JSON object"),
        ("body not UTF-8", "POST", "/v1/chat/completions", b"\xff\xfe{", {}, 400, "JSON"),
        ("empty body", "POST", "/v1/chat/completions", b"", {}, 400, "empty"),
        (
            "no image",
            "POST",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "hello"}]},
            {},
            400,
            "no image",
        ),
        (
            "bad base64",
            "POST",
            "/v1/chat/completions",
            _chat("data:image/png;base64,@@not base64@@"),
            {},
            400,
            "invalid base64",
        ),
        (
            "non-image bytes",
            "POST",
            "/v1/chat/completions",
            _chat(_data_url(b"just some text, not an image at all")),
            {},
            400,
            "unsupported file type",
        ),
        (
            "truncated PNG",
            "POST",
            "/v1/chat/completions",
            _chat(_data_url(png_bytes(page_image(0))[:200])),
            {},
            400,
            "image",
        ),
        (
            "100-megapixel image",
            "POST",
            "/v1/chat/completions",
            _chat(_data_url(_huge_png())),
            {},
            400,
            "100,000,000 pixels",
        ),
        (
            "unsupported option",
            "POST",
            "/v1/chat/completions",
            {**_chat(_data_url(b"x")), "tools": []},
            {},
            400,
            "unsupported parameter: tools",
        ),
        ("n > 1", "POST", "/v1/chat/completions", {**_chat(_data_url(b"x")), "n": 3}, {}, 400, "n"),
        (
            "audio part",
            "POST",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]},
            {},
            400,
            "messages.0.content",
        ),
        (
            "temperature out of range",
            "POST",
            "/v1/chat/completions",
            {**_chat(_data_url(b"x")), "temperature": 9},
            {},
            400,
            "temperature",
        ),
        (
            "max_tokens over the cap",
            "POST",
            "/v1/chat/completions",
            {**_chat(_data_url(b"x")), "max_tokens": 10**9},
            {},
            400,
            "max_tokens",
        ),
        (
            "unknown model",
            "POST",
            "/v1/chat/completions",
            {**_chat(_data_url(b"x")), "model": "gpt-4o"},
            {},
            404,
            "not found",
        ),
        (
            "body over the limit",
            "POST",
            "/v1/chat/completions",
            b"{" + b" " * (5 * 1024 * 1024) + b"}",
            {},
            413,
            "too large",
        ),
        ("reader: bad X-Page", "POST", "/", {"pdf": "JVBERi0="}, {"X-Page": "two"}, 400, "X-Page"),
        (
            "reader: unknown X-Respond-With",
            "POST",
            "/",
            {"pdf": "JVBERi0="},
            {"X-Respond-With": "docx"},
            400,
            "X-Respond-With",
        ),
        ("reader: bad X-Timeout", "POST", "/", {"pdf": "JVBERi0="}, {"X-Timeout": "soon"}, 400, "X-Timeout"),
        ("reader: bad base64 pdf", "POST", "/", {"pdf": "%%%%"}, {}, 400, "invalid base64"),
        (
            "reader: not a PDF",
            "POST",
            "/",
            {"pdf": base64.b64encode(b"hello").decode()},
            {},
            400,
            "unsupported file type",
        ),
        (
            "reader: two inputs",
            "POST",
            "/",
            {"url": "https://example.com/a.pdf", "pdf": "JVBERi0="},
            {},
            400,
            "exactly one",
        ),
        (
            "reader: base64 HTML (web pages are read by URL)",
            "POST",
            "/",
            {"file": base64.b64encode(b"<!doctype html><p>hi</p>").decode()},
            {},
            400,
            "unsupported file type",
        ),
        (
            "reader: X-Page out of range",
            "GET",
            "/{files}/doc.pdf",
            None,
            {"X-Page": "9"},
            400,
            "out of range",
        ),
    ]
    ok = _chat(_data_url(b"x"))  # a valid request shape (the image is never reached)
    pdf = base64.b64encode(b"%PDF-1.4 not really").decode()
    cases += [
        # Bodies whose parsing alone was the attack: refused before json.loads builds anything.
        ("JSON nested 100,000 deep", "POST", "/v1/chat/completions", b"[" * 100_000, {}, 400, "too deep"),
        (
            "JSON nested 5,000 deep",
            "POST",
            "/v1/chat/completions",
            b"[" * 5000 + b"]" * 5000,
            {},
            400,
            "deep",
        ),
        (
            "30,000 metadata keys",
            "POST",
            "/v1/chat/completions",
            {**ok, "metadata": {f"k{i}": "v" for i in range(30_000)}},
            {},
            400,
            "too many JSON values",
        ),
        (
            "17 metadata keys",
            "POST",
            "/v1/chat/completions",
            {**ok, "metadata": {f"k{i}": "v" for i in range(17)}},
            {},
            400,
            "metadata",
        ),
        (
            "metadata value of 513 characters",
            "POST",
            "/v1/chat/completions",
            {**ok, "metadata": {"k": "v" * 513}},
            {},
            400,
            "metadata",
        ),
        (
            "100 kB prompt",
            "POST",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "x" * 100_000}]},
            {},
            400,
            "messages.0.content",
        ),
        (
            "prompt over the limit across parts",
            "POST",
            "/v1/chat/completions",
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "y" * 5000}] * 2
                        + [{"type": "image_url", "image_url": {"url": _data_url(b"x")}}],
                    },
                ]
            },
            {},
            400,
            "prompt text over",
        ),
        (
            "user of 1,000 characters",
            "POST",
            "/v1/chat/completions",
            {**ok, "user": "u" * 1000},
            {},
            400,
            "user",
        ),
        (
            "stop of 300 characters",
            "POST",
            "/v1/chat/completions",
            {**ok, "stop": "s" * 300},
            {},
            400,
            "stop",
        ),
        (
            "http image URL of 9,000 characters",
            "POST",
            "/v1/chat/completions",
            _chat("https://example.com/" + "a" * 9000),
            {},
            400,
            "over 8192 characters",
        ),
        # Sampling values that passed validation once and broke the shared decode loop.
        (
            "temperature 1e-40",
            "POST",
            "/v1/chat/completions",
            {**ok, "temperature": 1e-40},
            {},
            400,
            "temperature",
        ),
        (
            "temperature NaN",
            "POST",
            "/v1/chat/completions",
            json.dumps(ok)[:-1].encode() + b', "temperature": NaN}',
            {},
            400,
            "temperature",
        ),
        ("top_p 1e-300", "POST", "/v1/chat/completions", {**ok, "top_p": 1e-300}, {}, 400, "top_p"),
        ("seed 2**63", "POST", "/v1/chat/completions", {**ok, "seed": 2**63}, {}, 400, "seed"),
        ("seed -1", "POST", "/v1/chat/completions", {**ok, "seed": -1}, {}, 400, "seed"),
        (
            "max_tokens 2**70",
            "POST",
            "/v1/chat/completions",
            {**ok, "max_tokens": 2**70},
            {},
            400,
            "max_tokens",
        ),
        # Headers and Reader inputs.
        (
            "reader: X-Page superscript two",
            "POST",
            "/",
            {"pdf": pdf},
            {"X-Page": "\u00b2".encode()},
            400,
            "X-Page",
        ),
        ("reader: X-Page of 5,000 digits", "POST", "/", {"pdf": pdf}, {"X-Page": "9" * 5000}, 400, "X-Page"),
        ("reader: X-Timeout nan", "POST", "/", {"pdf": pdf}, {"X-Timeout": "nan"}, 400, "X-Timeout"),
        ("reader: filename not a string", "POST", "/", {"pdf": pdf, "filename": 5}, {}, 400, "filename"),
        ("reader: filename too long", "POST", "/", {"pdf": pdf, "filename": "f" * 300}, {}, 400, "filename"),
        ("reader: /robots.txt is not a host", "GET", "/robots.txt", None, {}, 404, "not found"),
        ("reader: /openapi.json is not a host", "GET", "/openapi.json", None, {}, 404, "not found"),
        ("reader: bare host without slash", "GET", "/example.com", None, {}, 404, "not found"),
        ("pages: nested JSON", "POST", "/v1/pages", b"{" * 50_000, {}, 400, "too deep"),
        ("pages: bad page", "POST", "/v1/pages", {"pdf": pdf, "page": "2"}, {}, 400, "page"),
        # Cross-site POSTs without an API key (a form or text/plain fetch from another site).
        (
            "cross-site chat POST",
            "POST",
            "/v1/chat/completions",
            ok,
            {"Origin": "https://evil.example"},
            403,
            "cross-site",
        ),
        ("cross-site reader POST", "POST", "/", {"pdf": pdf}, {"Origin": "null"}, 403, "cross-site"),
        # JSON as documented: UTF-8 only, integers and booleans as written.
        ("UTF-16 body", "POST", "/v1/chat/completions", json.dumps(ok).encode("utf-16"), {}, 400, "UTF-8"),
        ("max_tokens string", "POST", "/v1/chat/completions", {**ok, "max_tokens": "5"}, {}, 400, "integer"),
        ("max_tokens true", "POST", "/v1/chat/completions", {**ok, "max_tokens": True}, {}, 400, "integer"),
        ("seed string", "POST", "/v1/chat/completions", {**ok, "seed": "3"}, {}, 400, "integer"),
        ("stream 1", "POST", "/v1/chat/completions", {**ok, "stream": 1}, {}, 400, "boolean"),
        # Limits cite their own numbers.
        ("300 stop strings", "POST", "/v1/chat/completions", {**ok, "stop": ["a"] * 300}, {}, 400, "up to 4"),
        (
            "max_completion_tokens over the cap",
            "POST",
            "/v1/chat/completions",
            {**ok, "max_completion_tokens": 10**6},
            {},
            400,
            "max_completion_tokens 1000000 is over the limit of 256",
        ),
        # DNS rebinding: another site's name pointed at this server; its Origin matches its Host.
        (
            "rebinding GET",
            "GET",
            "/v1/models",
            None,
            {"Host": "evil.example:{live_port}"},
            403,
            "DNS rebinding",
        ),
        (
            "rebinding reader POST",
            "POST",
            "/",
            {"pdf": pdf},
            {"Host": "evil.example:{live_port}", "Origin": "http://evil.example:{live_port}"},
            403,
            "DNS rebinding",
        ),
        ("cross-site GET", "GET", "/v1/models", None, {"Sec-Fetch-Site": "cross-site"}, 403, "cross-site"),
        (
            "cross-site reader GET",
            "GET",
            "/{files}/page.png",
            None,
            {"Sec-Fetch-Site": "same-site"},
            403,
            "cross-site",
        ),
    ]
    for target, message in SSRF_TARGETS:
        cases.append(
            (f"chat image_url {target}", "POST", "/v1/chat/completions", _chat(target), {}, 400, message)
        )
        cases.append((f"reader GET /{target}", "GET", "/" + target, None, {}, 400, message))
        cases.append((f"reader POST url {target}", "POST", "/", {"url": target}, {}, 400, message))
    for target, message in REDIRECT_TARGETS:
        redirect = "{files}/redirect?to=" + target
        cases.append(
            (
                f"redirect to {target} (chat)",
                "POST",
                "/v1/chat/completions",
                _chat(redirect),
                {},
                400,
                message,
            )
        )
        cases.append((f"redirect to {target} (reader)", "POST", "/", {"url": redirect}, {}, 400, message))
    return cases


CASES = _cases()


@pytest.mark.parametrize(
    "name, method, path, body, headers, status, message", CASES, ids=[c[0] for c in CASES]
)
def test_hostile_input(api, live, files, name, method, path, body, headers, status, message):
    def fill(text: str) -> str:
        return text.replace("{live_port}", str(live.port)).replace("{files}", files["url"])

    path = fill(path)
    headers = {k: fill(v) if isinstance(v, str) else v for k, v in headers.items()}
    if isinstance(body, dict):
        content = fill(json.dumps(body)).encode()
    else:
        content = body
    response = api.request(method, path, content=content, headers=headers)
    assert response.status_code == status, (name, response.text[:300])
    error = response.json()["error"]
    assert message in error["message"], (name, error["message"])
    assert "\n" not in error["message"] and "Traceback" not in error["message"]
    assert error["type"] == "invalid_request_error"


def test_healthy_after_hostile_input(api, files):
    """Run after the table (file order): the server answers health checks and real work."""
    assert api.get("/health").json()["status"] == "ok"
    response = api.post("/v1/chat/completions", json=_chat(files["url"] + "/page.png"))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] is not None
    assert api.get("/health").json()["in_flight"] == 0


def test_own_names_and_same_origin_requests_are_accepted(api, live, tiny_model, tokenizer):
    """IP addresses, localhost and same-origin browser requests pass the checks above; other names only when
    given with --allowed-host (ServeConfig.allowed_hosts), and with an API key no name is checked."""
    from serve_helpers import make_service
    from starlette.testclient import TestClient

    from jocr.serve.app import create_app

    assert api.get("/v1/models", headers={"Host": f"localhost:{live.port}"}).status_code == 200
    assert api.get("/v1/models", headers={"Host": f"[::1]:{live.port}"}).status_code == 200
    assert api.get("/v1/models", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
    assert api.get("/v1/models", headers={"Sec-Fetch-Site": "none"}).status_code == 200
    named = make_service(tiny_model, tokenizer, allowed_hosts=("ocr.internal",))
    keyed = make_service(tiny_model, tokenizer, allowed_hosts=(), api_keys=("k",))
    try:
        client = TestClient(create_app(named.config, named), base_url="http://ocr.internal:8000")
        assert client.get("/v1/models").status_code == 200
        assert client.get("/v1/models", headers={"Host": "other.internal"}).status_code == 403
        client = TestClient(create_app(keyed.config, keyed), base_url="http://anything.example")
        auth = {"Authorization": "Bearer k", "Sec-Fetch-Site": "cross-site"}
        assert client.get("/v1/models", headers=auth).status_code == 200
    finally:
        named.close()
        keyed.close()
