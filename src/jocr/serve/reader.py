"""Reader endpoint (Jina Reader style): `GET /{url}` or `POST /` with `{"url"}` or a base64 `pdf` / `image`;
fetch (through the one safe fetcher), then read the document on the streaming pipeline `jocr parse` runs
(`jocr.pipeline.DocumentRun`, driven from the event loop: pages rendered one at a time as decode slots free
up, blank pages left empty, pages joined the same way), on the server's shared scheduler; answer Markdown.
A web page (HTML) is rendered in Chromium and printed to PDF first (documents/browser.py), then read like
any PDF.

Headers: `X-Respond-With` (alias `X-Return-Format`): a format (`markdown`, the default, or `text`), a model
name (the served model, `jina-ocr-v1`, `jocr`: Markdown from that model), or `screenshot` / `pageshot`
(the rendered image instead: a web page's first screen / whole page, a document's page); `X-Page`: one page;
`X-Timeout`: seconds for the whole request (capped by the server); `Accept: application/json` answers
`{url, title, content, usage}`.

A question (`X-Question`, percent-encoded UTF-8 where it is not ASCII, or a POST body's `question`) asks
the selected pages instead of reading them, as `jocr ask` asks a document (docs/asking.md, "The server"):
the answer as plain text, or with `Accept: application/json` `{url, title, question, answer, page, box,
pages, usage}`.
"""

from __future__ import annotations

import asyncio
import base64
import html
import io
import re
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from jocr.documents.browser import RenderedPage, is_html
from jocr.documents.fetch import FetchError, decode_base64
from jocr.documents.preprocess import is_blank_page
from jocr.pipeline import Document, DocumentRun
from jocr.pipeline.ask import ANSWER_TOKENS, Answer, PageAnswer, answer_box, choose_page
from jocr.serve.admission import Ticket
from jocr.serve.asking import Asking, answer_response, checked_question, header_question
from jocr.serve.openai import ApiError, load_json_body
from jocr.serve.service import OCRService, SamplingParams, all_or_none, post_to_loop

FORMATS = ("markdown", "text")
SHOTS = ("screenshot", "pageshot")
MODEL_ALIASES = ("jina-ocr-v1", "jocr", "ocr")


@dataclass
class ReaderOptions:
    respond_with: str
    page: int | None
    timeout_s: float
    as_json: bool
    question: str | None = None  # X-Question (or the body's `question`): the pages are asked, not read


def parse_options(request: Request, service: OCRService) -> ReaderOptions:
    cap = service.config.request_timeout_s
    respond = (request.headers.get("x-respond-with") or request.headers.get("x-return-format") or "").strip()
    respond = respond.lower() or "markdown"
    models = {service.model_id.lower(), *MODEL_ALIASES}
    if respond not in FORMATS + SHOTS and respond not in models:
        raise ApiError(
            400,
            f"X-Respond-With {respond!r} is not supported; use one of {', '.join(FORMATS + SHOTS)} "
            f"or the model {service.model_id!r}",
            param="X-Respond-With",
        )
    page = None
    raw_page = request.headers.get("x-page")
    if raw_page is not None and raw_page.strip():
        # ASCII digits only (str.isdigit takes "²"), and few enough for int() (5,000 digits raise there).
        if not re.fullmatch(r"[0-9]{1,9}", raw_page.strip()) or int(raw_page) < 1:
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
    question = header_question(request)
    if question is not None and respond in SHOTS:
        raise ApiError(
            400, f"X-Question cannot be combined with X-Respond-With: {respond}", param="X-Question"
        )
    return ReaderOptions(
        respond if respond in FORMATS + SHOTS else "markdown",
        page,
        timeout_s,
        "application/json" in accept,
        question,
    )


def target_from_path(path: str, query: str) -> str:
    """The URL in `GET /{url}`: keep the target's query string; repair `https:/host` (a collapsed `//`).

    A URL is taken only with a scheme (`/https://host/...`) or in an explicit host form: a dotted host name
    or IPv4 address followed by `/` or `:port` (`/example.com/`, `/example.com/doc.pdf`,
    `/example.com:8080`), or a bracketed IPv6 address; that form is read as https, as Jina Reader does. A
    bare `/robots.txt` or `/openapi.json` is this server's own (missing) path: 404, never an outside fetch."""
    url = urllib.parse.unquote(path.lstrip("/")) if "%3A" in path[:12].upper() else path.lstrip("/")
    m = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):/*", url)
    explicit_host = re.match(
        r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+\.?)(:[0-9]{1,5})?(/|$)", url
    )
    if m and not (explicit_host and explicit_host.group(3)):
        scheme = m.group(1).lower()
        if scheme in ("http", "https"):
            url = f"{scheme}://{url[m.end() :]}"
    elif explicit_host and (explicit_host.group(3) or explicit_host.group(4) == "/" or url.startswith("[")):
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


async def read_input(
    request: Request,
    service: OCRService,
    url_path: str | None,
    deadline: float,
    opts: ReaderOptions | None = None,
):
    """(data, source_url, content_type) from a GET path URL or a POST body ({url} or base64 {pdf} / {image} /
    {file}, and for the Reader an optional {question}, set on `opts`); content_type is the fetched media
    type, None for base64 input."""
    if url_path is not None:
        url = target_from_path(url_path, request.url.query)
        data, content_type, final = await service.fetch(url, deadline)
        return data, final, content_type
    payload = await service.run_blocking(load_json_body, await request.body())
    if not isinstance(payload, dict):
        raise ApiError(400, "request body must be a JSON object with url, pdf or image")
    if opts is not None and "question" in payload:
        if opts.question is not None:
            raise ApiError(400, "send the question once: X-Question or the body's question", param="question")
        if opts.respond_with in SHOTS:
            raise ApiError(400, "a question cannot be combined with a screenshot", param="question")
        opts.question = checked_question(payload["question"], "question")
    given = [k for k in ("url", "pdf", "image", "file") if payload.get(k)]
    if len(given) != 1:
        raise ApiError(400, "send exactly one of url, pdf (base64) or image (base64)")
    key = given[0]
    value = payload[key]
    if not isinstance(value, str):
        raise ApiError(400, f"{key} must be a string", param=key)
    if key == "url":
        data, content_type, final = await service.fetch(value.strip(), deadline)
        return data, final, content_type
    if value[:5].lower() == "data:":
        value = value.split(",", 1)[-1]
    if len(value) * 3 // 4 > service.config.max_body_bytes:
        limit = service.config.max_body_bytes
        raise ApiError(413, f"{key}: document too large (limit {limit} bytes)", param=key)
    filename = payload.get("filename") or ""
    if not isinstance(filename, str) or len(filename) > 255:
        raise ApiError(400, "filename must be a string of up to 255 characters", param="filename")
    try:
        data = await service.run_blocking(decode_base64, value)
    except FetchError as exc:
        raise ApiError(400, f"{key}: {exc}", param=key) from None
    return data, filename, None


async def web_page(
    service: OCRService,
    data: bytes,
    url: str,
    content_type: str | None,
    mode: str,
    deadline: float,
    ticket: Ticket,
) -> RenderedPage | None:
    """A fetched web page rendered in Chromium (its PDF, or a PNG for screenshot/pageshot); None for
    anything else, which is read as it is. Base64 input (no content type) is never rendered: a page
    needs its URL for its links and resources."""
    if content_type is None or not is_html(data, content_type):
        return None
    return await service.render_web_page(data, url, content_type, mode, deadline, ticket)


async def read_pages(service: OCRService, source, indices: list[int], name: str) -> Document:
    """The selected pages (0-based) of an open document through the streaming pipeline, with the pipeline's
    defaults (the OCR prompt, greedy decoding, blank pages left empty) and the server's token default.

    The pipeline's run (`jocr.pipeline.DocumentRun`) is driven from the event loop: pages are rendered and
    submitted on the server's worker pool, one page a turn so other requests' work interleaves, into the
    shared scheduler, so they join the continuous batch with every other request; finished pages come back
    through the engine's done callbacks. A request waiting for its pages holds no thread. A cancelled
    request (timeout, client gone) stops the run and cancels its pages in flight; the page being rendered
    finishes first, so the caller may close the document."""
    backend = service.generator
    finished: asyncio.Queue = asyncio.Queue()

    def count(_doc, page) -> None:
        if page.error is None and page.finish_reason != "blank":
            stats = page.stats
            service.metrics.observe_generation(
                page.prompt_tokens,
                page.num_tokens,
                int(getattr(stats, "spec_steps", 0) or 0),
                int(getattr(stats, "spec_tokens", 0) or 0),
            )

    run = DocumentRun(
        [source],
        backend.loaded,
        post_to_loop(asyncio.get_running_loop(), finished.put_nowait),
        pages=[i + 1 for i in indices],
        max_tokens=service.config.default_max_tokens,
        batch_size=service.config.max_batch,
        names=[name],
        on_page=count,
        runner=backend.scheduler,
        anchor=service.config.anchor,
    )
    documents: list[Document] = []
    step = None
    try:
        items: list[tuple] = []
        while True:
            step = asyncio.ensure_future(service.run_blocking(run.advance, items, 1))
            documents += await asyncio.shield(step)
            while run.wants_pages:
                step = asyncio.ensure_future(service.run_blocking(run.advance, (), 1))
                documents += await asyncio.shield(step)
            if run.done:
                break
            items = [await finished.get()]
            while not finished.empty():
                items.append(finished.get_nowait())
    finally:
        if step is not None and not step.done():
            await asyncio.wait([step])  # the page being rendered, before the caller closes the document
        run.close()
    parsed = documents[0]
    for page in parsed.pages:
        if page.error is not None:
            # A page that did not render is the document's fault; one that rendered failed in the engine.
            rendered = page.width > 0
            raise ApiError(500 if rendered else 400, page.error, code=None if rendered else "bad_document")
    return parsed


async def handle_reader(request: Request, service: OCRService, url_path: str | None) -> Response:
    opts = parse_options(request, service)
    deadline = time.monotonic() + opts.timeout_s
    with service.admit() as ticket:
        try:
            async with asyncio.timeout(opts.timeout_s):
                data, source_url, content_type = await read_input(request, service, url_path, deadline, opts)
                mode = opts.respond_with if opts.respond_with in SHOTS else "pdf"
                web = await web_page(service, data, source_url, content_type, mode, deadline, ticket)
                if web is not None and web.mode != "pdf":
                    return image_response(web.data, opts, source_url, web.title)
                data, web_title = (web.data, web.title) if web else (data, "")
                doc = await service.open_document(data, source_url or "document", ticket)
                try:
                    if opts.respond_with in SHOTS:
                        return await page_image_response(doc, opts, service, source_url)
                    if opts.page is not None:
                        if opts.page > doc.num_pages:
                            raise ApiError(
                                400,
                                f"X-Page {opts.page} is out of range: the document has {doc.num_pages} "
                                "page(s)",
                            )
                        indices = [opts.page - 1]
                    elif doc.num_pages > service.config.max_pages:
                        raise ApiError(
                            400,
                            f"document has {doc.num_pages} pages, over the limit of "
                            f"{service.config.max_pages} per request; choose one with X-Page",
                        )
                    else:
                        indices = list(range(doc.num_pages))
                    # Reserved before any page is rendered (docs/serving.md, Limits): every selected page,
                    # an upper bound of what the pipeline, which renders them one at a time, can hold; and
                    # one slot per page, each an engine request.
                    for i in indices:
                        await doc.reserve(i)
                    ticket.add_slots(len(indices) - 1)
                    doc_title = web_title or doc.title
                    if opts.question is not None:
                        answer = await ask_pages(service, doc, indices, opts.question, source_url, ticket)
                        title = title_of("", doc_title, source_url)
                        return answer_response(answer, opts.as_json, source_url, title)
                    parsed = await read_pages(service, doc.source, indices, source_url or "document")
                finally:
                    await doc.close()
        except TimeoutError:
            raise ApiError(504, f"request timed out after {opts.timeout_s:g} s (X-Timeout)") from None
    results = parsed.pages
    content = parsed.markdown  # joined as `jocr parse` joins pages (DeepSeek-OCR's page-split marker)
    if opts.respond_with == "text":
        content = markdown_to_text(content)
    usage: dict[str, Any] = {
        "tokens": sum(p.num_tokens for p in results),
        "prompt_tokens": sum(p.prompt_tokens for p in results),
        "completion_tokens": sum(p.num_tokens for p in results),
        "pages": len(results),
    }
    title = title_of(content, doc_title, source_url)
    if opts.as_json:
        return JSONResponse({"url": source_url, "title": title, "content": content, "usage": usage})
    media = "text/plain" if opts.respond_with == "text" else "text/markdown"
    return PlainTextResponse(
        content, media_type=f"{media}; charset=utf-8", headers={"X-Pages": str(len(results))}
    )


def image_response(png: bytes, opts: ReaderOptions, url: str, title: str) -> Response:
    """`X-Respond-With: screenshot|pageshot`: the PNG itself, or with `Accept: application/json`
    `{url, title, screenshotUrl|pageshotUrl}` (a data URL, named as Jina Reader names its image links)."""
    if opts.as_json:
        data_url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        return JSONResponse({"url": url, "title": title, f"{opts.respond_with}Url": data_url})
    return Response(png, media_type="image/png")


async def page_image_response(doc, opts: ReaderOptions, service: OCRService, url: str) -> Response:
    """A document's page (X-Page, else the first) as rendered for the model, as a PNG."""
    index = (opts.page or 1) - 1
    if index >= doc.num_pages:
        raise ApiError(400, f"X-Page {index + 1} is out of range: the document has {doc.num_pages} page(s)")
    image = await doc.render(index)

    def encode() -> bytes:
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return buf.getvalue()

    return image_response(await service.run_blocking(encode), opts, url, title_of("", doc.title, url))


async def ask_pages(
    service: OCRService, doc, indices: list[int], question: str, url: str, ticket: Ticket
) -> Answer:
    """The selected pages (0-based) asked `question` as `jocr ask` asks them: each page rendered, its anchor
    and lines read (`OpenDocument.question_anchors`), one engine request per anchor window on the shared
    scheduler (greedy, `jocr ask`'s answer tokens within the server's default), the page's answer chosen among
    its windows and the document's among its pages (`jocr.pipeline.ask.choose_page`). A blank page is not
    asked; 400 when every page is blank."""
    params = SamplingParams(min(ANSWER_TOKENS, service.config.default_max_tokens))

    async def ask_page(index: int) -> PageAnswer:
        image = await doc.render(index)
        if await service.run_blocking(is_blank_page, image):
            return PageAnswer(page=index + 1, error=f"page {index + 1} is blank: nothing to ask")
        anchors, lines, image = await doc.question_anchors(index, image)
        ticket.add_slots(len(anchors) - 1)  # one engine request per window, as a chat page's
        asking = Asking(None, question)
        submitted = await service.submit([image], question, params, anchors, asking)
        result = await service.transcribe_all(submitted)
        return PageAnswer(
            page=index + 1,
            text=result.text,
            raw=result.raw,
            box=answer_box(result.text, lines, image.size),
            anchored=bool(anchors),
            finish_reason=result.finish_reason,
        )

    pages = await all_or_none(ask_page(i) for i in indices)
    answer = choose_page(Answer(question=question, source=url, pages=list(pages)))
    if answer.error is not None:
        raise ApiError(400, answer.error, code="blank_page")
    return answer
