"""The batch job's stages as plain functions over rows (dicts), so they run and test without Ray:

    documents -> expand_documents -> page rows -> render_pages -> rows with RGB pixels
              -> PageReader (one per inference actor: request building, batched generation with
                 retries, post-processing) -> result rows -> document_from_rows -> Markdown / JSON

Pages are opened with `jocr.documents.pages.open_source`, made into requests and Markdown with
`jocr.layout.request.PageRequestBuilder`, and assembled with `jocr.pipeline.Document`: the same code as
`jocr parse`, so a page reads the same either way.

Retry policy: `jocr parse`'s (`jocr.pipeline.retry`): greedy, once, unless `retries` asks for sampled
re-readings of a page read from its image alone; `PageReader` applies it to a batch of pages at a time.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from jocr.bulk.storage import read_uri, uri_scheme
from jocr.documents.pages import DocumentError, LoadOptions, open_source, select_pages
from jocr.documents.preprocess import is_blank_page
from jocr.errors import one_line
from jocr.layout.figures import Figure, FiguresConfig, normalise_figures_mode
from jocr.layout.formulas import formula_region
from jocr.layout.page_read import PageRead, decide_page
from jocr.layout.postprocess import Box
from jocr.layout.request import PageRequestBuilder, join_windows, page_text, page_tree
from jocr.layout.tree import PageTree
from jocr.lines.anchor import PageAnchor
from jocr.pipeline import DEFAULT_BATCH_SIZE, DEFAULT_MAX_TOKENS, Document, PageResult
from jocr.pipeline.formulas import read_formulas, reads_formulas, reads_formulas_at
from jocr.pipeline.retry import Attempt, RetryConfig, choose, retry_seed
from jocr.pipeline.stream import continued_tables, finish_page, write_from_lines


@dataclass
class PageSettings:
    """What turns a page into Markdown (one per job, shipped to every task and actor)."""

    model: str | None = None
    device: str = "cpu"
    prompt: str | None = None
    pages: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    spec: str | int = "auto"
    batch_size: int = DEFAULT_BATCH_SIZE
    dpi: float = 144.0
    longest_side: int | None = None
    password: str | None = None
    skip_blank: bool = True
    retries: int = RetryConfig.retries  # sampled re-readings of an unfinished image-only page (as parse)
    retry_temperatures: tuple[float, ...] = RetryConfig.temperatures
    page_timeout: float | None = None  # seconds of generation per attempt; None: no limit
    max_doc_pages: int | None = None  # documents with more pages fail at once (a "huge document")
    threads: int = 0  # torch threads per actor; 0 leaves torch's default
    anchor: str = "auto"  # a PDF page's text layer in the prompt (jocr.lines.anchor.page_anchor)
    ocr: str = "auto"  # the OCR line source of images and pages without a usable layer (jocr.lines.source)
    figures: str = "none"  # "files": figures cut out of pages beside each document's Markdown; "none"
    vllm_kwargs: dict = field(default_factory=dict)

    def retry_config(self) -> RetryConfig:
        return RetryConfig(self.retries, tuple(self.retry_temperatures))

    def figures_config(self) -> FiguresConfig:
        return FiguresConfig(mode=normalise_figures_mode(self.figures))

    def load_options(self) -> LoadOptions:
        return LoadOptions(dpi=self.dpi, longest_side=self.longest_side, password=self.password)

    def model_dir(self) -> Path:
        """The model directory: `model`, else $JOCR_MODEL or the bundled models."""
        from jocr.pipeline import default_model_dir

        return Path(self.model) if self.model else default_model_dir()

    def fingerprint(self, engine: str = "jocr") -> str:
        """The manifest's `config`: a hash of everything that makes a page's reading, so that a resumed job
        keeps only pages read the same way. The model by its contents (`model_digest`: a new model at the
        same path is another model; a copy elsewhere is the same), the jocr version (post-processing rules
        change with it), the engine and device type (their numerics differ: bf16 on CUDA, fp32 on CPU), and
        the page options. Not the speculation setting, batch size or threads: they never change a greedy
        reading (docs/engine.md)."""
        from jocr import __version__
        from jocr.pipeline.model import model_digest

        directory = self.model_dir()
        fields = {
            "model": model_digest(directory) if directory.is_dir() else str(directory),
            "jocr": __version__,
            "engine": engine,
            "device": self.device.split(":")[0],
            "vllm_kwargs": self.vllm_kwargs if engine == "vllm" else {},
            "prompt": self.prompt,
            "pages": self.pages,
            "max_tokens": self.max_tokens,
            "dpi": self.dpi,
            "longest_side": self.longest_side,
            "skip_blank": self.skip_blank,
            "retries": self.retries,
            "retry_temperatures": list(self.retry_temperatures[: self.retries]),
            "anchor": self.anchor,
            "ocr": self.ocr,
            # only when cut: a job's key from before figures could be cut stays the same without them
            **({"figures": self.figures} if self.figures != "none" else {}),
        }
        text = json.dumps(fields, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _open(row: dict, options: LoadOptions):
    """Open a row's document: `location` is where to read it (an absolute path, a URL or a URI), `doc_id`
    the input as given, which names it in messages and outputs."""
    location, name = row.get("location") or row["doc_id"], row["doc_id"]
    if uri_scheme(location) is not None:
        return open_source(read_uri(location, options.max_bytes), options, name=name)
    return open_source(location, options, name=name)


def _page_row(doc_id: str, page: int, **values) -> dict:
    row = {
        "doc_id": doc_id,
        "location": None,
        "page": page,
        "pages_total": 0,
        "kind": None,
        "num_pages": None,
        "status": None,
        "finish_reason": None,
        "error": None,
        "result": None,
        "render_seconds": None,
        "anchor_seconds": None,  # its anchoring decision (line source read), for a page the reader ends
        "anchor": None,
        "name": None,  # the document's output name (its Markdown's stem), which its figure files take
        "page_read": None,  # what the page's tables and figures take from its PDF page (`PageRead.state`)
        "figure_png": None,  # the page's figures as PNG bytes, in the order of its result's `figures`
    }
    row.update(values)
    return row


def expand_documents(docs: list[dict], settings: PageSettings) -> list[dict]:
    """{doc_id, location, done_pages} -> one row per page still to read (page 1-based), or one row with
    page 0 and status "failed" for a document that cannot be opened."""
    options = settings.load_options()
    rows: list[dict] = []
    for doc in docs:
        doc_id, done = doc["doc_id"], set(doc.get("done_pages") or ())
        try:
            with _open(doc, options) as source:
                if settings.max_doc_pages and source.num_pages > settings.max_doc_pages:
                    raise DocumentError(
                        f"{doc_id}: {source.num_pages} pages, over the limit of {settings.max_doc_pages}"
                    )
                indices = select_pages(settings.pages, source.num_pages, doc_id)
                kind, num_pages = source.kind, source.num_pages
        except DocumentError as exc:
            rows.append(_page_row(doc_id, 0, location=doc.get("location"), status="failed", error=str(exc)))
            continue
        except Exception as exc:  # anything else the reader raises stays this document's failure
            error = f"{doc_id}: {one_line(exc)}"
            rows.append(_page_row(doc_id, 0, location=doc.get("location"), status="failed", error=error))
            continue
        for index in indices:
            if index + 1 not in done:
                rows.append(
                    _page_row(
                        doc_id,
                        index + 1,
                        location=doc.get("location"),
                        pages_total=len(indices),
                        kind=kind,
                        num_pages=num_pages,
                        name=doc.get("name"),
                    )
                )
    return rows


def _result_json(result: PageResult) -> str:
    return json.dumps(result.to_dict(), ensure_ascii=False)


def _finished(result: PageResult, **values) -> dict:
    """A finished page's row fields: `values` and its result (JSON) and figures (PNG bytes)."""
    return dict(values, result=_result_json(result), figure_png=[f.png for f in result.figures] or None)


def from_lines(result: PageResult, read: PageRead | None, image, figures: FiguresConfig, stem: str,
               formulas: bool = False) -> None:  # fmt: skip
    """A page read from its lines alone (`result.anchor.alone`): its tree and Markdown by the rules over
    lines with the detector's regions, as `jocr parse` reads it, then `finish_page`."""
    write_from_lines(result, PageRequestBuilder(None, None), image)
    finish_page(result, read, image, figures, stem, formulas)


def render_pages(rows: list[dict], settings: PageSettings):
    """Page rows -> the same rows with `image` (RGB bytes), `width`, `height`; blank pages and pages that
    fail to render come out finished (status "blank" / "failed", `result` set). An anchored page's decision
    and windows travel in `anchor` (`PageAnchor.state` as JSON), what its tables and figures take from the
    PDF page in `page_read` (`PageRead.state` as JSON). Yields row by row so a long document never holds
    more than one rendered page here."""
    options = settings.load_options()
    anchoring = page_anchoring(settings)
    figures = settings.figures_config()
    formulas = reads_formulas_at(settings.model_dir())
    sources: dict[str, object] = {}
    try:
        for row in rows:
            row = dict(row, image=None, width=0, height=0)
            if row["status"] is not None:
                yield row
                continue
            result = PageResult(page=row["page"])
            t0 = time.perf_counter()
            try:
                if row["doc_id"] not in sources:
                    for old in sources.values():
                        old.close()
                    sources.clear()
                    sources[row["doc_id"]] = _open(row, options)
                image = sources[row["doc_id"]].render(row["page"] - 1)
            except Exception as exc:
                error = str(exc) if isinstance(exc, DocumentError) else f"{row['doc_id']}: {one_line(exc)}"
                result.error = error
                yield dict(row, status="failed", error=error, result=_result_json(result))
                continue
            t1 = time.perf_counter()
            result.width, result.height = image.size
            row.update(width=image.size[0], height=image.size[1], render_seconds=t1 - t0)
            if settings.skip_blank and is_blank_page(image):
                result.finish_reason = "blank"
                result.timings.update(render_s=t1 - t0, preprocess_s=time.perf_counter() - t1)
                yield dict(row, status="blank", finish_reason="blank", result=_result_json(result))
                continue
            decision, read = (None, None)
            if anchoring is not None:
                decision, read = anchoring(sources[row["doc_id"]], row["page"] - 1, image)
            if decision is not None:
                image = decision.upright(image)  # a page OCR read turned: upright from here on
                result.width, result.height = image.size
                row.update(width=image.size[0], height=image.size[1])
                row["anchor"] = json.dumps(decision.state(), ensure_ascii=False)
            if read is not None:
                row["page_read"] = json.dumps(read.state(), ensure_ascii=False)
            if decision is not None and decision.alone and not formulas:  # read from its lines alone
                result.anchor = decision
                from_lines(result, read, image, figures, row.get("name") or "page")
                result.timings.update(render_s=t1 - t0, anchor_s=time.perf_counter() - t1)
                yield dict(row, **_finished(result, status="ok"))
                continue
            # a page for the model; one read from its lines alone goes too when the model reads its formulas
            row.update(image=image.tobytes(), anchor_seconds=time.perf_counter() - t1)  # RGB, as rendered
            yield row
    finally:
        for source in sources.values():
            source.close()


def page_anchoring(settings: PageSettings):
    """(source, page index, image) -> (the page's `PageAnchor` or None, its `PageRead` or None), for the
    job's model, `anchor`, `ocr` and `figures` settings (`image`, the rendered page, is what OCR reads):
    `jocr.layout.page_read.decide_page`, the sequence `jocr parse` follows. The decision is None when no
    page is anchored (mode "off", or "auto" with a model trained on images alone), so the text layer is
    not even read, as in `jocr parse`; the read is None when neither lines nor figures are read, and the
    function itself None when nothing is read at all."""
    from jocr.layout.page_read import ReadWants, read_source_page
    from jocr.lines.anchor import normalise_anchor_mode
    from jocr.pipeline.model import anchor_config_of
    from jocr.tokenizer import Tokenizer

    figures = settings.figures_config().mode != "none"
    mode = normalise_anchor_mode(settings.anchor)
    tokenizer = config = None
    if mode != "off":
        path = settings.model_dir()
        try:
            config = anchor_config_of(path)
            tokenizer = Tokenizer.from_dir(path) if mode == "on" or config.version else None
        except Exception:  # not a model directory: the actor that loads it reports that, once, for the job
            tokenizer = None

    if tokenizer is None and not figures:
        return None

    def decide(source, index: int, image=None) -> tuple[PageAnchor | None, PageRead | None]:
        if tokenizer is None:
            read = read_source_page(source, index, ReadWants(lines=False, figures=True)) if figures else None
            return None, read
        return decide_page(
            source,
            index,
            image,
            mode,
            config.version,
            tokenizer,
            config.max_tokens,
            ocr=settings.ocr,
            figures=figures,
            contents_alone=True,
            ocr_anchors=config.ocr,
        )

    return decide


@dataclass
class PageJob:
    """One page: one request, or one per window of its anchor (`anchor.request_anchors`), all on the same
    image."""

    row: dict
    result: PageResult
    views: object = None
    prompt_ids: list[list[int]] = field(default_factory=list)  # one per request
    image: object = None  # the PIL page (vLLM preprocesses it itself)
    anchor: PageAnchor = field(default_factory=PageAnchor)
    attempts: list[Attempt] = field(default_factory=list)


class PageReader:
    """Rendered rows -> result rows with one inference backend. Subclasses implement `load` and
    `generate(jobs, temperature, attempt) -> list[Attempt]`; this class owns the retry policy."""

    def __init__(self, settings: PageSettings):
        self.settings = settings
        self.builder = self.load()

    def load(self):
        """Load the model; return the `PageRequestBuilder` for its tokenizer and vision settings."""
        raise NotImplementedError

    def generate(self, jobs: list[PageJob], temperature: float, attempt: int) -> list[Attempt]:
        raise NotImplementedError

    def prepare(self, job: PageJob) -> None:
        job.views = None
        inputs = self.builder.pages(job.image, job.anchor.request_anchors)
        job.views, job.prompt_ids = inputs[0].views, [i.prompt_ids for i in inputs]
        job.result.image_tokens = inputs[0].image_tokens

    def __call__(self, rows: list[dict]) -> list[dict]:
        from PIL import Image

        out: list[dict] = []
        jobs: list[PageJob] = []
        done: list[tuple[PageJob, dict]] = []  # pages read from their lines alone, and their row fields
        for row in rows:
            image_bytes = row.pop("image", None)
            if row["status"] is not None or image_bytes is None:
                out.append(row)
                continue
            result = PageResult(page=row["page"], width=row["width"], height=row["height"])
            result.anchor = _anchor(row)
            job = PageJob(row=row, result=result, anchor=result.anchor or PageAnchor())
            t0 = time.perf_counter()
            try:
                job.image = Image.frombytes("RGB", (row["width"], row["height"]), image_bytes)
                if job.anchor.alone:  # no request: its formulas are what this reader reads
                    done.append((job, self._from_lines(job)))
                    continue
                self.prepare(job)
            except Exception as exc:  # e.g. a degenerate page size: this page fails, the batch goes on
                result.error = (
                    f"{row['doc_id']}: page {row['page']}: cannot prepare the page ({one_line(exc)})"
                )
                out.append(dict(row, status="failed", error=result.error, result=_result_json(result)))
                continue
            result.timings.update(
                render_s=row["render_seconds"] or 0.0, preprocess_s=time.perf_counter() - t0
            )
            jobs.append(job)
        self._attempts(jobs)
        done.extend((job, self._finish(job)) for job in jobs)
        read_formulas([job.result for job, _ in done], self.formula_model())
        out.extend(dict(job.row, **fields, **_finished(job.result)) for job, fields in done)
        return out

    def formula_model(self):
        """The loaded model that reads the pages' formula crops (`jocr.pipeline.formulas`), or None for a
        backend that cannot: the crops are then never cut."""
        return None

    def _from_lines(self, job: PageJob) -> dict:
        """A page read from its lines alone, sent here for its formulas (`from_lines`)."""
        row, result = job.row, job.result
        image, job.image = job.image, None
        read = PageRead.from_state(json.loads(row["page_read"])) if row.get("page_read") else None
        figures, formulas = self.settings.figures_config(), reads_formulas(self.formula_model())
        from_lines(result, read, image, figures, row.get("name") or "page", formulas)
        result.timings.update(render_s=row["render_seconds"] or 0.0, anchor_s=row["anchor_seconds"] or 0.0)
        return {"status": "ok", "finish_reason": "stop"}

    def _attempts(self, jobs: list[PageJob]) -> None:
        """Each page's attempts under the retry policy (`jocr.pipeline.retry`), pages batched together."""
        policy = self.settings.retry_config()
        pending, attempt = jobs, 0
        while pending:
            temperature = policy.temperature(attempt)
            for job, outcome in zip(pending, self.generate(pending, temperature, attempt)):
                job.attempts.append(outcome)
            pending = [job for job in pending if policy.again(job.attempts, job.anchor.anchored)]
            attempt += 1

    def _finish(self, job: PageJob) -> dict:
        """The page's tree and Markdown from its chosen attempt, then `finish_page`; its row fields (its
        result is serialised once its formulas are read)."""
        row, result = job.row, job.result
        image = job.image
        job.views = job.image = None
        chosen, status = choose(job.attempts)
        if chosen is None:
            result.error = job.attempts[-1].error
        else:
            texts = [self.builder.text(ids) for ids in chosen.outputs]
            finish = "length" if chosen.finish_reason == "timeout" else chosen.finish_reason
            size = (result.width, result.height)
            lines, formulas = job.anchor.tree_lines, [formula_region(f) for f in job.anchor.formulas]
            result.markdown, result.boxes = self.builder.markdown(
                page_text(texts, job.anchor.texts, chosen.reasons, lines, formulas), size, finish
            )
            result.tree = page_tree(
                texts, job.anchor.texts, chosen.reasons, lines, size, result.page, finish, formulas
            )
            read = PageRead.from_state(json.loads(row["page_read"])) if row.get("page_read") else None
            figures, formulas = self.settings.figures_config(), reads_formulas(self.formula_model())
            finish_page(result, read, image, figures, row.get("name") or "page", formulas)  # as parse
            result.raw = join_windows(texts)  # as the model wrote it, references and all
            result.num_tokens = sum(len(ids) for ids in chosen.outputs)
            result.finish_reason = chosen.finish_reason
            result.timings["generate_s"] = chosen.seconds
        return {
            "status": status,
            "error": result.error,
            "finish_reason": result.finish_reason,
            "tokens": result.num_tokens,
            "attempts": len(job.attempts),
            "temperature": None if chosen is None else chosen.temperature,
            "seconds": sum(a.seconds for a in job.attempts),
        }


class JocrPageReader(PageReader):
    """The jocr engine in this process: pages of one Ray batch decode together (continuous batching)."""

    def load(self):
        from jocr.layout.request import PageRequestBuilder
        from jocr.pipeline import load_model

        if self.settings.threads:
            import torch

            torch.set_num_threads(self.settings.threads)
        self.model = load_model(self.settings.model, device=self.settings.device)
        self.runner = self.model.runner(self.settings.spec, self.settings.batch_size)
        return PageRequestBuilder(self.model.tokenizer, self.model.vision, self.settings.prompt)

    def formula_model(self):
        return self.model

    def generate(self, jobs: list[PageJob], temperature: float, attempt: int) -> list[Attempt]:
        from jocr.engine.requests import GenerationRequest

        parts = [[None] * len(job.prompt_ids) for job in jobs]  # each request's (ids, reason) or error
        live: dict[tuple[int, int], tuple[object, float]] = {}
        queue = [(i, part) for i, job in enumerate(jobs) for part in range(len(job.prompt_ids))]
        timeout = self.settings.page_timeout
        # Keep at most batch_size requests in the scheduler, so each request's clock starts when it runs.
        while queue or live:
            while queue and len(live) < self.settings.batch_size:
                i, part = queue.pop(0)
                job = jobs[i]
                if any(isinstance(p, str) for p in parts[i]):  # an earlier window of the page failed
                    parts[i][part] = "skipped"
                    continue
                request = GenerationRequest(
                    prompt_ids=job.prompt_ids[part],
                    images=[job.views],
                    max_tokens=self.settings.max_tokens,
                    temperature=temperature,
                    seed=retry_seed(job.row["doc_id"], job.row["page"], attempt) if temperature else None,
                )
                try:
                    live[i, part] = (self.runner.submit(request), time.perf_counter())
                except ValueError as exc:  # refused, e.g. prompt + max_tokens over the engine's limit
                    parts[i][part] = f"{job.row['doc_id']}: page {job.row['page']}: {one_line(exc)}"
            for (i, part), (handle, started) in list(live.items()):
                elapsed = time.perf_counter() - started
                if not handle.done:
                    if timeout is not None and elapsed > timeout:
                        handle.cancel()
                    continue
                del live[i, part]
                job = jobs[i]
                try:
                    res = handle.result()
                except Exception as exc:  # a failed decode step fails its pages, not the batch
                    parts[i][part] = (
                        f"{job.row['doc_id']}: page {job.row['page']}: generation failed ({one_line(exc)})"
                    )
                    continue
                reason = "timeout" if res.finish_reason == "cancelled" else res.finish_reason
                parts[i][part] = (list(res.token_ids), reason, elapsed)
            if live:
                time.sleep(0.002)
        return [page_attempt(p, temperature) for p in parts]


def page_attempt(parts: list, temperature: float) -> Attempt:
    """A page's attempt from its requests' outcomes: (ids, finish reason, seconds), or an error line."""
    errors = [p for p in parts if isinstance(p, str) and p != "skipped"]
    seconds = max((p[2] for p in parts if isinstance(p, tuple)), default=0.0)
    if errors:
        return Attempt(None, None, errors[0], seconds, temperature)
    return Attempt([p[0] for p in parts], [p[1] for p in parts], None, seconds, temperature)


def document_from_rows(doc_id: str, rows: list[dict], settings: PageSettings, page_marker: bool) -> Document:
    """Page rows of one document (any order) -> the `Document` `jocr parse` would build."""
    from jocr.layout.request import prompt_text

    doc = Document(source=doc_id)
    doc.metadata = {
        "source": doc_id,
        "prompt": prompt_text(settings.prompt),
        "model": str(settings.model_dir()),
        "max_tokens": settings.max_tokens,
    }
    if not page_marker:
        doc.page_marker = None
    for row in sorted((r for r in rows if r["page"] >= 1), key=lambda r: r["page"]):
        data = json.loads(row["result"])
        doc.pages.append(
            PageResult(
                page=data["page"],
                markdown=data["markdown"],
                boxes=[Box(**b) for b in data["boxes"]],
                num_tokens=data["tokens"],
                finish_reason=data["finish_reason"],
                width=data["width"],
                height=data["height"],
                image_tokens=data["image_tokens"],
                timings=data["timings"],
                error=data["error"],
                anchor=_anchor(row),
                tree=PageTree.from_dict(data["tree"]) if data.get("tree") else None,
                figures=[_figure(data["page"], f) for f in data.get("figures") or ()],
                figure_notes=list(data.get("figure_notes") or ()),
            )
        )
        doc.metadata.update({"kind": row["kind"], "num_pages": row["num_pages"], "dpi": settings.dpi})
    continued_tables(doc)  # a table running on over a page break, joined as `jocr parse` joins it
    failed = [p.error for p in doc.pages if p.error]
    if failed:
        doc.error = failed[0]
    return doc


def _figure(page: int, data: dict) -> Figure:
    """A page's figure from its `Figure.to_dict()` form (its PNG is written when the page comes in)."""
    return Figure(
        page=page,
        number=data["number"],
        bbox=tuple(data["bbox"]),
        pixels=tuple(data["pixels"]),
        origin=data["origin"],
        caption=data.get("caption") or "",
        name=data.get("file") or "",
    )


def _anchor(row: dict) -> PageAnchor | None:
    """The page's anchoring decision from its row (None: the text layer was not read)."""
    return PageAnchor.from_state(json.loads(row["anchor"])) if row.get("anchor") else None
