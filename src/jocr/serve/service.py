"""The model side of the server: documents -> page images -> views, and generation through the engine's
thread-safe Scheduler (continuous batching shared by every request), bridged to asyncio; every request is
admitted first (admission.py: its slots and decoded pixels, held on a `Ticket`).

Nothing here runs model or image work on the event loop: documents are opened and pages rendered and
preprocessed on a small worker pool (PDF work is serialised by the documents' own PDFium lock), generation
runs in the Scheduler's own thread, and the engine's callbacks hand each request's tokens and ending to the
loop with `call_soon_threadsafe` (`post_to_loop`), so a request waiting for its tokens holds no thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from jocr.documents.browser import BrowserError, RenderedPage, WebRenderer
from jocr.documents.fetch import FetchError, decode_data_url, fetch_url
from jocr.documents.pages import DocumentError, LoadOptions, PageSource, open_source
from jocr.documents.preprocess import is_blank_page
from jocr.engine.stats import RequestStats
from jocr.layout.request import join_windows, page_finish_reason, page_text
from jocr.lines.references import without_open_reference
from jocr.serve.admission import Admission, Ticket
from jocr.serve.asking import Asking
from jocr.serve.config import ServeConfig
from jocr.serve.metrics import Metrics
from jocr.serve.openai import ApiError

log = logging.getLogger("jocr.serve")
STREAM_INTERVAL_S = 0.05


def post_to_loop(loop: asyncio.AbstractEventLoop, put: Callable[[Any], None]) -> Callable[[Any], None]:
    """A callable for another thread (the engine's decode thread) that runs `put(item)` on `loop`.

    Once the loop is closed (the server shut down with requests in flight) the item is dropped: raising
    there would fail the decode step of every other request in the batch."""

    def post(item: Any) -> None:
        try:
            loop.call_soon_threadsafe(put, item)
        except RuntimeError:  # loop closed: nobody is waiting for the item any more
            pass

    return post


async def all_or_none(coroutines) -> list:
    """Run the coroutines together; when one fails, cancel the others before raising (a plain gather would
    leave them decoding images, and reserving pixels, for a request that has already been answered)."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


@dataclass
class SamplingParams:
    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    # An asking request's answer (docs/asking.md, "Decoding an answer"): decoded as `jocr ask` decodes a
    # question's (`fields` empty) or `jocr extract` a schema's JSON object (its field names).
    answer: bool = False
    fields: tuple[str, ...] = ()
    caption: bool = False  # the answer is a figure caption (`jocr.pipeline.ask_decoding.caption_shape`)


@dataclass
class Transcription:
    """One finished generation: `text` is the post-processed Markdown (an asking request's: the answer, or
    the schema's JSON object); `raw` is the decoded model output; `refusal` why a schema's answer is not
    given (its content then empty)."""

    text: str
    raw: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    stats: dict[str, Any] = field(default_factory=dict)
    refusal: str | None = None


@dataclass
class ChatImage:
    """An image of a chat request: the picture, and the page's anchor texts (one per window) when it is a
    PDF page that the server's anchor setting gives one (`EngineBackend.anchor`), with its text-layer
    `lines` in the anchor's order (`PageAnchor.tree_lines`: the answer is checked against them as
    `jocr parse` checks it). A page asked a question also keeps whether it is `blank`."""

    image: Image.Image
    anchors: list[str] = field(default_factory=list)
    blank: bool = False
    lines: list | None = None


@dataclass
class Submitted:
    """A chat request handed to the engine: one engine request per anchor window (one without an anchor),
    as `jocr parse` reads the page; their handles, the prompt length, the first image's size
    (post-processing) and the queue their engine callbacks fill on the event loop: (part, "ids", new ids)
    items, then one (part, "done", result) or (part, "error", exception) per part."""

    handles: list[Any]
    prompt_tokens: int
    size: tuple[int, int]
    events: asyncio.Queue
    anchors: list[str] = field(default_factory=list)  # post-processing resolves their runs' references
    lines: list | None = None  # the page's text-layer lines (`ChatImage.lines`): the answer is checked
    asking: Asking | None = None  # a question or a schema's fields: answered, not post-processed as Markdown

    @property
    def done(self) -> bool:
        return all(getattr(h, "done", True) for h in self.handles)


class OpenDocument:
    """An opened document (PDF or image) whose pages render on the worker pool, each page's pixels reserved
    on the request's ticket before it is rendered."""

    def __init__(self, source: PageSource, title: str, service: OCRService, ticket: Ticket):
        self.source = source
        self.title = title
        self.num_pages = source.num_pages
        self.ticket = ticket
        self._service = service
        self._reserved: set[int] = set()

    async def reserve(self, index: int) -> None:
        """Reserve the pixels page `index` decodes to (once per page): 413 over the request's limit, 429
        over the server's."""
        if index not in self._reserved:
            self.ticket.pixels.add(await self._service.run_blocking(self.source.page_pixels, index))
            self._reserved.add(index)

    async def render(self, index: int) -> Image.Image:
        await self.reserve(index)
        return await self._service.run_blocking(self.source.render, index)

    async def anchors(self, index: int) -> tuple[list[str], list | None]:
        """The page's anchor texts (one per window) under the server's anchor setting, and its text-layer
        lines (`PageAnchor.tree_lines`); ([], None) for the image alone."""
        service = self._service
        mode = service.config.anchor
        if self.source.kind != "pdf" or mode == "off":
            return [], None

        def decide() -> tuple[list[str], list | None]:
            decision = service.generator.anchor(self.source, index, mode)
            return decision.texts, decision.tree_lines if decision.anchored else None

        return await service.run_blocking(decide)

    async def question_anchors(self, index: int, image: Image.Image) -> tuple[list[str], Any, Image.Image]:
        """The page's anchor texts, usable lines and image for a question (`EngineBackend.question_anchor`:
        as `jocr ask` reads a page, under the server's anchor and OCR settings): a page OCR found turned is
        asked upright, in its lines' frame (`PageAnchor.upright`), as `jocr ask` asks it."""
        service = self._service

        def decide() -> tuple[list[str], Any, Image.Image]:
            mode = service.config.anchor
            ocr = service.config.ocr
            decision, lines = service.generator.question_anchor(self.source, index, mode, image, ocr)
            return decision.texts, lines, decision.upright(image)

        return await service.run_blocking(decide)

    async def close(self) -> None:
        await self._service.run_blocking(self.source.close)


class OCRService:
    """Pages in, Markdown out, for many concurrent requests.

    `generator` is the model side (`jocr.serve.backend.EngineBackend`):
    `prepare(image) -> (views, n_image_tokens)`, `prompt_ids(prompt, counts, anchor=None)`,
    `anchor(source, page_index, mode) -> PageAnchor` (for PDF pages),
    `submit(prompt_ids, views, params, on_token, on_done) -> handle` (`on_token(new ids)` per chunk, then
    `on_done(result, error)` once, from any thread), `cancel(handle)`, `decode(ids)`,
    `finish(text, (width, height), finish_reason)` (post-processing) and `model_id`.
    """

    def __init__(self, generator, config: ServeConfig, metrics: Metrics | None = None):
        self.generator = generator
        self.config = config
        self.metrics = metrics or Metrics()
        self.admission = Admission(config, self.metrics)
        self.model_id = getattr(generator, "model_id", config.model_id)
        self.created = int(time.time())
        self._workers = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, config.preprocess_workers), thread_name_prefix="jocr-prep"
        )
        # URL fetches block on the network (documents/fetch.py is synchronous): a pool of their own, so
        # they never hold up preprocessing; bounded by the admitted requests.
        self._fetchers = concurrent.futures.ThreadPoolExecutor(
            max_workers=config.max_batch + config.max_queue + 2, thread_name_prefix="jocr-fetch"
        )
        self.load_options = LoadOptions(
            max_pixels=config.max_image_pixels,
            max_bytes=config.max_body_bytes,
            fetch_limits=config.fetch,
            text_layer_timeout_s=config.text_layer_timeout_s,
        )
        # Chromium starts on the first web page, not before (documents/browser.py).
        self.web = WebRenderer(config.browser, config.fetch)

    async def run_blocking(self, fn: Callable, *args):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._workers, fn, *args)

    # Inputs -----------------------------------------------------------------------------------------
    async def fetch(
        self, url: str, deadline: float | None = None, allow_data: bool = False
    ) -> tuple[bytes, str, str]:
        """(data, content_type, final_url) for an http(s) URL (or a data: URL when `allow_data`);
        FetchError -> ApiError with the fetcher's status and one-line message."""
        limits = self.config.fetch
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ApiError(504, "request timed out before fetching")
            limits = dataclasses.replace(limits, timeout_s=min(limits.timeout_s, remaining))
        try:
            if allow_data and url[:5].lower() == "data:":
                got = await self.run_blocking(decode_data_url, url, self.config.max_body_bytes)
            else:
                loop = asyncio.get_running_loop()
                got = await loop.run_in_executor(self._fetchers, fetch_url, url, limits)
        except FetchError as exc:
            raise ApiError(exc.status, str(exc), code="fetch_error") from None
        return got.data, got.content_type, got.final_url

    def admit(self, slots: int = 1) -> Ticket:
        """Admit a request (429 past the capacity): the ticket every route holds while it works."""
        return Ticket(self.admission, slots)

    async def open_document(self, data: bytes, name: str, ticket: Ticket) -> OpenDocument:
        """Open a document whose pages reserve their pixels on `ticket` before they render."""

        def _open() -> OpenDocument:
            try:
                source = open_source(data, self.load_options, name=name)
            except DocumentError as exc:
                raise ApiError(400, str(exc), code="bad_document") from None
            return OpenDocument(source, source.title, self, ticket)

        return await self.run_blocking(_open)

    async def render_web_page(
        self, html: bytes, url: str, content_type: str, mode: str, deadline: float, ticket: Ticket
    ) -> RenderedPage:
        """A fetched HTML page rendered in Chromium: a PDF (mode "pdf", whose pages reserve their pixels when
        they are rendered) or a PNG ("screenshot", "pageshot": the image's largest size is reserved on
        `ticket` first); BrowserError -> ApiError with the renderer's status and one-line message."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ApiError(504, "request timed out before rendering the page")
        if mode != "pdf":
            browser = self.config.browser
            width, height = browser.viewport
            ticket.pixels.add(
                width * (height if mode == "screenshot" else max(height, browser.max_pageshot_height))
            )
        # Half a second less than the request has left, so a slow page gets the renderer's own message.
        budget = max(0.1, remaining - 0.5)
        future = self.web.submit(html, url, mode, content_type=content_type, timeout_s=budget)
        try:
            page = await asyncio.wrap_future(future)
        except BrowserError as exc:
            headers = {"Retry-After": str(self.config.retry_after_s)} if exc.status == 429 else None
            raise ApiError(exc.status, str(exc), code="browser_error", headers=headers) from None
        if page.blocked:
            log.info(
                "%s: %d request(s) refused: %s", url[:200], len(page.blocked), "; ".join(page.blocked[:5])
            )
        return page

    async def load_image(
        self,
        url: str,
        index: int,
        deadline: float | None,
        ticket: Ticket,
        with_anchor: bool = True,
        asking: bool = False,
    ) -> ChatImage:
        """The first page of an image or PDF given by URL (chat `image_url` parts), with its anchor windows
        when it is a PDF page and `with_anchor` (`OpenDocument.anchors`; a request of several images is never
        anchored, so their text layers are not read); its pixels are reserved on `ticket` before it is
        decoded. `asking`: the page is asked (a question or fields): its anchor and lines are read as
        `jocr ask` reads them (`OpenDocument.question_anchors`), and a blank page is marked so."""
        data, _ctype, _final = await self.fetch(url, deadline, allow_data=True)
        doc = await self.open_document(data, f"image {index + 1}", ticket)
        try:
            image = await doc.render(0)
            if not asking:
                if not with_anchor:
                    return ChatImage(image)
                anchors, lines = await doc.anchors(0)
                return ChatImage(image, anchors, lines=lines)
            blank = await self.run_blocking(is_blank_page, image)
            if blank or not with_anchor:
                return ChatImage(image, blank=blank)
            anchors, _lines, image = await doc.question_anchors(0, image)
            return ChatImage(image, anchors)
        except DocumentError as exc:
            raise ApiError(400, str(exc), code="bad_document") from None
        finally:
            await doc.close()

    # Generation -------------------------------------------------------------------------------------
    async def submit(
        self,
        images: list[Image.Image],
        prompt: str,
        params: SamplingParams,
        anchors: Sequence[str] = (),
        asking: Asking | None = None,
        lines: list | None = None,
    ) -> Submitted:
        """Preprocess the images and hand the request to the engine; a bad request (e.g. too long for the
        model) raises ApiError here, before any response is started. `anchors`: a one-page request's text
        layer in windows (`ChatImage.anchors`), each placed after the prompt of its own engine request as
        `jocr parse` places it; `lines`, its text-layer lines (`ChatImage.lines`), which the finished
        answer is checked against as `jocr parse` checks it (`jocr.layout.request.page_text`). `asking`:
        the prompt is a question (or a schema's extraction prompt), its ids built as `jocr ask` builds them
        (`jocr.pipeline.ask.question_ids`). The engine's callbacks put the requests' tokens and endings
        into `Submitted.events` on this event loop."""
        events: asyncio.Queue = asyncio.Queue()
        post = post_to_loop(asyncio.get_running_loop(), events.put_nowait)
        windows: list[str | None] = list(anchors) or [None]
        if asking is not None:
            names = tuple(f.name for f in asking.fields) if asking.fields is not None else ()
            params = dataclasses.replace(params, answer=True, fields=names, caption=asking.caption)

        def prepare_and_submit() -> Submitted:
            # Preprocessing, tokenising and the engine's checks are CPU work: off the event loop.
            prepared = [self.generator.prepare(im) for im in images]
            counts = [n for _v, n in prepared]
            views = [v for v, _n in prepared]
            handles, prompt_tokens = [], 0
            try:
                for part, anchor in enumerate(windows):
                    if asking is None:
                        prompt_ids = self.generator.prompt_ids(prompt, counts, anchor=anchor)
                    else:
                        prompt_ids = self.generator.question_ids(prompt, counts, anchor=anchor)
                    prompt_tokens += len(prompt_ids)

                    def on_token(ids: list[int], part: int = part) -> None:
                        post((part, "ids", ids))

                    def on_done(result, error: BaseException | None, part: int = part) -> None:
                        post((part, "done", result) if error is None else (part, "error", error))

                    handles.append(self.generator.submit(prompt_ids, views, params, on_token, on_done))
            except BaseException:
                for handle in handles:
                    self.generator.cancel(handle)
                raise
            return Submitted(handles, prompt_tokens, images[0].size, events, list(anchors), lines, asking)

        future = self._workers.submit(prepare_and_submit)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:  # the client went away: cancel the generation once it is submitted

            def cancel(done: concurrent.futures.Future) -> None:
                if not done.cancelled() and done.exception() is None:
                    self.cancel(done.result())

            future.add_done_callback(cancel)
            raise

    def reads_formulas(self) -> bool:
        """Whether formula requests go to a formula reader of their own (`EngineBackend.reads_formulas`)."""
        return bool(getattr(self.generator, "reads_formulas", False))

    async def read_formulas(self, images: list[Image.Image], max_tokens: int) -> Transcription:
        """The images' formulas by the formula reader, off the event loop: each read one as `$$...$$`, blank
        lines between; an image read as no formula adds nothing (an empty answer, never an invented one)."""
        from jocr.model.formula_reader import latex_tokens

        latex = await self.run_blocking(self.generator.read_formulas, images, max_tokens)
        text = "\n\n".join(f"$$\n{x}\n$$" for x in latex if x)
        tokens = sum(len(latex_tokens(x)) + 1 for x in latex)
        return Transcription(text, text, 0, tokens, "stop", {"formulas": sum(1 for x in latex if x)})

    def cancel(self, submitted: Submitted) -> None:
        for handle in submitted.handles:
            self.generator.cancel(handle)

    async def transcribe(self, submitted: Submitted) -> AsyncIterator[str | Transcription]:
        """Yield a submitted request's text deltas as tokens arrive, then the final `Transcription` (the last
        item).

        The deltas add up to exactly the final post-processed text: each delta extends the stable part of
        the post-processed text so far (up to its last complete word, before any unfinished grounding tag
        or reference), so clean-ups that only touch the tail never retract streamed text. A page read in
        windows streams its windows in order: a window's text follows once the windows before it have
        finished. A page read with its text-layer lines (`Submitted.lines`) streams nothing until all its
        windows have finished: its answer is checked against the lines then (`page_text`: skipped runs put
        back, broken answers replaced), which may change any part of it, and the stream is then the same
        text as the answer `jocr parse` writes. The caller must have been admitted (`admission.acquire`);
        `submitted` is a request already handed to the engine (`submit`)."""
        size, anchors = submitted.size, submitted.anchors
        parts = len(submitted.handles)
        ids: list[list[int]] = [[] for _ in range(parts)]
        results: list[Any] = [None] * parts
        emitted = ""
        last_emit = 0.0
        checked = submitted.lines is not None and submitted.asking is None
        try:
            while any(r is None for r in results):
                part, kind, item = await submitted.events.get()
                if kind == "ids":
                    ids[part].extend(item)
                    if checked:
                        continue
                    now = time.monotonic()
                    # Post-processing is O(text) per call: at most STREAM_INTERVAL_S apart per request.
                    if now - last_emit < STREAM_INTERVAL_S:
                        continue
                    last_emit = now
                    stable = self._stable_text(ids, results, anchors, size, submitted.asking)
                    if len(stable) > len(emitted) and stable.startswith(emitted):
                        delta, emitted = stable[len(emitted) :], stable
                        yield delta
                elif kind == "done":
                    results[part] = item
                else:  # the engine's error: the request answers 500 with its message
                    raise item
        except BaseException:
            self.cancel(submitted)
            raise
        texts = [self.generator.decode(r.token_ids) for r in results]
        raw = join_windows(texts)
        reasons = [r.finish_reason for r in results]
        finish_reason = page_finish_reason(reasons)
        refusal = None
        if submitted.asking is not None:
            scores = [r.mean_logprob() for r in results]
            text, raw, finish_reason, refusal = submitted.asking.answer(texts, reasons, anchors, scores)
        else:
            text = self.generator.finish(
                page_text(texts, anchors, reasons, submitted.lines), size, finish_reason
            )
        stats = _stats_dict(results)
        completion_tokens = sum(len(r.token_ids) for r in results)
        self.metrics.observe_generation(
            submitted.prompt_tokens,
            completion_tokens,
            int(stats.get("spec_steps") or 0),
            int(stats.get("spec_tokens") or 0),
        )
        if text.startswith(emitted) and len(text) > len(emitted):
            yield text[len(emitted) :]
        elif not text.startswith(emitted):
            log.warning("streamed text is not a prefix of the final text; the stream differs from it")
        yield Transcription(
            text, raw, submitted.prompt_tokens, completion_tokens, finish_reason, stats, refusal
        )

    def _stable_text(
        self, ids: list[list[int]], results: list[Any], anchors: list[str], size, asking: Asking | None
    ) -> str:
        """The part of a request's text so far that later tokens cannot change. Reading: the post-processed
        Markdown's (`_partial`). A question read in one window: its answer's (references resolved, as
        `jocr ask`); a question read in several windows, whose answer is chosen once all have finished,
        or a schema's JSON object, which is checked whole: nothing before the end."""
        if asking is None:
            text = _without_open_grounding(self._partial(ids, results, anchors))
            return _stable_prefix(self.generator.finish(text, size, None))
        return _stable_prefix(asking.answer_so_far([self.generator.decode(part) for part in ids], anchors))

    def _partial(self, ids: list[list[int]], results: list[Any], anchors: list[str]) -> str:
        """The page text so far of a request (read in windows when `anchors`): the finished windows before
        the first unfinished one, then that one's tokens so far, without a reference still being written
        (`@1` may become `@12`)."""
        texts, reasons = [], []
        for part_ids, result in zip(ids, results):
            texts.append(self.generator.decode(part_ids))
            reasons.append(None if result is None else result.finish_reason)
            if result is None:
                if anchors:
                    texts[-1] = without_open_reference(texts[-1])
                break
        return page_text(texts, anchors, reasons)

    async def transcribe_all(self, submitted: Submitted) -> Transcription:
        """A submitted request's final `Transcription` (`transcribe` without the deltas)."""
        final = None
        async for item in self.transcribe(submitted):
            if isinstance(item, Transcription):
                final = item
        assert final is not None
        return final

    def close(self) -> None:
        close = getattr(self.generator, "close", None)
        if close is not None:
            close()
        self.web.close()
        self._workers.shutdown(wait=False, cancel_futures=True)
        self._fetchers.shutdown(wait=False, cancel_futures=True)


def _without_open_grounding(raw: str) -> str:
    """Raw output up to an unfinished grounding block (`<|ref|>label<|/ref|><|det|>[[...]]<|/det|>`), whose
    post-processed form changes once it closes."""
    closed = raw.rfind("<|/det|>")
    start = closed + len("<|/det|>") if closed >= 0 else 0
    cut = raw.find("<|", start)
    return raw if cut < 0 else raw[:cut]


def _stable_prefix(text: str) -> str:
    """The part of a partial post-processed transcription that later tokens cannot change: up to the last
    complete word (trailing whitespace and the word being written may still be stripped or extended)."""
    end = len(text)
    while end and not text[end - 1].isspace():
        end -= 1
    return text[:end].rstrip()


def _stats_dict(results: list[Any]) -> dict[str, Any]:
    """A request's decode statistics as a dict: its one result's, or its windows' summed
    (`RequestStats.combined`, as `jocr parse` sums a page's)."""
    total = RequestStats.combined([r.stats for r in results if getattr(r, "stats", None) is not None])
    return {} if total is None else {**total.to_dict(), "spec_tokens": total.spec_tokens}
