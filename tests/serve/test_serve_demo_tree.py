"""The demo page's read (`POST /v1/pages` with `"read": true`): the Reader's Markdown for the page plus its
document tree, which the demo draws over the page image; the block colours come from the one palette
`jocr parse --draw` uses; the Reader's JSON keeps its shape for other clients."""

from __future__ import annotations

import base64

import jsonschema
from serve_helpers import page_image, pdf_bytes

from jocr.layout.draw import palette_hex
from jocr.layout.tree import tree_schema


def _pdf() -> str:
    return base64.b64encode(pdf_bytes([page_image(1), page_image(2)])).decode()


def test_read_gives_the_readers_markdown_and_the_pages_tree(api):
    response = api.post("/v1/pages", json={"pdf": _pdf(), "page": 2, "read": True})
    assert response.status_code == 200, response.text
    demo = response.json()
    assert {"page", "num_pages", "title", "content", "tree", "usage"} <= demo.keys()
    assert "image" not in demo and (demo["page"], demo["num_pages"]) == (2, 2)
    reader = api.post("/", json={"pdf": _pdf()}, headers={"Accept": "application/json", "X-Page": "2"})
    assert reader.status_code == 200, reader.text
    assert set(reader.json()) == {"url", "title", "content", "usage"}  # unchanged for Reader clients
    assert demo["content"] == reader.json()["content"]
    assert demo["usage"]["completion_tokens"] == reader.json()["usage"]["completion_tokens"]
    tree = demo["tree"]
    jsonschema.validate(tree, tree_schema())
    assert tree["page"] == 2 and tree["width"] > 0 and tree["height"] > 0


def test_without_read_the_page_image_as_before(api):
    response = api.post("/v1/pages", json={"pdf": _pdf(), "read": False})
    assert response.status_code == 200, response.text
    assert response.json()["image"].startswith("data:image/png;base64,")
    assert "tree" not in response.json()


def test_read_must_be_a_boolean(api):
    response = api.post("/v1/pages", json={"pdf": _pdf(), "read": "yes"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "read"


def test_palette_is_the_draw_palette(api):
    response = api.get("/static/palette.json")
    assert response.status_code == 200
    assert response.json() == palette_hex()
    assert all(len(c) == 7 and c.startswith("#") for c in response.json().values())
