"""The FastAPI app: OpenAI-compatible chat completions, the Reader endpoint, the demo page, health, metrics.

`create_app(config, service)` builds the app around an `OCRService` (model side, see service.py); nothing
heavy happens at import time. Routes:

  GET  /health                 {"status": "ok", ...} (never needs a key)
  GET  /metrics                Prometheus text
  GET  /v1/models              OpenAI model list
  POST /v1/chat/completions    OpenAI chat completions (image_url parts; stream=true for SSE)
  POST /v1/pages               {url|pdf|image, page} -> the rendered page as a PNG data URL (demo page);
                               with "read": true the page read instead: its Markdown and document tree
  GET  /                       the demo page; /static/* its assets
  POST /                       Reader: {url} or base64 {pdf} / {image}
  GET  /{url}                  Reader: fetch and transcribe the URL
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse

from jocr.layout.draw import palette_hex
from jocr.serve.access import check_access
from jocr.serve.asking import Asking
from jocr.serve.config import ServeConfig
from jocr.serve.demo import STATIC_TYPES, katex_js, render_page, web_asset
from jocr.serve.middleware import BodyLimitMiddleware, MetricsMiddleware, error_response
from jocr.serve.openai import (
    ApiError,
    chat_chunk,
    chat_completion,
    completion_id,
    load_json_body,
    models_list,
    parse_chat_request,
    usage_dict,
)
from jocr.serve.reader import MODEL_ALIASES, handle_reader
from jocr.serve.service import OCRService, SamplingParams, Transcription, all_or_none

log = logging.getLogger("jocr.serve")
# Not a real status (nginx's "client closed request"): recorded in the metrics for requests whose client
# went away, which are neither the server's fault (5xx) nor answered.
CLIENT_GONE = 499


class ClientGone(Exception):
    """The client disconnected before its answer: the work was cancelled and the slot released."""


def create_app(config: ServeConfig, service: OCRService) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        service.close()

    app = FastAPI(
        title="jocr", version="0.1.0", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.service = service
    app.state.config = config
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=config.max_body_bytes,
        max_server_bytes=config.max_server_bytes,
        retry_after_s=config.retry_after_s,
    )
    app.add_middleware(MetricsMiddleware, metrics=service.metrics)  # outermost: counts refusals too
    keys = tuple(k.encode() for k in config.api_keys)
    served_models = {service.model_id, *MODEL_ALIASES}

    # The names a browser may use for this server when it has no API key (see access.py `check_access`).
    own_hosts = frozenset({"localhost", config.host.lower(), *(h.lower() for h in config.allowed_hosts)})

    def check_auth(request: Request) -> None:
        check_access(request, keys, own_hosts)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        return error_response(ApiError(exc.status_code, str(exc.detail)))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        return error_response(ApiError(400, "invalid request"))

    @app.exception_handler(ClientDisconnect)
    @app.exception_handler(ClientGone)
    async def _client_gone(request: Request, exc: Exception):
        log.info("%s %s: client disconnected; request abandoned", request.method, request.url.path[:100])
        return Response(status_code=CLIENT_GONE)

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception):
        message = " ".join(str(exc).split())[:300]
        return error_response(ApiError(500, f"internal error: {type(exc).__name__}: {message}"))

    @app.get("/health")
    async def health():
        adm = service.admission
        return {
            "status": "ok",
            "model": service.model_id,
            "in_flight": adm.in_flight,
            "capacity": adm.capacity,
        }

    @app.get("/metrics")
    async def metrics(request: Request):
        check_auth(request)
        depth = getattr(service.generator, "queue_depth", None)
        if depth is not None:  # the scheduler's own count of requests waiting for a batch row
            service.metrics.set_load(depth(), service.admission.in_flight)
        text = service.metrics.render()
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/v1/models")
    async def models(request: Request):
        check_auth(request)
        return models_list(service.model_id, service.created)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        check_auth(request)
        raw = await _read_body(request, config.request_timeout_s)
        task = await service.run_blocking(
            lambda: parse_chat_request(
                load_json_body(raw), config.max_tokens, config.default_max_tokens, config.max_images
            )
        )
        if task.model and task.model not in served_models:
            raise ApiError(
                404,
                f"model {task.model!r} not found; this server serves {service.model_id!r}",
                param="model",
                code="model_not_found",
            )
        ticket = service.admit()
        streaming = False
        try:
            deadline = time.monotonic() + config.request_timeout_s
            try:
                async with asyncio.timeout(config.request_timeout_s):
                    # A PDF page's text layer goes into the prompt of a one-page request only (an anchor
                    # is a page's).
                    one_page = len(task.image_urls) == 1
                    loaded = await all_or_none(
                        service.load_image(url, i, deadline, ticket, with_anchor=one_page, asking=task.asks)
                        for i, url in enumerate(task.image_urls)
                    )
            except TimeoutError:
                raise ApiError(
                    504, f"fetching images timed out after {config.request_timeout_s:g} s"
                ) from None
            images = [page.image for page in loaded]
            if task.task == "formula" and service.reads_formulas():  # the bundle's formula reader
                result = await service.read_formulas(images, task.max_tokens)
                if task.stream:
                    return StreamingResponse(
                        _sse(service, task.include_usage, _finished(result)),
                        media_type="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                    )
                return chat_completion(completion_id(), service.model_id, result.text, result.finish_reason,
                                       result.prompt_tokens, result.completion_tokens)  # fmt: skip
            anchors = loaded[0].anchors if one_page else []
            lines = loaded[0].lines if one_page else None  # the answer is checked against them
            asking = None
            if task.asks:  # a question or a schema's fields (docs/asking.md, "The server")
                if all(page.blank for page in loaded):
                    raise ApiError(400, "the image is blank: nothing to ask", code="blank_page")
                question = task.prompt if task.fields is None else ""
                asking = Asking(task.fields, question, caption=task.task == "caption")
                if asking.caption:  # one request: the image's own anchor (its first window), as a crop's
                    anchors = anchors[:1]
            # A page read in anchor windows is one engine request per window, each up to max_tokens: each
            # counts as a request in flight, as a Reader page does.
            ticket.add_slots(len(anchors) - 1)
            params = SamplingParams(task.max_tokens, task.temperature, task.top_p, task.seed, task.stop)
            if task.stream:
                # Submitted before the 200 status line, so a request the engine refuses is a plain 4xx.
                submitted = await service.submit(images, task.prompt, params, anchors, asking, lines)
                streaming = True

                def on_close() -> None:
                    unfinished = not submitted.done
                    # The slot and the pixels first: nothing after this (logging included) can keep them.
                    service.cancel(submitted)  # a no-op when the generation finished
                    ticket.release()
                    if unfinished:
                        log.info(
                            "POST /v1/chat/completions: client disconnected mid-stream; generation cancelled"
                        )

                return _ReleasingStream(
                    _sse(service, task.include_usage, service.transcribe(submitted)),
                    release=on_close,
                    media_type="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                )

            async def generate() -> Transcription:
                submitted = await service.submit(images, task.prompt, params, anchors, asking, lines)
                return await service.transcribe_all(submitted)

            try:
                async with asyncio.timeout(max(1.0, deadline - time.monotonic())):
                    result = await until_disconnected(request, generate())
            except TimeoutError:
                raise ApiError(504, f"generation timed out after {config.request_timeout_s:g} s") from None
            return chat_completion(
                completion_id(),
                service.model_id,
                result.text,
                result.finish_reason,
                result.prompt_tokens,
                result.completion_tokens,
                result.refusal,
            )
        finally:
            if not streaming:
                ticket.release()

    @app.post("/v1/pages")
    async def pages(request: Request):
        check_auth(request)
        timeout_s = config.request_timeout_s
        await _read_body(request, timeout_s)  # read (and cached) before the disconnect watcher listens
        with service.admit() as ticket:
            try:
                async with asyncio.timeout(timeout_s):
                    return await until_disconnected(request, render_page(request, service, ticket))
            except TimeoutError:
                raise ApiError(504, f"rendering the page timed out after {timeout_s:g} s") from None

    @app.get("/", response_class=HTMLResponse)
    async def demo():
        return HTMLResponse(web_asset("index.html").decode("utf-8"))

    @app.get("/favicon.ico")
    async def favicon():
        return Response(status_code=204)

    @app.get("/static/{name}")
    async def static(name: str):
        if name == "palette.json":  # the block colours `jocr parse --draw` uses, for the demo's boxes
            return JSONResponse(palette_hex(), headers={"Cache-Control": "max-age=3600"})
        if name == "katex.min.js":
            data = katex_js()
            if data is None:
                raise ApiError(404, "KaTeX is not bundled")
            return Response(data, media_type="text/javascript", headers={"Cache-Control": "max-age=3600"})
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        if "/" in name or suffix not in STATIC_TYPES:
            raise ApiError(404, f"no static file {name!r}")
        try:
            data = web_asset(name)
        except FileNotFoundError:
            raise ApiError(404, f"no static file {name!r}") from None
        return Response(data, media_type=STATIC_TYPES[suffix] + "; charset=utf-8")

    @app.post("/")
    async def reader_post(request: Request):
        check_auth(request)
        await _read_body(request, config.request_timeout_s)  # cached for the reader, before the watcher
        return await until_disconnected(request, handle_reader(request, service, None))

    @app.get("/{url:path}")
    async def reader_get(request: Request, url: str):
        check_auth(request)
        # The raw path keeps what URL decoding would mangle (%2F, a doubled slash after the scheme).
        raw = request.scope.get("raw_path", b"").decode("latin-1") or "/" + url
        return await until_disconnected(request, handle_reader(request, service, raw))

    return app


async def _read_body(request: Request, timeout_s: float) -> bytes:
    """The request body, read under the request timeout (a slow upload does not hold a connection forever)."""
    try:
        async with asyncio.timeout(timeout_s):
            return await request.body()
    except TimeoutError:
        raise ApiError(408, f"request body not received within {timeout_s:g} s") from None


async def until_disconnected(request: Request, work):
    """Run `work` (a coroutine) unless the client disconnects first: then it is cancelled at once (which
    cancels its generation and lets the caller release its admission slot) and ClientGone is raised."""
    task = asyncio.ensure_future(work)

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(watch())
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            return task.result()
        task.cancel()
        try:
            await task
        except BaseException:  # its cancellation; the client is gone, nobody reads the outcome
            pass
        raise ClientGone()
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()


class _ReleasingStream(StreamingResponse):
    """A streaming response that runs `release` exactly once when the response ends, whether it completed,
    failed or the client went away (even before the body started): it cancels an unfinished generation and
    frees the request's admission slot."""

    def __init__(self, content, release, **kwargs):
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


async def _finished(result: Transcription) -> AsyncIterator[Transcription]:
    """A finished answer as a transcription stream: its text in one delta, then the transcription."""
    if result.text:
        yield result.text
    yield result


async def _sse(
    service: OCRService, include_usage: bool, items: AsyncIterator[str | Transcription]
) -> AsyncIterator[str]:
    """OpenAI streaming of `items` (text deltas, then the final `Transcription`, as `OCRService.transcribe`
    yields them): a role chunk, content chunks, a finish chunk, optionally a usage chunk, then
    `data: [DONE]`. Errors after the status line is sent are reported in-band as an error event."""
    cid, created, model = completion_id(), int(time.time()), service.model_id

    def event(obj: dict[str, Any]) -> str:
        return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"

    yield event(chat_chunk(cid, model, created, {"role": "assistant", "content": ""}))
    try:
        async with asyncio.timeout(service.config.request_timeout_s):
            async for item in items:
                if isinstance(item, Transcription):
                    if item.refusal:  # a schema's answer the page does not give (OpenAI's refusal delta)
                        yield event(chat_chunk(cid, model, created, {"refusal": item.refusal}))
                    yield event(chat_chunk(cid, model, created, {}, finish=item.finish_reason))
                    if include_usage:
                        usage = usage_dict(item.prompt_tokens, item.completion_tokens)
                        yield event(chat_chunk(cid, model, created, None, usage=usage))
                elif item:
                    yield event(chat_chunk(cid, model, created, {"content": item}))
    except TimeoutError:
        yield event(ApiError(504, "generation timed out").body())
    except ApiError as exc:
        yield event(exc.body())
    except Exception as exc:  # the status line is sent already: report in-band, as OpenAI does
        yield event(ApiError(500, f"internal error: {type(exc).__name__}: {exc}").body())
    yield "data: [DONE]\n\n"
