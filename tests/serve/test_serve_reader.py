"""Reader endpoint: GET /{url} and POST / give what `jocr.parse` gives for the same document and pages."""

from __future__ import annotations

import base64

import pytest
from serve_helpers import MAX_TOKENS, png_bytes

from jocr.pipeline import LoadedModel, parse


@pytest.fixture(scope="module")
def reference(tiny_model, tokenizer, files):
    loaded = LoadedModel(model=tiny_model, tokenizer=tokenizer)
    whole = parse(files["pdf"], model=loaded, max_tokens=MAX_TOKENS)
    image = parse(png_bytes(files["pages"][0]), model=loaded, max_tokens=MAX_TOKENS)
    return {"pdf": whole, "image": image}


def test_get_url_whole_document(api, files, reference):
    response = api.get(f"/{files['url']}/doc.pdf")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/markdown")
    assert response.text == reference["pdf"].markdown
    assert response.headers["x-pages"] == "3"


def test_get_url_one_page_as_json(api, files, reference):
    response = api.get(f"/{files['url']}/doc.pdf", headers={"X-Page": "2", "Accept": "application/json"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"url", "title", "content", "usage"}
    assert body["content"] == reference["pdf"].pages[1].markdown
    assert body["url"] == f"{files['url']}/doc.pdf"
    assert body["usage"]["pages"] == 1
    assert body["usage"]["completion_tokens"] == reference["pdf"].pages[1].num_tokens
    assert body["title"]  # the file name when there is neither PDF metadata nor a heading


def test_post_base64_pdf_and_image(api, files, reference):
    pdf = base64.b64encode(files["pdf"]).decode()
    response = api.post("/", json={"pdf": pdf}, headers={"X-Page": "3", "X-Return-Format": "markdown"})
    assert response.status_code == 200, response.text
    assert response.text == reference["pdf"].pages[2].markdown
    image = base64.b64encode(png_bytes(files["pages"][0])).decode()
    response = api.post("/", json={"image": "data:image/png;base64," + image})
    assert response.status_code == 200, response.text
    assert response.text == reference["image"].markdown


def test_blank_pages_are_empty_as_in_the_pipeline(api, tiny_model, tokenizer, files):
    from PIL import Image
    from serve_helpers import pdf_bytes

    document = pdf_bytes([files["pages"][0], Image.new("RGB", files["pages"][0].size, "white")])
    loaded = LoadedModel(model=tiny_model, tokenizer=tokenizer)
    expected = parse(document, model=loaded, max_tokens=MAX_TOKENS)
    assert expected.pages[1].finish_reason == "blank"
    body = {"pdf": base64.b64encode(document).decode()}
    response = api.post("/", json=body, headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["content"] == expected.markdown
    assert response.json()["usage"]["completion_tokens"] == expected.pages[0].num_tokens


def test_post_url_and_model_name(api, files, reference):
    response = api.post(
        "/", json={"url": files["url"] + "/page.png"}, headers={"X-Respond-With": "jina-ocr-v1"}
    )
    assert response.status_code == 200, response.text
    assert response.text == reference["image"].markdown


def test_text_format(api, files):
    response = api.get(f"/{files['url']}/page.png", headers={"X-Respond-With": "text"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")


def test_timeout_is_504(api, files):
    response = api.get(f"/{files['url']}/doc.pdf", headers={"X-Timeout": "0.001"})
    assert response.status_code == 504
    assert "timed out" in response.json()["error"]["message"]
    assert api.get("/health").json()["in_flight"] == 0


def test_unknown_path_is_404(api):
    response = api.get("/no-such-thing")
    assert response.status_code == 404
    assert "not found" in response.json()["error"]["message"]
