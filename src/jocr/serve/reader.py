"""Reader endpoint (Jina Reader style): `GET /{url}` or `POST /` with `{"url"}` or a base64 `pdf` / `image`;
fetch (through the one safe fetcher), render the PDF page(s) or image, transcribe, answer Markdown.

Headers: `X-Respond-With` (alias `X-Return-Format`): a format (`markdown`, the default, or `text`) or a model
name (the served model, `jina-ocr-v1`, `jocr`: Markdown from that model); `X-Page`: one 1-based page;
`X-Timeout`: seconds for the whole request (capped by the server); `Accept: application/json` answers
`{url, title, content, usage}`.
"""

from __future__ import annotations

import asyncio
import html
import re
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from jocr.documents.fetch import FetchError, decode_base64
from jocr.documents.postprocess import join_pages
from jocr.documents.preprocess import is_blank_page
from jocr.serve.openai import ApiError, load_json_body
from jocr.serve.service import OCRService, SamplingParams, Transcription
from jocr.tokenizer import DEFAULT_PROMPT

FORMATS = ("markdown", "text")
MODEL_ALIASES = ("jina-ocr-v1", "jocr", "ocr")


@dataclass
class ReaderOptions:
    respond_with: str
    page: int | None
    timeout_s: float
    as_json: bool


def parse_options(request: Request, service: OCRService) -> ReaderOptions:
    cap = service.config.request_timeout_s
    respond = (request.headers.get("x-respond-with") or request.headers.get("x-return-format") or "").strip()
    respond = respond.lower() or "markdown"
    models = {service.model_id.lower(), *MODEL_ALIASES}
    if respond not in FORMATS and respond not in models:
        raise ApiError(
            400,
            f"X-Respond-With {respond!r} is not supported; use one of {', '.join(FORMATS)} "
            f"or the model {service.model_id!r}",
            param="X-Respond-With",
        )
    page = None
    raw_page = request.headers.get("x-page")
    if raw_page is not None and raw_page.strip():
        if not raw_page.strip().isdigit() or int(raw_page) < 1:
            raise ApiError(400, f"X-Page must be a page number (1-based), got {raw_page!r}", param="X-Page")
        page = int(raw_page)
    timeout_s = cap
    raw_timeout = request.headers.get("x-timeout")
    if raw_timeout is not None and raw_timeout.strip():
        try:
            timeout_s = float(raw_timeout)
        except ValueError:
            raise ApiError(
                400, f"X-Timeout must be seconds, got {raw_timeout!r}", param="X-Timeout"
            ) from None
        if not 0 < timeout_s < float("inf"):
            raise ApiError(400, "X-Timeout must be a positive number of seconds", param="X-Timeout")
        timeout_s = min(timeout_s, cap)
    accept = request.headers.get("accept", "")
    return ReaderOptions(
        respond if respond in FORMATS else "markdown", page, timeout_s, "application/json" in accept
    )


def target_from_path(path: str, query: str) -> str:
    """The URL in `GET /{url}`: keep the target's query string; repair `https:/host` (a collapsed `//`) and
    assume https for a bare `host/path` as Jina Reader does."""
    url = urllib.parse.unquote(path.lstrip("/")) if "%3A" in path[:12].upper() else path.lstrip("/")
    m = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):/*", url)
    if m:
        scheme = m.group(1).lower()
        if scheme in ("http", "https"):
            url = f"{scheme}://{url[m.end() :]}"
    elif "." in url.split("/", 1)[0]:
        url = "https://" + url
    else:
        raise ApiError(404, f"not found: /{path.lstrip('/')[:100]} (GET /https://... to read a URL)")
    return f"{url}?{query}" if query else url


def title_of(markdown: str, doc_title: str, url: str) -> str:
    if doc_title:
        return doc_title
    for line in markdown.splitlines():
        m = re.match(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            return m.group(1)
    name = urllib.parse.urlparse(url).path.rsplit("/", 1)[-1] if url else ""
    return urllib.parse.unquote(name)


def markdown_to_text(markdown: str) -> str:
    """A plain-text rendering: table rows as tab-separated cells, tags and emphasis markers removed."""
    text = re.sub(r"</t[dh]>\s*<t[dh][^>]*>", "\t", markdown, flags=re.I)
    text = re.sub(r"</tr>", "\n", text, flags=re.I)
    text = re.sub(r"<br\s*/?>", "\n", text, flags=re.I)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"^\s{0,3}#{1,6}\s+", "", text, flags=re.M)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return html.unescape(text).strip() + "\n"


async def read_input(request: Request, service: OCRService, url_path: str | None, deadline: float):
    """(data, source_url) from a GET path URL or a POST body ({url} or base64 {pdf} / {image} / {file})."""
    if url_path is not None:
        url = target_from_path(url_path, request.url.query)
        data, _ctype, final = await service.fetch(url, deadline)
        return data, final
    payload = load_json_body(await request.body())
    if not isinstance(payload, dict):
        raise ApiError(400, "request body must be a JSON object with url, pdf or image")
    given = [k for k in ("url", "pdf", "image", "file") if payload.get(k)]
    if len(given) != 1:
        raise ApiError(400, "send exactly one of url, pdf (base64) or image (base64)")
    key = given[0]
    value = payload[key]
    if not isinstance(value, str):
        raise ApiError(400, f"{key} must be a string", param=key)
    if key == "url":
        data, _ctype, final = await service.fetch(value.strip(), deadline)
        return data, final
    if value[:5].lower() == "data:":
        value = value.split(",", 1)[-1]
    if len(value) * 3 // 4 > service.config.max_body_bytes:
        raise ApiError(413, "document too large")
    try:
        data = decode_base64(value)
    except FetchError as exc:
        raise ApiError(400, f"{key}: {exc}", param=key) from None
    return data, payload.get("filename") or ""


async def handle_reader(request: Request, service: OCRService, url_path: str | None) -> Response:
    opts = parse_options(request, service)
    deadline = time.monotonic() + opts.timeout_s
    service.admission.acquire(1)
    held = 1
    try:
        async with asyncio.timeout(opts.timeout_s):
            data, source_url = await read_input(request, service, url_path, deadline)
            doc = await service.open_document(data, source_url or "document")
            try:
                if opts.page is not None:
                    if opts.page > doc.num_pages:
                        raise ApiError(
                            400,
                            f"X-Page {opts.page} is out of range: the document has {doc.num_pages} page(s)",
                        )
                    indices = [opts.page - 1]
                elif doc.num_pages > service.config.max_pages:
                    raise ApiError(
                        400,
                        f"document has {doc.num_pages} pages, over the limit of {service.config.max_pages} "
                        "per request; choose one with X-Page",
                    )
                else:
                    indices = list(range(doc.num_pages))
                if len(indices) > 1:
                    service.admission.acquire(len(indices) - 1)
                    held = len(indices)
                images = [await doc.render(i) for i in indices]
                doc_title = doc.title
            finally:
                await doc.close()
            # The pipeline's defaults (jocr.parse): the OCR prompt, greedy decoding, blank pages left empty.
            params = SamplingParams(max_tokens=service.config.default_max_tokens)

            async def read_page(image) -> Transcription:
                if await service.run_blocking(is_blank_page, image):
                    return Transcription("", "", 0, 0, "blank")
                return await service.transcribe_all([image], DEFAULT_PROMPT, params)

            results: list[Transcription] = await asyncio.gather(*(read_page(im) for im in images))
    except TimeoutError:
        raise ApiError(504, f"request timed out after {opts.timeout_s:g} s (X-Timeout)") from None
    finally:
        service.admission.release(held)
    # Pages are joined as `jocr.parse` joins them (DeepSeek-OCR's page-split marker between pages).
    content = join_pages([r.text for r in results])
    if opts.respond_with == "text":
        content = markdown_to_text(content)
    usage: dict[str, Any] = {
        "tokens": sum(r.completion_tokens for r in results),
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "completion_tokens": sum(r.completion_tokens for r in results),
        "pages": len(results),
    }
    title = title_of(content, doc_title, source_url)
    if opts.as_json:
        return JSONResponse({"url": source_url, "title": title, "content": content, "usage": usage})
    media = "text/plain" if opts.respond_with == "text" else "text/markdown"
    return PlainTextResponse(
        content, media_type=f"{media}; charset=utf-8", headers={"X-Pages": str(len(results))}
    )
