"""The Ray Data job: documents -> page rows -> render tasks -> inference actor pool -> driver, which writes
the manifest as results stream in and each document's Markdown (and JSON) as soon as its last page is read.

    summary = run_batch(BatchConfig(inputs=["scans/"], output="out/", actors=2))
    print(summary.line())

Resuming: the manifest (manifest.py) lists what is done. A document whose row says "written" under the
same settings, with its output present, is skipped; a document cut off mid-way keeps its finished pages and
only the rest go through Ray again. docs/batch.md describes the cluster setup and the scaling.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from jocr.bulk.manifest import MANIFEST_DIR, PAGE_DONE, Manifest
from jocr.bulk.stages import PageSettings, document_from_rows, expand_documents, render_pages
from jocr.bulk.storage import Output, expand_batch_inputs, uri_scheme
from jocr.documents.naming import output_stems

RAY_HINT = "jocr batch needs Ray: pip install 'jocr[batch]'"


class BatchError(Exception):
    """A job that cannot start or went down as a whole; the message is one line."""


@dataclass
class BatchConfig:
    """One job. Ray settings here; how a page is read in `settings` (stages.PageSettings)."""

    inputs: list[str]
    output: str
    settings: PageSettings = field(default_factory=PageSettings)
    engine: str = "jocr"  # jocr | vllm
    address: str | None = None  # None: start Ray in this process; "auto" or "ray://host:10001": join
    num_cpus: int | None = None  # CPUs of the in-process Ray (None: all); ignored when joining a cluster
    actors: int = 1  # inference actors (model replicas)
    cpus_per_actor: float = 1.0
    gpus_per_actor: float = 0.0
    render_cpus: float = 0.5  # CPUs reserved per render task
    render_batch: int | None = None  # pages per render task (None: min(4, batch size))
    formats: tuple[str, ...] = ("md",)  # ("md",) or ("md", "json")
    page_marker: bool = True
    limit: int | None = None  # only the first N documents of the inputs
    quiet: bool = False


@dataclass
class BatchSummary:
    documents: int = 0  # documents this run was asked for (after --limit)
    skipped: int = 0  # complete in the manifest before this run
    done: int = 0
    failed: int = 0
    pages: int = 0  # pages read this run (blank ones included)
    failed_pages: int = 0
    retried: int = 0
    fallback: int = 0
    tokens: int = 0
    seconds: float = 0.0
    output: str = ""
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one line each, printed to stderr as the job starts

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (
            f"jocr batch: {self.done} of {self.documents} document(s) done, {self.failed} failed, "
            f"{self.skipped} skipped (done before); {self.pages} page(s) read, {self.failed_pages} failed, "
            f"{self.retried} retried, {self.fallback} fallback; {self.tokens} tokens in {self.seconds:.1f} s "
            f"({self.pages_per_second:.2f} pages/s) -> {self.output}"
        )


# Row layouts between the stages (explicit, so that blocks whose optional columns are all null still agree).
def _schemas():
    import pyarrow as pa

    base = [
        ("doc_id", pa.string()),
        ("location", pa.string()),
        ("page", pa.int32()),
        ("pages_total", pa.int32()),
        ("kind", pa.string()),
        ("num_pages", pa.int32()),
        ("status", pa.string()),
        ("finish_reason", pa.string()),
        ("error", pa.string()),
        ("result", pa.string()),
        ("render_seconds", pa.float64()),
        ("anchor", pa.string()),  # PageAnchor.state as JSON (stages.render_pages)
        ("name", pa.string()),  # the document's output name
        ("page_read", pa.string()),  # PageRead.state as JSON: the page's table pieces, figure candidates
        ("figure_png", pa.list_(pa.binary())),  # the page's figures, in the order of its result's figures
    ]
    size = [("width", pa.int32()), ("height", pa.int32())]
    rendered = pa.schema(base + size + [("image", pa.binary())])
    read = pa.schema(
        base
        + size
        + [
            ("tokens", pa.int32()),
            ("attempts", pa.int32()),
            ("temperature", pa.float32()),
            ("seconds", pa.float64()),
        ]
    )
    return pa.schema(base), rendered, read


def _table(rows: list[dict], schema):
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=schema)


class _Expand:
    def __init__(self, settings: PageSettings):
        self.settings = settings
        self.schema = _schemas()[0]

    def __call__(self, table):
        return _table(expand_documents(table.to_pylist(), self.settings), self.schema)


class _Render:
    def __init__(self, settings: PageSettings):
        self.settings = settings
        self.schema = _schemas()[1]

    def __call__(self, table):
        # One block per page keeps blocks small however long the document.
        for row in render_pages(table.to_pylist(), self.settings):
            yield _table([row], self.schema)


class ReaderActor:
    """One inference actor: a model replica that reads the pages of each Ray batch together. The job
    subclasses it with its settings as class attributes (`_reader_class`): Ray would otherwise keep them as
    constructor arguments in the object store, and warn that a restarted actor might not find them."""

    settings: PageSettings
    engine: str

    def __init__(self):
        settings, engine = self.settings, self.engine
        if engine == "vllm":
            from jocr.bulk.vllm_stage import VllmPageReader

            self.reader = VllmPageReader(settings)
        else:
            from jocr.bulk.stages import JocrPageReader

            self.reader = JocrPageReader(settings)
        self.schema = _schemas()[2]

    def __call__(self, table):
        return _table(self.reader(table.to_pylist()), self.schema)


def _check_model(config: BatchConfig) -> None:
    model = config.settings.model_dir()
    if uri_scheme(str(model)) is None and not (model / "config.json").is_file():
        raise BatchError(f"no model directory at {model} (config.json missing); pass --model DIR")


def _start_ray(config: BatchConfig) -> bool:
    """Connect to (or start) Ray; True when this call started it (and so shuts it down)."""
    try:
        import ray
    except ImportError:
        raise BatchError(RAY_HINT) from None
    import ray.data  # noqa: F401 - fails without the data extra's pyarrow/pandas

    if ray.is_initialized():
        return False
    kwargs = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": not config.quiet}
    if config.address:
        kwargs["address"] = config.address
    elif config.num_cpus:
        kwargs["num_cpus"] = config.num_cpus
    try:
        ray.init(**kwargs)
    except Exception as exc:  # no cluster at that address, version mismatch
        raise BatchError(f"cannot start or join Ray ({' '.join(str(exc).split())[:300]})") from None
    return True


def _build_dataset(config: BatchConfig, docs: list[dict]):
    import ray
    import ray.data

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = not config.quiet
    if config.quiet:
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    settings = config.settings
    # One block per document, so documents are opened and rendered in parallel tasks.
    ds = ray.data.from_items(docs, override_num_blocks=max(1, len(docs)))
    # Opening a document to count its pages is light: a quarter CPU per task.
    ds = ds.map_batches(
        _expand_fn, fn_kwargs={"settings": settings}, batch_size=1, batch_format="pyarrow", num_cpus=0.25
    )
    ds = ds.map_batches(
        _render_fn,
        fn_kwargs={"settings": settings},
        # A render task's pages travel on as one block, and an actor call takes whole blocks: a block no
        # larger than an actor batch keeps the pages in flight (lost if the job is killed) to one batch.
        batch_size=config.render_batch or min(4, settings.batch_size),
        batch_format="pyarrow",
        num_cpus=config.render_cpus,
    )
    reader = type("ReaderActor", (ReaderActor,), {"settings": settings, "engine": config.engine})
    return ds.map_batches(
        reader,
        batch_size=settings.batch_size,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=config.actors),
        num_cpus=config.cpus_per_actor,
        num_gpus=config.gpus_per_actor or None,
    )


def _expand_fn(table, settings):
    return _Expand(settings)(table)


def _render_fn(table, settings):
    yield from _Render(settings)(table)


class _Writer:
    """Driver side: manifest rows as results arrive, a document's outputs once its last page is in."""

    def __init__(self, config: BatchConfig, output: Output, manifest: Manifest, names: dict[str, str]):
        self.config, self.output, self.manifest, self.names = config, output, manifest, names
        self.pages: dict[str, dict[int, dict]] = {}
        self.summary = BatchSummary(output=str(output))

    def seed(self, doc_id: str, rows: list[dict]) -> None:
        """Pages finished by an earlier run."""
        self.pages.setdefault(doc_id, {}).update({r["page"]: r for r in rows})

    def add(self, rows: list[dict]) -> None:
        records = []
        for row in rows:
            if row["page"] == 0:
                continue
            records.append(self._record(row, figures=self._write_figures(row)))
            self.summary.pages += 1
            self.summary.failed_pages += row["status"] == "failed"
            self.summary.retried += row["status"] == "retried"
            self.summary.fallback += row["status"] == "fallback"
            self.summary.tokens += row.get("tokens") or 0
        self.manifest.append(records)
        for row in rows:
            doc_id = row["doc_id"]
            if row["page"] == 0:
                self._fail(doc_id, row["error"])
                continue
            pages = self.pages.setdefault(doc_id, {})
            pages[row["page"]] = row
            if len(pages) >= row["pages_total"]:
                self.finish(doc_id)

    def _write_figures(self, row: dict) -> list[str] | None:
        """A page's figure files, written beside its document's Markdown as soon as the page comes in (named
        in its result as `jocr parse` names them: `<name>_p<N>_fig<K>.png`); the names written."""
        pngs = row.get("figure_png") or []
        if not pngs or not row.get("result"):
            return None
        figures = json.loads(row["result"]).get("figures") or []
        written = []
        for figure, png in zip(figures, pngs, strict=False):
            if figure.get("file") and png:
                name = Path(figure["file"]).name  # never outside the output folder
                self.output.write(name, png)
                written.append(name)
        return written or None

    def _record(self, row: dict, **values) -> dict:
        record = {
            k: row.get(k) for k in ("doc_id", "page", "pages_total", "status", "finish_reason", "tokens")
        }
        record.update(
            name=self.names[row["doc_id"]],
            attempts=row.get("attempts"),
            temperature=row.get("temperature"),
            seconds=row.get("seconds"),
            render_seconds=row.get("render_seconds"),
            error=row.get("error"),
            result=row.get("result"),
            kind=row.get("kind"),
            num_pages=row.get("num_pages"),
        )
        record.update(values)
        return record

    def _fail(self, doc_id: str, error: str) -> None:
        self.summary.failed += 1
        self.summary.errors.append(error)
        self.manifest.append(
            [self._record({"doc_id": doc_id, "page": 0, "status": "failed", "error": error})]
        )
        self.pages.pop(doc_id, None)

    def finish(self, doc_id: str) -> None:
        rows = list(self.pages.pop(doc_id).values())
        doc = document_from_rows(doc_id, rows, self.config.settings, self.config.page_marker)
        if doc.error and not any(p.error is None for p in doc.pages):
            self._fail(doc_id, doc.error)
            return
        name = self.names[doc_id]
        try:
            self.output.write(f"{name}.md", (doc.markdown + "\n").encode("utf-8"))
            if "json" in self.config.formats:
                text = json.dumps(doc.to_dict(), ensure_ascii=False, indent=1)
                self.output.write(f"{name}.json", text.encode("utf-8"))
        except OSError as exc:
            self._fail(doc_id, f"{doc_id}: cannot write the output ({exc.strerror or exc})")
            return
        status = "partial" if doc.error else "written"
        first = rows[0]
        record = {
            "doc_id": doc_id,
            "page": 0,
            "pages_total": len(doc.pages),
            "status": status,
            "error": doc.error,
            "kind": first.get("kind"),
            "num_pages": first.get("num_pages"),
        }
        self.manifest.append([self._record(record)])
        if doc.error:
            self.summary.failed += 1
            self.summary.errors.append(f"{doc.error} (other pages written)")
        else:
            self.summary.done += 1


def run_batch(config: BatchConfig, on_result=None) -> BatchSummary:
    """Run one job to the end (see the module docstring). `on_result(rows)` sees each batch of result rows
    after it is recorded (progress hooks, tests)."""
    if config.engine not in ("jocr", "vllm"):
        raise BatchError(f"--engine must be jocr or vllm, not {config.engine!r}")
    if config.actors < 1:
        raise BatchError("--actors must be >= 1")
    if config.limit is not None and config.limit < 1:
        raise BatchError("--limit must be >= 1")
    from jocr.lines.anchor import normalise_anchor_mode

    try:
        normalise_anchor_mode(config.settings.anchor)
    except ValueError as exc:
        raise BatchError(f"--{exc}") from None
    started = time.perf_counter()
    from jocr.documents.pages import DocumentError

    try:
        sources = expand_batch_inputs(config.inputs)
    except DocumentError as exc:
        raise BatchError(str(exc)) from None
    names = dict(zip(sources, output_stems(sources)))  # the same names as `jocr parse`
    if config.limit is not None:
        sources = sources[: config.limit]
    output = Output(config.output)
    try:
        output.make_dirs()
        output.make_dirs(MANIFEST_DIR)
    except OSError as exc:
        raise BatchError(f"cannot create output folder {output}: {exc.strerror or exc}") from None
    _check_model(config)  # the job's key is the model's contents
    manifest = Manifest(
        output, config.settings.fingerprint(config.engine), f"{int(time.time())}-{uuid.uuid4().hex[:8]}"
    )
    writer = _Writer(config, output, manifest, names)
    writer.summary.documents = len(sources)

    previous = manifest.load()
    wanted = set(sources)
    afresh = sum(doc_id in wanted for doc_id, _ in manifest.superseded)
    if afresh:
        note = (
            f"{afresh} page(s) in the manifest were read with another model, jocr version or page options: "
            "reading them afresh"
        )
        writer.summary.notes.append(note)
        print(f"jocr batch: {note}", file=sys.stderr)
    todo: list[dict] = []
    for doc_id in sources:
        doc_row = previous.get((doc_id, 0))
        name = names[doc_id]
        if (
            doc_row
            and doc_row["status"] == "written"
            and all(output.exists(f"{name}.{fmt}") for fmt in config.formats)
        ):
            writer.summary.skipped += 1
            continue
        done = [r for (d, p), r in previous.items() if d == doc_id and p >= 1 and r["status"] in PAGE_DONE]
        if done and len(done) >= done[0]["pages_total"]:
            writer.seed(doc_id, done)  # every page read before the job stopped: only the outputs are left
            writer.finish(doc_id)
            continue
        writer.seed(doc_id, done)
        location = doc_id
        if uri_scheme(doc_id) is None and not doc_id.lower().startswith(("http://", "https://")):
            location = str(Path(doc_id).resolve())  # workers need not share this process's directory
        todo.append(
            {"doc_id": doc_id, "location": location, "done_pages": [r["page"] for r in done], "name": name}
        )

    if todo:
        owns_ray = _start_ray(config)
        results = None
        try:
            ds = _build_dataset(config, todo)
            results = iter(ds.iter_batches(batch_size=None, batch_format="pyarrow"))
            while True:
                try:
                    table = next(results, None)
                except Exception as exc:  # an actor that cannot start, a lost node: the job as a whole
                    raise BatchError(f"the job stopped: {' '.join(str(exc).split())[:300]}") from exc
                if table is None:
                    break
                rows = table.to_pylist()
                writer.add(rows)
                if on_result is not None:
                    on_result(rows)
        except OSError as exc:  # the manifest or an output cannot be written: stop, what is written stays
            raise BatchError(f"cannot write to {output}: {exc.strerror or exc}") from None
        finally:
            if results is not None and hasattr(results, "close"):
                results.close()  # stop the pipeline before Ray goes
            if owns_ray:
                import ray

                ray.shutdown()
        manifest.compact()
    elif manifest.parts() > 1:
        manifest.compact()
    writer.summary.seconds = time.perf_counter() - started
    return writer.summary
