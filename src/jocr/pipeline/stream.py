"""The streaming pipeline: inputs -> page requests -> engine -> Documents, in input order.

Pages of all inputs flow through one queue: each is rendered and preprocessed only when a batch slot needs
it, and its image is dropped as soon as its views exist, so memory stays flat however long the PDFs are.
Finished requests come back through the scheduler's done callback: `iter_documents` blocks on a queue of
them, the server's Reader awaits them on its event loop (`DocumentRun` is the run both drive).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jocr.documents.pages import DocumentError, LoadOptions, PageSource, open_source, select_pages
from jocr.documents.preprocess import is_blank_page
from jocr.errors import one_line
from jocr.layout.figures import FiguresConfig, normalise_figures_mode
from jocr.layout.page_read import PageRead, decide_page, tables_markdown
from jocr.layout.request import (
    PageInput,
    PageRequestBuilder,
    join_windows,
    page_finish_reason,
)
from jocr.lines.anchor import PageAnchor, line_source_answers, normalise_anchor_mode
from jocr.lines.ocr import normalise_ocr_mode
from jocr.pipeline.formulas import cut_formula_crops, mark_page_formulas, read_formulas, reads_formulas
from jocr.pipeline.model import DEFAULT_BATCH_SIZE, DEFAULT_MAX_TOKENS, LoadedModel
from jocr.pipeline.results import Document, PageResult
from jocr.pipeline.retry import Attempt, RetryConfig, choose, retry_seed


@dataclass
class _OpenDoc:
    doc: Document
    source: PageSource | None
    indices: list[int]
    pending: int  # selected pages not finished yet
    owned: bool = True  # opened here (closed here), not handed in already open by the caller

    def close(self) -> None:
        if self.source is not None and self.owned:
            self.source.close()
        self.source = None


@dataclass
class _Job:
    """One page: one request, or one per window of its anchor (`PageAnchor.windows`), whose outputs are
    joined in window order."""

    entry: _OpenDoc
    index: int  # 0-based page index in the source
    slot: int  # position in doc.pages
    inputs: list[PageInput] = field(default_factory=list)  # one per request
    results: list[Any] = field(default_factory=list)  # per request: its GenerationResult once finished
    remaining: int = 0  # requests not finished yet
    error: str | None = None  # the current attempt's failure
    seconds: float = 0.0  # the current attempt's generation, its slowest request
    attempts: list[Attempt] = field(default_factory=list)  # its readings so far (`jocr.pipeline.retry`)
    read: PageRead | None = None  # the one pass over a PDF page (its tables and figures come from it)
    image: Any = None  # the page as rendered, kept until its figures are cut (`figures` not "none")

    @property
    def page(self) -> PageResult:
        return self.entry.doc.pages[self.slot]


def input_name(item: Any) -> str:
    if isinstance(item, bytes | bytearray | memoryview):
        return "<bytes>"
    if hasattr(item, "size") and hasattr(item, "mode"):
        return "<image>"
    return str(item)


class _Pages:
    """The document side of one run: opens inputs one after another, renders and prepares their pages,
    writes results back, and hands out Documents in input order once all their pages are done."""

    def __init__(
        self, inputs, names, model: LoadedModel, pages, max_tokens, builder, options, skip_blank, anchor, ocr,
        figures="none", on_page_image=None,
    ):  # fmt: skip
        self.inputs, self.names, self.model = inputs, names, model
        self.pages, self.max_tokens, self.builder = pages, max_tokens, builder
        self.options, self.skip_blank = options, skip_blank
        self.anchor_mode, self.anchor_config = normalise_anchor_mode(anchor), model.anchor_config
        self.ocr = normalise_ocr_mode(ocr)
        self.figures = FiguresConfig(mode=normalise_figures_mode(figures))
        self.formulas = reads_formulas(model)  # formula regions of pixel pages are cut out and read
        self.on_page_image = on_page_image
        self.open_docs: list[_OpenDoc] = []  # in input order; finished ones leave from the front

    def open(self, item: Any, name: str) -> _OpenDoc:
        doc = Document(source=name)
        doc.metadata = {
            "source": name,
            "prompt": self.builder.prompt,
            "model": self.model.path,
            "max_tokens": self.max_tokens,
        }
        owned = not isinstance(item, PageSource)  # a source the caller opened stays the caller's to close
        try:
            source = open_source(item, self.options, name=name) if owned else item
        except DocumentError as exc:
            doc.error = str(exc)
            return _OpenDoc(doc, None, [], 0)
        try:
            indices = select_pages(self.pages, source.num_pages, name)
        except DocumentError as exc:
            _OpenDoc(doc, source, [], 0, owned).close()
            doc.error = str(exc)
            return _OpenDoc(doc, None, [], 0)
        doc.metadata.update({"kind": source.kind, "num_pages": source.num_pages, "dpi": self.options.dpi})
        doc.pages = [PageResult(page=i + 1) for i in indices]
        entry = _OpenDoc(doc, source, indices, len(indices), owned)
        if not indices:
            entry.close()
        return entry

    def jobs(self, on_open: Callable[[Document], None] | None) -> Iterator[_Job]:
        for item, name in zip(self.inputs, self.names):
            entry = self.open(item, name)
            self.open_docs.append(entry)
            if on_open is not None:
                on_open(entry.doc)
            for slot, index in enumerate(entry.indices):
                yield _Job(entry, index, slot)
            # Every page of this source has been rendered: release the file before opening the next one.
            entry.close()

    def prepare(self, job: _Job) -> bool:
        """Render and preprocess the page; False when there is nothing to generate (an error, blank page)."""
        result = job.page
        t0 = time.perf_counter()
        try:
            image = job.entry.source.render(job.index)
        except DocumentError as exc:
            result.error = str(exc)
            return False
        t1 = time.perf_counter()
        result.width, result.height = image.size
        if self.skip_blank and is_blank_page(image):
            result.finish_reason = "blank"
            result.timings.update(render_s=t1 - t0, preprocess_s=time.perf_counter() - t1)
            return False
        t2 = time.perf_counter()
        result.anchor = self.anchor(job, image)
        image = result.anchor.upright(image)  # a page OCR read turned: upright from here on
        result.width, result.height = image.size
        t3 = time.perf_counter()
        if result.anchor.verdict is not None or result.anchor.source is not None:  # lines were read
            result.timings["anchor_s"] = t3 - t2
        if job.read is not None:
            result.timings["read_s"] = job.read.seconds
        job.image = image  # for the page's tables found in its pixels, and its figures
        if self.figures.mode != "none":
            if job.read is not None and job.read.region_note:
                result.figure_notes.append(job.read.region_note)
        if result.anchor.alone:  # read from its lines alone: nothing to generate
            write_from_lines(result, self.builder, image)
            self.finish(job)
            result.timings.update(render_s=t1 - t0, preprocess_s=t2 - t1)
            return False
        try:
            job.inputs = self.builder.pages(image, result.anchor.request_anchors)
        except Exception as exc:  # e.g. a degenerate page size: this page fails, the run goes on
            result.error = (
                f"{job.entry.doc.source}: page {result.page}: cannot prepare the page ({one_line(exc)})"
            )
            return False
        del image
        job.results, job.remaining = [None] * len(job.inputs), len(job.inputs)
        result.image_tokens = job.inputs[0].image_tokens
        result.prompt_tokens = sum(len(i.prompt_ids) for i in job.inputs)
        result.timings.update(render_s=t1 - t0, preprocess_s=(t2 - t1) + (time.perf_counter() - t3))
        return True

    def anchor(self, job: _Job, image) -> PageAnchor:
        """The page's anchoring decision from one read of the page (`jocr.layout.page_read.decide_page`),
        its lines from the text layer or OCR over `image` (a line source that cannot be used never fails
        the page); the read stays with the job for the page's tables and figures."""
        decision, job.read = decide_page(
            job.entry.source,
            job.index,
            image,
            self.anchor_mode,
            self.anchor_config.version,
            self.model.tokenizer,
            self.anchor_config.max_tokens,
            ocr=self.ocr,
            figures=self.figures.mode != "none",
            contents_alone=True,
            ocr_anchors=self.anchor_config.ocr,
        )
        return decision

    def complete(self, job: _Job, part: int, result, error: BaseException | None, latency: float) -> bool:
        """Records request `part` of the page's current attempt; True once all its requests are in."""
        job.remaining -= 1
        if error is not None and job.error is None:  # a failed decode step fails its pages, not the run
            job.error = f"{job.entry.doc.source}: page {job.page.page}: generation failed ({one_line(error)})"
        job.results[part] = result
        job.seconds = max(job.seconds, latency)
        return job.remaining == 0

    def attempt(self, job: _Job, temperature: float) -> list[Attempt]:
        """Closes the page's current attempt (all its requests in) and readies the next; its attempts."""
        ok = job.error is None
        outputs, reasons = (job.results, [r.finish_reason for r in job.results]) if ok else (None, None)
        job.attempts.append(Attempt(outputs, reasons, job.error, job.seconds, temperature))
        job.results, job.remaining = [None] * len(job.inputs), len(job.inputs)
        job.error, job.seconds = None, 0.0
        return job.attempts

    def conclude(self, job: _Job) -> None:
        """The page from the attempt the retry policy keeps (`choose`): its Markdown, tree and elements."""
        page = job.page
        chosen, _ = choose(job.attempts)
        job.inputs = []
        if chosen is None:
            page.error = job.attempts[-1].error
        else:
            page.timings["generate_s"] = chosen.seconds
            anchor = page.anchor or PageAnchor()
            try:
                self.write(page, chosen.outputs, anchor.tree_lines, anchor.formulas)
                self.finish(job)
            except Exception as exc:  # a page whose output cannot be put together fails alone, not the run
                page.error = f"{job.entry.doc.source}: page {page.page}: output not built ({one_line(exc)})"
        job.image = job.read = None
        job.results, job.attempts = [], []

    def finish(self, job: _Job) -> None:
        """The steps after a page's tree: its tables and figures (`finish_page`); then `on_page_image` is
        handed the page with the image it was read from (its boxes are final: what a document's end still
        does, its formulas' LaTeX and tables joined across pages, changes text, not boxes)."""
        image, job.image = job.image, None
        source = job.entry.doc.source
        stem = "page" if source.startswith("<") else Path(source).stem
        finish_page(job.page, job.read, image, self.figures, stem, self.formulas)
        job.read = None
        if self.on_page_image is not None and image is not None:
            try:
                self.on_page_image(job.entry.doc, job.page, image)
            except Exception as exc:  # what the caller does with the image never fails the page
                job.page.figure_notes.append(f"page image not used ({one_line(exc)})")

    def write(self, page: PageResult, results: list, lines: list | None = None, formulas: list = ()) -> None:
        """The page's Markdown from its requests' results (the windows' outputs joined by blank lines)."""
        from jocr.engine.stats import RequestStats

        texts = [self.builder.text(r.token_ids) for r in results]
        page.raw = join_windows(texts)  # as the model wrote it, references and all
        reasons = [r.finish_reason for r in results]
        page.finish_reason = page_finish_reason(reasons)
        anchors = page.anchor.texts if page.anchor is not None else []
        page.markdown, page.boxes, page.tree = self.builder.page_output(
            texts, anchors, reasons, (page.width, page.height), lines, page.page, formulas
        )
        page.num_tokens = sum(len(r.token_ids) for r in results)
        page.stats = RequestStats.combined([r.stats for r in results if r.stats is not None])

    def ready(self) -> Iterator[Document]:
        # pending reaches 0 only after every selected page was handed out and finished.
        while self.open_docs and self.open_docs[0].pending == 0:
            entry = self.open_docs.pop(0)
            entry.close()  # done, though the job generator may not have resumed to close it yet
            doc = entry.doc
            if self.formulas:  # the document's formula crops, read in one batch
                read_formulas(doc.pages, self.model)
            continued_tables(doc)
            if doc.error is None:
                failed = [p.error for p in doc.pages if p.error]
                if failed:
                    doc.error = failed[0]
            yield doc

    def close(self) -> None:
        """Sources still open if the caller stopped early."""
        for entry in self.open_docs:
            entry.close()


def finish_page(
    page: PageResult,
    read: PageRead | None,
    image,
    figures: FiguresConfig,
    stem: str = "page",
    formulas: bool = False,
) -> None:
    """The steps after a page's tree, the same for `jocr parse` and `jocr batch`: its table blocks read again
    from the PDF page's pieces where that reads them better, or the tables of a page read from its pixels
    found in `image` (`jocr.layout.page_read.tables_markdown`,
    docs/elements.md); with `formulas` (a model that reads formulas) its formula blocks cut out of `image`
    for `read_formulas`; then, unless `figures.mode` is "none", its figures placed in its tree and cut out
    of `image` (the page as rendered; `jocr.layout.figures`) from the read's drawing objects (or the
    image's ink), named `<stem>_p<N>_fig<K>.png` in its Markdown."""
    if page.tree is None or page.error is not None:
        return
    t0 = time.perf_counter()
    before = page.markdown
    source = page.anchor.page_lines if page.anchor is not None else None  # OCR lines keep word boxes
    page.markdown = tables_markdown(page.tree, page.markdown, read, image, source.lines if source else None)
    if page.markdown != before:
        page.timings["tables_s"] = time.perf_counter() - t0
    if formulas:
        mark_page_formulas(page)
        cut_formula_crops(page.tree, image)  # read with the other pages' formulas (`read_formulas`)
    if figures.mode == "none" or image is None:
        return
    from jocr.layout.figures import name_figures, place_figures

    t0 = time.perf_counter()
    regions, size = (None, None) if read is None else (read.regions, read.region_size)
    # the whole text layer counts against a candidate, not only the lines the answer cites
    lines = page.anchor.tree_lines if page.anchor is not None else None
    try:
        placed = place_figures(page.tree, image, regions, figures, size, [ln.box for ln in lines or ()])
    except Exception as exc:  # figures are a nicety: a page never fails for them
        page.figure_notes.append(f"figures not cut ({one_line(exc)})")
        return
    page.figures = placed.figures
    page.figure_notes.extend(placed.notes)
    if placed.figures:
        page.markdown = name_figures(page.tree, stem, figures.mode)
    page.timings["figures_s"] = time.perf_counter() - t0


def continued_tables(doc: Document) -> None:
    """A table running on over a page break joined into one (`merge_continued_tables`); the pages changed
    take their Markdown from their trees."""
    from jocr.layout.render import page_markdown
    from jocr.layout.tables_pages import merge_continued_tables

    run: list[PageResult] = []
    for page in [*doc.pages, None]:
        if (
            page is not None
            and page.tree is not None
            and page.error is None
            and (not run or page.page == run[-1].page + 1)
        ):
            run.append(page)
            continue
        if len(run) >= 2:
            for k in merge_continued_tables([p.tree for p in run]):
                run[k].markdown = page_markdown(run[k].tree)
        run = [page] if page is not None and page.tree is not None and page.error is None else []


def write_from_lines(page: PageResult, builder: PageRequestBuilder, image=None) -> None:
    """The Markdown of a page read from its lines alone (`PageAnchor.alone`: an OCR'd page under --anchor
    auto): its tree by the rules over the lines' boxes (`jocr.layout.line_rules`: columns, paragraphs,
    headings, furniture; with `image`, grouped and ordered by its regions where a layout detector is
    installed: `jocr.layout.regions`), or, for a decision without its lines (an older `jocr batch` state),
    every run in order, resolved by `page_text` like a model's answer (docs/parsing.md, "OCR line source")."""
    answers = line_source_answers(page.anchor.windows)
    page.raw = join_windows(answers)
    page.finish_reason = "stop"
    lines = page.anchor.page_lines
    if lines is not None:  # the rules over the lines' own boxes: columns, paragraphs, headings
        from jocr.layout.line_rules import tree_of_lines
        from jocr.layout.regions import RegionsConfig, detect_regions
        from jocr.layout.render import page_markdown
        from jocr.layout.tree import lines_unit

        unit = lines_unit(lines.width, page.width)
        found = None if image is None else detect_regions(image, RegionsConfig(), (lines.width, lines.height))
        if found is not None and found.cpu_s:
            page.timings["regions_cpu_s"] = found.cpu_s
        page.tree = tree_of_lines(lines.to_dict(), unit, page.page, found.regions if found else None)
        page.markdown, page.boxes = page_markdown(page.tree), []
        return
    page.markdown, page.boxes, page.tree = builder.page_output(
        answers, page.anchor.texts, ["stop"] * len(answers), (page.width, page.height), None, page.page
    )


class DocumentRun:
    """One run of the streaming pipeline as steps a driver calls, so the same run can be driven by a
    blocking loop (`iter_documents`) or by an event loop (the server's Reader) without a thread of its own.

    `advance(finished, limit)` records finished requests and renders, prepares and submits pages (at most
    `limit`, else until the window is full): blocking CPU work. Each request's end is handed to
    `deliver((job, part, result, error, latency))` on the decode thread (a page anchored in several windows
    is one request per window, `part`); the driver passes those items back to
    the next `advance`. `done` says every page has finished; `close()` stops the run: it cancels the
    requests in flight (or closes the run's own scheduler) and closes the sources opened here.

    Inputs that fail to open, or pages that fail to render, are reported on the Document (`.error` /
    page `.error`) instead of stopping the run; the other inputs still complete. With `skip_blank` a page
    without ink (`is_blank_page`) gets empty Markdown and finish_reason "blank" without running the model,
    which would otherwise read something into the empty page. `on_open(doc)` is called as each input is
    opened (its `.pages` list the selected pages, or `.error` says why it could not be opened); `on_page`
    as each page finishes. An input may be a `PageSource` already open (it is not closed here).

    runner: a `jocr.engine.Scheduler` shared with other callers (the server's), used instead of one of
    this run's own; it is left open, and this run's requests in it are cancelled when the run closes.
    anchor: "auto", "on" or "off": whether a page's lines go into its prompt (`jocr.lines.anchor.page_anchor`,
    docs/parsing.md); each page's `.anchor` says what happened. ocr: "auto", "rapidocr", "tesseract" or
    "none": the OCR line source for images and PDF pages without a usable text layer
    (`jocr.lines.source.page_lines`); under anchor "auto" an OCR'd page is read from its lines alone.
    figures: "none" (default), "files" or "inline": each page's figures placed in its tree and cut out of
    its image (`PageResult.figures`; docs/layout.md, "Figures"). on_page_image: called with each page that
    was rendered, once its tree and figures are done, and the page image it was read from (upright), e.g. to
    draw its blocks without rendering it again (`jocr parse --draw`); the image is the run's, not to be
    changed. retries: sampled re-readings of a page read from its image alone that did not finish
    (`jocr.pipeline.retry`, the policy `jocr batch` shares; default 0: greedy, once).
    """

    def __init__(
        self,
        inputs: Iterable[Any],
        model: LoadedModel,
        deliver: Callable[[tuple], None],
        pages: str | Sequence[int] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        spec: str | int = "auto",
        batch_size: int = DEFAULT_BATCH_SIZE,
        prompt: str | None = None,
        options: LoadOptions | None = None,
        names: Sequence[str] | None = None,
        on_page: Callable[[Document, PageResult], None] | None = None,
        skip_blank: bool = True,
        on_open: Callable[[Document], None] | None = None,
        runner: Any = None,
        anchor: str = "auto",
        ocr: str = "auto",
        figures: str = "none",
        on_page_image: Callable[[Document, PageResult, Any], None] | None = None,
        retries: int = 0,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, not {batch_size}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, not {max_tokens}")
        inputs = list(inputs)
        names = list(names) if names is not None else [input_name(i) for i in inputs]
        builder = PageRequestBuilder(model.tokenizer, model.vision, prompt)
        self.pages = _Pages(
            inputs,
            names,
            model,
            pages,
            max_tokens,
            builder,
            options or LoadOptions(),
            skip_blank,
            anchor,
            ocr,
            figures,
            on_page_image,
        )
        self.retry = RetryConfig(retries)
        self.max_tokens = max_tokens
        self.deliver = deliver
        self.on_page = on_page
        # Requests waiting beyond the running batch, so a row that finishes is refilled at once (continuous
        # batching in the scheduler) while the next pages render here, overlapping rendering with decoding.
        self.capacity = batch_size + max(1, batch_size // 2)
        self.handles: dict[tuple[int, int], Any] = {}  # (id(job), part) -> handle, for requests in flight
        self._jobs = self.pages.jobs(on_open)
        self.exhausted = False
        self.closed = False
        self._own_runner = runner is None
        self.runner = model.runner(spec, batch_size) if runner is None else runner

    @property
    def done(self) -> bool:
        return not self.handles and (self.exhausted or self.closed)

    @property
    def wants_pages(self) -> bool:
        """More pages may be handed out now (the window has room and the inputs are not exhausted)."""
        return not (self.exhausted or self.closed) and len(self.handles) < self.capacity

    def advance(self, finished: Iterable[tuple] = (), limit: int | None = None) -> list[Document]:
        """Record `finished` items, hand out up to `limit` pages (None: while `wants_pages`); the
        Documents completed by now, in input order."""
        for job, part, result, error, latency in finished:
            if self.handles.pop((id(job), part), None) is None:
                continue  # a window's request cancelled when another window of its page was refused
            if not self.pages.complete(job, part, result, error, latency):
                continue
            attempts = self.pages.attempt(job, self.retry.temperature(len(job.attempts)))
            anchored = job.page.anchor is not None and job.page.anchor.anchored
            if not self.closed and self.retry.again(attempts, anchored):
                self._submit(job, len(attempts))
                continue
            self.pages.conclude(job)
            self._finish(job)
        taken = 0
        while self.wants_pages and (limit is None or taken < limit):
            job = next(self._jobs, None)
            if job is None:
                self.exhausted = True
                break
            taken += 1
            if not self.pages.prepare(job):
                self._finish(job)
                continue
            self._submit(job)
        return list(self.pages.ready())

    def _submit(self, job: _Job, attempt: int = 0) -> None:
        """Hands the page's requests (one per anchor window) to the runner, for its attempt `attempt`
        (0: greedy; a retry samples with the policy's temperature and seed)."""
        from jocr.engine.requests import GenerationRequest

        submitted = time.perf_counter()
        temperature = self.retry.temperature(attempt)
        seed = retry_seed(job.entry.doc.source, job.page.page, attempt) if temperature else None
        for part, page_input in enumerate(job.inputs):
            request = GenerationRequest(
                prompt_ids=page_input.prompt_ids,
                images=[page_input.views],
                max_tokens=self.max_tokens,
                temperature=temperature,
                seed=seed,
            )

            def done(result, error, job=job, part=part) -> None:
                self.deliver((job, part, result, error, time.perf_counter() - submitted))

            try:
                self.handles[(id(job), part)] = self.runner.submit(request, on_done=done)
            except ValueError as exc:  # refused by the engine, e.g. prompt + max_tokens too long
                for earlier in range(part):
                    handle = self.handles.pop((id(job), earlier), None)
                    if handle is not None:
                        handle.cancel()
                job.page.error = f"{job.entry.doc.source}: page {job.page.page}: {one_line(exc)}"
                job.inputs, job.results = [], []
                self._finish(job)
                return

    def _finish(self, job: _Job) -> None:
        job.entry.pending -= 1
        if self.on_page is not None:
            self.on_page(job.entry.doc, job.page)

    def close(self) -> None:
        self.closed = True
        if self._own_runner:
            self.runner.close()
        else:
            for handle in self.handles.values():
                handle.cancel()
        self.handles.clear()
        self._jobs.close()
        self.pages.close()


def iter_documents(inputs: Iterable[Any], model: LoadedModel, **options: Any) -> Iterator[Document]:
    """Parse inputs in order, yielding each Document as soon as its last page is done; `options` are
    `DocumentRun`'s (pages, max_tokens, spec, batch_size, prompt, options, names, on_page, skip_blank,
    on_open, runner, anchor, ocr, figures, on_page_image). Stopping early (closing the generator) cancels the
    run's requests in flight.
    """
    finished: queue.SimpleQueue = queue.SimpleQueue()  # items from the decode thread's done callbacks
    run = DocumentRun(inputs, model, finished.put, **options)
    try:
        items: list[tuple] = []
        while True:
            yield from run.advance(items)
            if run.done:
                return
            items = [finished.get()]  # blocks until a request finishes
            while not finished.empty():
                items.append(finished.get_nowait())
    finally:
        run.close()
