"""Documents -> engine -> Markdown: what the CLI, the Python API and the server call.

    import jocr
    doc = jocr.parse("paper.pdf", pages="1-3")
    print(doc.markdown)

Pages of all inputs flow through one queue: each is rendered and preprocessed only when a batch slot needs
it, and its image is dropped as soon as its views exist, so memory stays flat however long the PDFs are.
"""

from __future__ import annotations

import os
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jocr.documents.pages import DocumentError, LoadOptions, PageSource, open_source, select_pages
from jocr.documents.postprocess import PAGE_SPLIT, Box, join_pages
from jocr.documents.preprocess import is_blank_page
from jocr.documents.request import PageRequestBuilder
from jocr.tokenizer import Tokenizer

DEFAULT_MAX_TOKENS = 4096  # jina-ocr-v1's published default
DEFAULT_BATCH_SIZE = 8
MODEL_ENV = "JOCR_MODEL"


class ModelNotFoundError(FileNotFoundError):
    """No usable model directory; the message says where it looked and how to point at one."""


def default_model_dir() -> Path:
    """$JOCR_MODEL, else the bundled `models/` directory at the repository root (next to src/)."""
    env = os.environ.get(MODEL_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "models"


@dataclass
class LoadedModel:
    """A model ready to parse with: network, tokenizer, and engines built on demand per decoding setting."""

    model: Any  # jocr.model.OCRModel
    tokenizer: Tokenizer
    path: str | None = None
    device: str = "cpu"
    _engines: dict = field(default_factory=dict, repr=False)

    @property
    def vision(self):
        return self.model.config.vision

    @property
    def has_mtp(self) -> bool:
        return getattr(self.model, "mtp_module", None) is not None

    def engine(self, spec: str | int = "auto", batch_size: int = DEFAULT_BATCH_SIZE):
        """The engine for a speculative setting: "auto" (adaptive k with the FastMTP head when the checkpoint
        has one), 0 (plain greedy decoding) or k >= 1 draft tokens per step. Greedy either way: speculation
        never changes the output."""
        from jocr.engine import Engine, EngineConfig
        from jocr.engine.guard import GuardConfig

        spec = normalise_spec(spec)
        key = (spec, batch_size)
        if key not in self._engines:
            if spec == 0 or (spec == "auto" and not self.has_mtp):
                drafter, k = "none", 0
            elif not self.has_mtp:
                raise ValueError(f"--spec {spec} needs a FastMTP head, which this model lacks (use --spec 0)")
            else:
                drafter, k = "mtp", spec
            config = EngineConfig(
                max_batch_size=batch_size,
                drafter=drafter,
                num_draft_tokens=k,
                eos_token_id=self.tokenizer.eos_id,
                pad_token_id=self.tokenizer.pad_id,
                # `<td>`/`</td>` repeat legitimately in tables (DeepSeek-OCR's n-gram ban exempts them).
                guard=GuardConfig(whitelist_ids=tuple(self.tokenizer.td_ids)),
            )
            self._engines[key] = Engine(self.model, config, tokenizer=self.tokenizer)
        return self._engines[key]

    def runner(self, spec: str | int = "auto", batch_size: int = DEFAULT_BATCH_SIZE):
        """A `jocr.engine.Scheduler` over `engine(spec, batch_size)`: submit requests, poll handles, close."""
        from jocr.engine import Scheduler

        return Scheduler(self.engine(spec, batch_size), max_queue=4 * batch_size + 16)


def normalise_spec(spec: str | int) -> str | int:
    if isinstance(spec, str) and spec.strip().lower() == "auto":
        return "auto"
    try:
        k = int(spec)
    except (TypeError, ValueError):
        raise ValueError(f"spec must be 'auto' or a number of draft tokens >= 0, not {spec!r}") from None
    if k < 0:
        raise ValueError(f"spec must be 'auto' or a number of draft tokens >= 0, not {spec!r}")
    return k


_MODEL_CACHE: dict[tuple[str, str, str, str, int | None], LoadedModel] = {}


def load_model(
    path: str | os.PathLike | None = None,
    device: str = "cpu",
    dtype: Any = "auto",
    cache: bool = True,
    quantize: str = "none",
    max_tiles: int | None = None,
) -> LoadedModel:
    """Load a model directory (config.json, model.safetensors, tokenizer.json).

    path None: $JOCR_MODEL, else the bundled `models/`. dtype "auto" (or None): the fastest format that rounds
    nothing (jocr.model.formats: bf16 on CUDA; on CPU fp32 compute over the stored bytes), "float32" or
    "bfloat16"; quantize "int8" is the opt-in lossy CPU format. max_tiles replaces the config's tile-count
    limit (`VisionConfig.max_tiles`). Loaded models are cached per (path, device, dtype, quantize, max_tiles)
    so repeated `jocr.parse` calls do not reload.
    """
    import torch

    directory = Path(path) if path is not None else default_model_dir()
    hint = f"pass a model directory (--model DIR / path=...) or set ${MODEL_ENV}"
    if not directory.is_dir():
        raise ModelNotFoundError(f"no model directory at {directory}; {hint}")
    missing = [n for n in ("config.json", "tokenizer.json") if not (directory / n).is_file()]
    if not any(directory.glob("*.safetensors")):
        missing.append("*.safetensors")
    if missing:
        raise ModelNotFoundError(f"model directory {directory} lacks {', '.join(missing)}; {hint}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device cuda requested but CUDA is not available (use --device cpu)")
    if dtype is None:
        dtype = "auto"
    if isinstance(dtype, torch.dtype):
        dtype = str(dtype).removeprefix("torch.")
    key = (str(directory.resolve()), device, str(dtype), quantize, max_tiles)
    if cache and key in _MODEL_CACHE:
        return _MODEL_CACHE[key]
    from jocr.model.formats import load_formatted

    model = load_formatted(directory, dtype=dtype, quantize=quantize, device=device).eval()
    if max_tiles is not None:
        model.config.vision.max_tiles = int(max_tiles)
        model.config.vision.validate()
    loaded = LoadedModel(
        model=model, tokenizer=Tokenizer.from_dir(directory), path=str(directory), device=device
    )
    if cache:
        _MODEL_CACHE[key] = loaded
    return loaded


@dataclass
class PageResult:
    """One parsed page. `page` is 1-based; boxes are in pixels of the rendered page image."""

    page: int
    markdown: str = ""
    boxes: list[Box] = field(default_factory=list)
    num_tokens: int = 0
    finish_reason: str | None = None
    width: int = 0
    height: int = 0
    image_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    raw: str = ""
    error: str | None = None

    def to_dict(self) -> dict:
        return {
            "page": self.page,
            "markdown": self.markdown,
            "boxes": [b.to_dict() for b in self.boxes],
            "tokens": self.num_tokens,
            "image_tokens": self.image_tokens,
            "finish_reason": self.finish_reason,
            "width": self.width,
            "height": self.height,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "error": self.error,
        }


@dataclass
class Document:
    """A parsed input: its pages in the order asked for, joined Markdown, and metadata."""

    source: str
    pages: list[PageResult] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    page_marker: str | None = PAGE_SPLIT

    @property
    def ok(self) -> bool:
        return self.error is None and all(p.error is None for p in self.pages)

    @property
    def markdown(self) -> str:
        return join_pages([p.markdown for p in self.pages], self.page_marker)

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "metadata": self.metadata,
            "error": self.error,
            "markdown": self.markdown,
            "pages": [p.to_dict() for p in self.pages],
        }


@dataclass
class _Job:
    doc: Document
    index: int  # 0-based page index in the source
    slot: int  # position in doc.pages
    views: Any = None
    prompt_ids: list[int] | None = None


@dataclass
class _OpenDoc:
    doc: Document
    source: PageSource | None
    indices: list[int]
    pending: int


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _input_name(item: Any) -> str:
    if isinstance(item, bytes | bytearray | memoryview):
        return "<bytes>"
    if hasattr(item, "size") and hasattr(item, "mode"):
        return "<image>"
    return str(item)


def iter_documents(
    inputs: Iterable[Any],
    model: LoadedModel,
    pages: str | Sequence[int] | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    spec: str | int = "auto",
    batch_size: int = DEFAULT_BATCH_SIZE,
    prompt: str | None = None,
    options: LoadOptions | None = None,
    names: Sequence[str] | None = None,
    on_page: Callable[[Document, PageResult], None] | None = None,
    skip_blank: bool = True,
) -> Iterator[Document]:
    """Parse inputs in order, yielding each Document as soon as its last page is done.

    Inputs that fail to open, or pages that fail to render, are reported on the Document (`.error` /
    page `.error`) instead of stopping the run; the other inputs still complete. With `skip_blank` a page
    without ink (`is_blank_page`) gets empty Markdown and finish_reason "blank" without running the model,
    which would otherwise read something into the empty page.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, not {batch_size}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, not {max_tokens}")
    options = options or LoadOptions()
    builder = PageRequestBuilder(model.tokenizer, model.vision, prompt)
    inputs = list(inputs)
    names = list(names) if names is not None else [_input_name(i) for i in inputs]

    open_docs: list[_OpenDoc] = []  # in input order; finished ones are yielded from the front
    next_input = 0

    def open_next() -> _OpenDoc:
        nonlocal next_input
        item, name = inputs[next_input], names[next_input]
        next_input += 1
        doc = Document(source=name)
        doc.metadata = {
            "source": name,
            "prompt": builder.prompt,
            "model": model.path,
            "max_tokens": max_tokens,
        }
        try:
            source = open_source(item, options, name=name)
        except DocumentError as exc:
            doc.error = str(exc)
            return _OpenDoc(doc, None, [], 0)
        try:
            indices = select_pages(pages, source.num_pages, name)
        except DocumentError as exc:
            source.close()
            doc.error = str(exc)
            return _OpenDoc(doc, None, [], 0)
        doc.metadata.update({"kind": source.kind, "num_pages": source.num_pages, "dpi": options.dpi})
        doc.pages = [PageResult(page=i + 1) for i in indices]
        entry = _OpenDoc(doc, source, indices, len(indices))
        if not indices:
            source.close()
            entry.source = None
        return entry

    def page_jobs() -> Iterator[_Job]:
        while next_input < len(inputs):
            entry = open_next()
            open_docs.append(entry)
            for slot, index in enumerate(entry.indices):
                yield _Job(entry.doc, index, slot)
            # Every page of this source has been rendered: release the file before opening the next one.
            if entry.source is not None:
                entry.source.close()
                entry.source = None

    def prepare(job: _Job, entry_source: PageSource) -> bool:
        """Render and preprocess the page; False when there is nothing to generate (an error, blank page)."""
        result = job.doc.pages[job.slot]
        t0 = time.perf_counter()
        try:
            image = entry_source.render(job.index)
        except DocumentError as exc:
            result.error = str(exc)
            return False
        t1 = time.perf_counter()
        result.width, result.height = image.size
        if skip_blank and is_blank_page(image):
            result.finish_reason = "blank"
            result.timings.update(render_s=t1 - t0, preprocess_s=time.perf_counter() - t1)
            return False
        try:
            page_input = builder.page(image)
        except Exception as exc:  # e.g. a degenerate page size: this page fails, the run goes on
            result.error = f"{job.doc.source}: page {result.page}: cannot prepare the page ({_one_line(exc)})"
            return False
        del image
        job.views, job.prompt_ids = page_input.views, page_input.prompt_ids
        result.image_tokens = page_input.image_tokens
        result.timings.update(render_s=t1 - t0, preprocess_s=time.perf_counter() - t1)
        return True

    def source_of(job: _Job) -> PageSource:
        for entry in open_docs:
            if entry.doc is job.doc:
                return entry.source
        raise RuntimeError("page job without an open document")

    def finish(job: _Job) -> None:
        for entry in open_docs:
            if entry.doc is job.doc:
                entry.pending -= 1
        if on_page is not None:
            on_page(job.doc, job.doc.pages[job.slot])

    def complete(job: _Job, handle, latency: float) -> None:
        page = job.doc.pages[job.slot]
        job.views = None
        try:
            res = handle.result()
        except Exception as exc:  # a failed decode step fails its pages, not the run
            page.error = f"{job.doc.source}: page {page.page}: generation failed ({_one_line(exc)})"
            finish(job)
            return
        page.raw = builder.text(res.token_ids)
        page.markdown, page.boxes = builder.markdown(page.raw, (page.width, page.height), res.finish_reason)
        page.num_tokens = len(res.token_ids)
        page.finish_reason = res.finish_reason
        page.timings["generate_s"] = latency
        finish(job)

    def ready() -> Iterator[Document]:
        # pending reaches 0 only after every selected page was handed out and finished.
        while open_docs and open_docs[0].pending == 0:
            entry = open_docs.pop(0)
            if entry.source is not None:
                # Done, though the job generator has not resumed to close it yet.
                entry.source.close()
                entry.source = None
            doc = entry.doc
            if doc.error is None:
                failed = [p.error for p in doc.pages if p.error]
                if failed:
                    doc.error = failed[0]
            yield doc

    from jocr.engine.requests import GenerationRequest

    # Requests waiting beyond the running batch, so a row that finishes is refilled at once (continuous
    # batching in the scheduler) while the next pages render here, overlapping rendering with decoding.
    capacity = batch_size + max(1, batch_size // 2)
    inflight: list[tuple[_Job, Any, float]] = []
    jobs = page_jobs()
    exhausted = False
    runner = model.runner(spec, batch_size)
    try:
        while True:
            while not exhausted and len(inflight) < capacity:
                job = next(jobs, None)
                if job is None:
                    exhausted = True
                    break
                if not prepare(job, source_of(job)):
                    finish(job)
                    continue
                request = GenerationRequest(
                    prompt_ids=job.prompt_ids, images=[job.views], max_tokens=max_tokens
                )
                try:
                    handle = runner.submit(request)
                except ValueError as exc:  # refused by the engine, e.g. prompt + max_tokens too long
                    page = job.doc.pages[job.slot]
                    page.error = f"{job.doc.source}: page {page.page}: {_one_line(exc)}"
                    job.views = None
                    finish(job)
                    continue
                inflight.append((job, handle, time.perf_counter()))
            yield from ready()
            if not inflight:
                if exhausted:
                    break
                continue
            done = [entry for entry in inflight if entry[1].done]
            if not done:
                time.sleep(0.002)
                continue
            for entry in done:
                inflight.remove(entry)
                job, handle, submitted = entry
                complete(job, handle, time.perf_counter() - submitted)
            yield from ready()
    finally:
        runner.close()
        # Sources still open if the caller stopped early.
        for entry in open_docs:
            if entry.source is not None:
                entry.source.close()
                entry.source = None
    yield from ready()


def parse(
    inputs: Any,
    pages: str | Sequence[int] | None = None,
    model: LoadedModel | str | os.PathLike | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    spec: str | int = "auto",
    batch_size: int = DEFAULT_BATCH_SIZE,
    prompt: str | None = None,
    dpi: float | None = None,
    longest_side: int | None = None,
    password: str | None = None,
    device: str = "cpu",
    raise_errors: bool = True,
    skip_blank: bool = True,
    max_tiles: int | None = None,
) -> Document | list[Document]:
    """Parse a path, URL, bytes or PIL image (-> Document) or a list of them (-> list of Documents).

    pages: 1-based selection ("1-3,7" or [1, 2]) applied to every input. model: a `LoadedModel`, a model
    directory, or None for the default (`load_model()`). prompt: a task name from `jocr.tokenizer.PROMPTS`
    ("ocr", "free", "grounding", "table", "formula", "caption") or free text; None is the default OCR prompt.
    dpi / longest_side: PDF rendering (144 dpi by default; longest_side renders to that many pixels).
    With raise_errors, an input that cannot be parsed raises `DocumentError`; otherwise it comes back as a
    Document with `.error` set. skip_blank: pages without ink come back empty (finish_reason "blank")
    without running the model. max_tiles: the tile-count limit when `model` is loaded here (see `load_model`).
    """
    single = not isinstance(inputs, list | tuple)
    items = [inputs] if single else list(inputs)
    if not isinstance(model, LoadedModel):
        model = load_model(model, device=device, max_tiles=max_tiles)
    loaded = model
    options = LoadOptions(password=password, longest_side=longest_side)
    if dpi is not None:
        options.dpi = float(dpi)
    docs = list(
        iter_documents(
            items,
            loaded,
            pages=pages,
            max_tokens=max_tokens,
            spec=spec,
            batch_size=batch_size,
            prompt=prompt,
            options=options,
            skip_blank=skip_blank,
        )
    )
    if raise_errors:
        for doc in docs:
            if doc.error:
                raise DocumentError(doc.error)
    return docs[0] if single else docs


class _CallableModule(types.ModuleType):
    """`jocr.parse` names both this module and the function: once the module is imported, Python binds the
    package attribute `jocr.parse` to the module, so calling the module must parse."""

    def __call__(self, *args, **kwargs):
        return parse(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
