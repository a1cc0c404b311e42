"""The demo page's server side: its static assets (the page, its scripts, KaTeX as bundled with the math
checks) and `POST /v1/pages`, a document's page as the model sees it, or read (docs/serving.md, "Demo page").
"""

from __future__ import annotations

import base64
import importlib.resources
import io
import time
from typing import Any

from starlette.requests import Request

from jocr.serve.admission import Ticket
from jocr.serve.openai import ApiError, load_json_body
from jocr.serve.reader import read_input, read_pages, web_page
from jocr.serve.service import OCRService

STATIC_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


async def render_page(request: Request, service: OCRService, ticket: Ticket) -> dict[str, Any]:
    """The page image the model sees (downscaled for the browser), for the demo page; with `"read": true`
    the page read through the Reader's pipeline instead: its Markdown (the Reader's `content`) and its
    document tree (`PageTree.to_dict()`, null for a blank page), which the demo draws over the image."""
    payload = await service.run_blocking(load_json_body, await request.body())
    payload = payload if isinstance(payload, dict) else {}
    page = payload.get("page", 1)
    if not isinstance(page, int) or isinstance(page, bool) or page < 1:
        raise ApiError(400, "page must be a positive integer (1-based)", param="page")
    read = payload.get("read", False)
    if not isinstance(read, bool):
        raise ApiError(400, "read must be true or false", param="read")
    deadline = time.monotonic() + service.config.fetch.timeout_s + service.config.browser.timeout_s + 5
    data, source_url, content_type = await read_input(request, service, None, deadline)
    web = await web_page(service, data, source_url, content_type, "pdf", deadline, ticket)
    doc = await service.open_document(web.data if web else data, source_url or "document", ticket)
    try:
        if page > doc.num_pages:
            raise ApiError(400, f"page {page} is out of range: the document has {doc.num_pages} page(s)")
        title = web.title if web else doc.title
        if read:
            await doc.reserve(page - 1)
            parsed = await read_pages(service, doc.source, [page - 1], source_url or "document")
        else:
            image = await doc.render(page - 1)
    finally:
        await doc.close()
    if read:
        result = parsed.pages[0]
        return {
            "page": page,
            "num_pages": doc.num_pages,
            "title": title,
            "content": parsed.markdown,
            "tree": result.tree.to_dict() if result.tree is not None else None,
            "usage": {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.num_tokens},
        }

    def encode() -> tuple[str, int, int]:
        width, height = image.size
        small = image.copy()
        small.thumbnail((1600, 1600))
        buf = io.BytesIO()
        small.save(buf, format="PNG")
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii"), width, height

    url, width, height = await service.run_blocking(encode)
    return {
        "page": page,
        "num_pages": doc.num_pages,
        "width": width,
        "height": height,
        "title": title,
        "image": url,
    }


def web_asset(name: str) -> bytes:
    return importlib.resources.files("jocr.serve").joinpath("web", name).read_bytes()


def katex_js() -> bytes | None:
    """KaTeX as bundled with the math checks (jocr/checks/katex), served so the demo renders formulas without
    a CDN; None when it is not there (the page then shows LaTeX source)."""
    try:
        return importlib.resources.files("jocr.checks").joinpath("katex", "katex.min.js").read_bytes()
    except (FileNotFoundError, ModuleNotFoundError):
        return None
