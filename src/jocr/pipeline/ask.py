"""Asking a page: a question (`ask`) or a field schema (`extract`) + a document -> the model's answer.

    import jocr
    answer = jocr.ask("invoice.pdf", "What is the total amount?")
    print(answer.answer, answer.page, answer.box)
    fields = jocr.extract("invoice.pdf", ["invoice_number", "total"])
    print(fields.values)

One request path (docs/asking.md): the question text, as the published DeepSeek-OCR checkpoints take a
free-form prompt (`"<image>\\n" + text`, the plain template), goes through `PageRequestBuilder.prompt_ids`
with the page's anchor (`jocr.lines.anchor.page_anchor`, the rule `jocr.parse` applies: a model that reads
anchors gets the page's text layer after the question). The engine decodes greedily with its repetition
guard; an answer written as run references (`@i`) is resolved against the window's anchor, as page text
is. Where the answer is a span of one of the page's text-layer lines (exactly, or closely), that line's
box is reported. The answer always comes from the model: nothing here answers a question by itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jocr.checks.qa import normalise_answer, normalise_value
from jocr.documents.pages import DocumentError, LoadOptions, open_source, select_pages
from jocr.documents.preprocess import is_blank_page
from jocr.errors import one_line
from jocr.layout.request import PageRequestBuilder
from jocr.lines.anchor import PageAnchor, page_anchor_or_note
from jocr.pipeline.ask_answers import (  # noqa: F401 (answer_span, answer_value: read from here too)
    answer_box,
    answer_span,
    answer_text,
    answer_value,
    known_runs,
    runs_box,
)
from jocr.pipeline.ask_decoding import (  # noqa: F401 (ANSWER_TOKENS: the CLI's and server's default)
    ANSWER_TOKENS,
    AnswerShape,
    WindowAnswer,
    choose_window,
    fields_shape,
    question_shape,
)
from jocr.pipeline.ask_focus import focus_window
from jocr.pipeline.model import DEFAULT_BATCH_SIZE, LoadedModel, load_model

MAX_QUESTION_BYTES = 4096  # a question, a field description, or a whole extraction prompt (UTF-8)
MAX_FIELDS = 200
FIELD_TYPES = ("string", "number", "integer", "boolean")
# The extraction prompt: the fields as a JSON object of name -> type (and description), one request per
# page window; the model answers with a JSON object of name -> value (docs/asking.md, "Training data").
EXTRACT_PROMPT = "Extract these fields from the document as a JSON object (null where absent): "
OCR_MODES = ("auto", "rapidocr", "tesseract", "none")  # jocr.lines.ocr's, without importing OCR here
FOCUS_MODES = ("off", "window", "both")  # AskConfig.focus
# Output tokens per request by default: an answer (`ask`: ANSWER_TOKENS, jocr.pipeline.ask_decoding), a
# page's JSON object of fields (`extract`: its names plus an answer's tokens per field, `fields_tokens`);
# FIELDS_TOKENS is the server's default for a schema.
FIELDS_TOKENS = 512


class AskError(ValueError):
    """A question or schema that cannot be asked: the message is one line."""


@dataclass
class AskConfig:
    """Decoding and page settings of `ask` / `extract` (as `jocr parse` takes them)."""

    # Output tokens per request; None: the answer's own cap (jocr.pipeline.ask_decoding: ANSWER_TOKENS for a
    # question, `fields_tokens` for a page's JSON of fields).
    max_tokens: int | None = None
    spec: str | int = "auto"  # "auto": drafting for `extract`'s JSON, none for `ask`'s few-token answers
    batch_size: int = DEFAULT_BATCH_SIZE
    anchor: str = "auto"
    dpi: float | None = None
    password: str | None = None
    # The line source of images and of PDF pages without a usable text layer (`jocr.lines.source.page_lines`:
    # "auto", "rapidocr", "tesseract" or "none"): their OCR'd lines are the anchor and locate the answer.
    ocr: str = "auto"
    # Ask each question over the stretch of runs that shares most words with it (jocr.pipeline.ask_focus),
    # where one does (docs/asking.md, "Focus"): "off" (the default: the bundled member answers over the
    # page's windows); "window": over that stretch alone; "both": over that stretch and the page's windows,
    # the page's answer chosen among them as among any page's windows (`choose_window`). True and False
    # stand for "window" and "off".
    focus: bool | str = "off"

    def __post_init__(self) -> None:
        if isinstance(self.focus, bool):
            self.focus = "window" if self.focus else "off"
        if self.focus not in FOCUS_MODES:
            raise AskError(f"focus must be one of {', '.join(FOCUS_MODES)}, not {_short(self.focus)}")
        if self.ocr not in OCR_MODES:
            raise AskError(f"ocr must be one of {', '.join(OCR_MODES)}, not {_short(self.ocr)}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise AskError(f"max_tokens must be >= 1, not {self.max_tokens}")
        if self.batch_size < 1:
            raise AskError(f"batch_size must be >= 1, not {self.batch_size}")


# Questions and schemas -------------------------------------------------------------------------------
def check_question(question: Any) -> str:
    """The question stripped; AskError for a non-string, an empty one or one over MAX_QUESTION_BYTES."""
    if not isinstance(question, str):
        raise AskError(f"the question must be text, not {type(question).__name__}")
    text = question.strip()
    if not text:
        raise AskError("the question is empty")
    size = len(text.encode("utf-8"))
    if size > MAX_QUESTION_BYTES:
        raise AskError(f"the question is {size:,} bytes; at most {MAX_QUESTION_BYTES:,}")
    return text


@dataclass(frozen=True)
class FieldSpec:
    """One field to extract: its name, JSON type and optional description."""

    name: str
    type: str = "string"
    description: str = ""
    nullable: bool = False  # the JSON Schema type allows null (`["string", "null"]`)
    required: bool = False  # named in the schema's `required`


def parse_schema(schema: Any) -> list[FieldSpec]:
    """Fields from a JSON Schema subset (an object whose `properties` are of type string, number, integer
    or boolean, each with an optional `description`), a mapping name -> description, or a list of names.
    AskError (one line) for anything else: `$ref` anywhere (no references, so no recursion), nested
    objects or arrays, more than MAX_FIELDS fields, a name that is not a non-empty string, duplicate
    names, a description or whole prompt over MAX_QUESTION_BYTES."""
    if isinstance(schema, str | bytes):
        raise AskError("the schema must be a JSON object or a list of field names, not a string")
    if isinstance(schema, Mapping) and ("properties" in schema or "type" in schema or "$ref" in schema):
        fields = _schema_fields(schema)
    elif isinstance(schema, Mapping):
        fields = [_field(name, {"description": d} if isinstance(d, str) else d) for name, d in schema.items()]
    elif isinstance(schema, Sequence):
        fields = [_field(name, {}) for name in schema]
    else:
        raise AskError(
            f"the schema must be a JSON object or a list of field names, not {type(schema).__name__}"
        )
    if not fields:
        raise AskError("the schema names no fields")
    if len(fields) > MAX_FIELDS:
        raise AskError(f"the schema has {len(fields):,} fields; at most {MAX_FIELDS}")
    names = [f.name for f in fields]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise AskError(f"field {_short(duplicate)} is named twice")
    check_question(extract_prompt(fields))
    return fields


def _schema_fields(schema: Mapping) -> list[FieldSpec]:
    if _has_ref(schema):
        raise AskError("$ref is not supported (the schema must be one flat object, without references)")
    if schema.get("type", "object") != "object":
        raise AskError(f"the schema's type must be object, not {schema.get('type')!r}")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        raise AskError("the schema needs 'properties': an object of field name -> {type, description}")
    if len(properties) > MAX_FIELDS:
        raise AskError(f"the schema has {len(properties):,} fields; at most {MAX_FIELDS}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise AskError("the schema's 'required' must be a list of field names (strings)")
    missing = next((n for n in required if n not in properties), None)
    if missing is not None:
        raise AskError(f"'required' names {missing[:100]!r}, which is not among the properties")
    fields = [_field(name, spec) for name, spec in properties.items()]
    return [replace(f, required=f.name in required) for f in fields]


def _has_ref(node: Any, depth: int = 0) -> bool:
    if depth > 32:  # deeper than any flat schema: treat as the recursion it likely is
        return True
    if isinstance(node, Mapping):
        return "$ref" in node or any(_has_ref(v, depth + 1) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v, depth + 1) for v in node)
    return False


def _field(name: Any, spec: Any) -> FieldSpec:
    if not isinstance(name, str) or not name.strip():
        raise AskError(f"field names must be non-empty strings, not {name!r}"[:200])
    if len(name.encode("utf-8")) > MAX_QUESTION_BYTES:
        raise AskError(f"a field name is over {MAX_QUESTION_BYTES:,} bytes")
    if not isinstance(spec, Mapping):
        raise AskError(f"field {_short(name)}: its schema must be an object with a type")
    kind = spec.get("type", "string")
    options = spec.get("anyOf")
    if options is not None:  # pydantic's Optional[T]: {"anyOf": [{"type": T}, {"type": "null"}]}
        listed = options if isinstance(options, list) else []
        kinds = [o.get("type") for o in listed if isinstance(o, Mapping)]
        kind = kinds if len(kinds) == len(listed) == 2 and "type" not in spec else options
    nullable = False
    if isinstance(kind, list) and len(kind) == 2 and "null" in kind:  # OpenAI's optional field: [T, "null"]
        kind, nullable = next(k for k in kind if k != "null"), True
    if not isinstance(kind, str) or kind not in FIELD_TYPES:
        raise AskError(
            f"field {_short(name)}: type {_short(kind)} is not supported (use {', '.join(FIELD_TYPES)}, "
            'or [type, "null"])'
        )
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise AskError(f"field {_short(name)}: description must be text")
    if len(description.encode("utf-8")) > MAX_QUESTION_BYTES:
        raise AskError(f"field {_short(name)}: description is over {MAX_QUESTION_BYTES:,} bytes")
    return FieldSpec(name.strip(), kind, " ".join(description.split()), nullable=nullable)


def _short(value: Any, limit: int = 60) -> str:
    """A name or value for a one-line message: its repr, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def schema_answer(values: Mapping[str, Any], fields: Sequence[FieldSpec]) -> tuple[dict | None, str | None]:
    """Extracted values as a JSON object that validates against the schema the fields came from, or the
    reason it cannot: a value found is kept (typed by `read_fields_answer`); a field without one is null
    where its type allows null, left out where it is not required, and otherwise the answer is refused
    (None, "no value for required field ...") rather than invented."""
    out: dict[str, Any] = {}
    for f in fields:
        value = values.get(f.name)
        if value is not None or f.nullable:
            out[f.name] = value
        elif f.required:
            return None, f"no value on the page for the required field {_short(f.name)}"
    return out, None


def extract_prompt(fields: Sequence[FieldSpec]) -> str:
    """The extraction question: EXTRACT_PROMPT then the fields as compact JSON (name -> "type" or
    "type: description"), the same text in training (`jocr.train.docqa_data`) and at inference."""
    spec = {f.name: f"{f.type}: {f.description}" if f.description else f.type for f in fields}
    return EXTRACT_PROMPT + json.dumps(spec, ensure_ascii=False, separators=(",", ":"))


def read_fields_answer(text: str, fields: Sequence[FieldSpec], anchor: str | None = None) -> dict[str, Any]:
    """The model's JSON object -> field name -> value (typed per field; None where absent, unreadable or
    not of the field's type). A string value written as run references is read as an answer is
    (`answer_text` against `anchor`, the field's name as the question: references resolved, the value cut
    from the runs by `answer_value`) after the JSON is read (a run's text may hold quotes). Text that holds
    no JSON object gives every field None."""
    data = fields_json(text)
    values = {}
    for f in fields:
        value = data.get(f.name)
        if anchor and isinstance(value, str):
            value = answer_text(value, anchor, f.name)
        values[f.name] = typed_value(value, f.type)
    return values


def fields_json(text: str) -> dict[str, Any]:
    """The JSON object in a model's extraction answer (from its first `{` to its last `}`), {} when there is
    none or it does not parse."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if 0 <= start < end else {}
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def typed_value(value: Any, kind: str) -> Any:
    """A value as its field's JSON type: numbers through `jocr.checks.qa.normalise_value` (currency signs
    and separators dropped), booleans from true/false/yes/no; None when it does not read as that type."""
    if value is None or isinstance(value, dict | list):
        return None
    if kind == "string":
        text = str(value).strip()
        return text or None
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        word = normalise_answer(str(value))
        return True if word in ("true", "yes", "是") else False if word in ("false", "no", "否") else None
    plain = normalise_value(value)
    try:
        number = float(plain) if plain is not None else None
    except ValueError:
        return None
    if number is None or kind == "number":
        return number
    return int(number) if number.is_integer() else None


def question_ids(
    builder: PageRequestBuilder, image_tokens: int | Sequence[int], question: str, anchor: str | None
) -> list[int]:
    """A question's prompt ids for one page: the question is the prompt text, verbatim, as the published
    DeepSeek-OCR checkpoints take free-form prompts (`"<image>\\n" + text` in the plain template: BOS,
    the image placeholders, "\\n" + question), followed by the anchor window for a model that reads
    anchors (`Tokenizer.build_prompt`)."""
    counts = [image_tokens] if isinstance(image_tokens, int) else list(image_tokens)
    return builder.prompt_ids(counts, text=check_question(question), anchor=anchor)


# Results --------------------------------------------------------------------------------------------
@dataclass
class PageAnswer:
    """One page's answer: `text` (run references resolved), `raw` as the model wrote it, `box` (pixels of
    the page as rendered, [x0, y0, x1, y1]) where the answer is a span of a text-layer line."""

    page: int
    text: str = ""
    raw: str = ""
    box: list[int] | None = None
    anchored: bool = False
    finish_reason: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "answer": self.text,
            "box": self.box,
            "anchored": self.anchored,
            "finish_reason": self.finish_reason,
            "error": self.error,
        }


@dataclass
class Answer:
    """`ask`'s result: the chosen page's answer (`answer`, `page`, `box`) and every page's (`pages`). The
    chosen page is the first whose answer is a span of its lines, else the first with a non-empty answer."""

    question: str
    source: str
    answer: str = ""
    page: int | None = None
    box: list[int] | None = None
    pages: list[PageAnswer] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "question": self.question,
            "page": self.page,
            "answer": self.answer,
            "box": self.box,
            "pages": [p.to_dict() for p in self.pages],
            "error": self.error,
        }


@dataclass
class Extraction:
    """`extract`'s result for one document: field -> value (None where absent), and per field the page
    and box of the value where known (`where`)."""

    source: str
    values: dict[str, Any] = field(default_factory=dict)
    where: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self, detail: bool = False) -> dict[str, Any]:
        if not detail:
            return dict(self.values)
        fields = {
            n: {"value": v, **self.where.get(n, {"page": None, "box": None})} for n, v in self.values.items()
        }
        return {"source": self.source, "fields": fields, "error": self.error}


# Running -------------------------------------------------------------------------------------------
@dataclass
class _PageRequests:
    page: int
    size: tuple[int, int]
    anchors: list[str | None]
    layer: Any = None  # the page's usable lines (text layer or OCR) when it has them: the answer's box
    results: list[Any] = field(default_factory=list)
    error: str | None = None
    question: int = 0  # index of the question asked, for several questions on the same pages
    blank: bool = False  # a page without ink: not asked
    firsts: list[int] = field(default_factory=lambda: [1])  # each window's first run, page-wide (`runs_box`)


def _model(model: LoadedModel | str | os.PathLike | None, device: str) -> LoadedModel:
    """The model that answers: a bundle's asking member when it has one (`LoadedModel.asker`)."""
    loaded = model if isinstance(model, LoadedModel) else load_model(model, device=device)
    return loaded.asker


def _read_pages(
    item, loaded: LoadedModel, questions: Sequence[str], pages, cfg: AskConfig, fields: Sequence[str] = ()
) -> tuple[str, list[_PageRequests]]:
    """Render the selected pages once, build one request per question and anchor window
    (`question_ids`, decoded as `request_shape` says), run them all together and keep the results: one
    entry per (page, question). `fields`: the names of an extraction's fields (its one question)."""
    from jocr.engine import GenerationRequest

    options = LoadOptions(password=cfg.password)
    if cfg.dpi is not None:
        options.dpi = float(cfg.dpi)
    name = item if isinstance(item, str | os.PathLike) else None
    builder = PageRequestBuilder(loaded.tokenizer, loaded.vision)
    out: list[_PageRequests] = []
    requests: list[tuple[_PageRequests, Any]] = []
    with open_source(item, options, name=str(name) if name else None) as source:
        label = source.name
        for index in select_pages(pages, source.num_pages, label):
            image = source.render(index)
            blank = is_blank_page(image)
            decision, lines = (None, None) if blank else question_anchor(source, index, image, loaded, cfg)
            if decision is not None:  # a page OCR read turned: asked upright, in its lines' frame
                image = decision.upright(image)
            firsts = [w.first for w in decision.windows] if decision and decision.anchored else [1]
            entries = []
            for q, question in enumerate(questions):
                anchors, starts = decision.request_anchors if decision else [], firsts
                focused = (
                    _focus(decision, lines, question, loaded) if cfg.focus != "off" and not fields else None
                )
                if focused is not None:
                    # "both": the focused window first, then the page's others (one that is the focused
                    # window already is asked once)
                    kept = (
                        [i for i, a in enumerate(anchors) if a != focused.text] if cfg.focus == "both" else []
                    )
                    anchors = [focused.text, *(anchors[i] for i in kept)]
                    starts = [focused.first, *(starts[i] for i in kept)]
                entries.append(
                    _PageRequests(index + 1, image.size, anchors, lines, question=q, firsts=starts)
                )
            out.extend(entries)
            if blank:  # no ink, nothing to ask: the page is not sent to the model
                for entry in entries:
                    entry.error, entry.blank = f"{label}: page {entry.page} is blank: nothing to ask", True
                continue
            try:
                views, n = builder.views(image)
            except Exception as exc:  # e.g. a degenerate page size: this page fails, the others are asked
                for entry in entries:
                    entry.error = f"{label}: page {entry.page}: cannot prepare the page ({one_line(exc)})"
                continue
            for entry in entries:
                for anchor in entry.anchors:
                    ids = question_ids(builder, n, questions[entry.question], anchor)
                    shape = request_shape(loaded, cfg.max_tokens, fields)
                    requests.append((entry, GenerationRequest(ids, [views], **shape.options())))
    _generate(loaded, requests, cfg)
    return label, out


def _focus(decision, lines, question: str, loaded: LoadedModel):
    """The window of runs `question` is asked over (`jocr.pipeline.ask_focus.focus_window`), or None (the
    page's windows then) for a page that is not anchored or a question that shares no word with any run."""
    if decision is None or not decision.anchored or lines is None:
        return None
    return focus_window(decision.windows, lines, question, loaded.tokenizer, loaded.anchor_config.max_tokens)


def request_shape(loaded: LoadedModel, max_tokens: int | None, fields: Sequence[str] = ()) -> AnswerShape:
    """How one request's answer is decoded (jocr.pipeline.ask_decoding): a question's (`question_shape`) or,
    with `fields`, an extraction's JSON object (`fields_shape`)."""
    if fields:
        return fields_shape(loaded.tokenizer, list(fields), max_tokens)
    return question_shape(loaded.tokenizer, max_tokens)


class _ReadLines:
    """A page source whose lines are read already: `page_anchor` builds the anchor from them, so one OCR run
    serves both the anchor and the answer's box."""

    def __init__(self, lines):
        self.lines = lines

    def text_layer(self, index: int):
        return self.lines


def question_anchor(source, index: int, image, loaded: LoadedModel, cfg: AskConfig) -> tuple[PageAnchor, Any]:
    """A page's anchoring decision for a question and its lines (for the answer's box): the lines from
    `jocr.lines.source.page_lines` (the text layer when usable, else OCR over `image` under `cfg.ocr`), the
    decision `jocr.lines.anchor.page_anchor`'s under `cfg.anchor` and the model's anchor config, as
    `jocr parse` decides it, except that a page is never read from its lines `alone`: an answer is the
    model's. A line source that cannot be read leaves the page to its image (never fails it)."""
    from jocr.lines.source import page_lines

    try:
        lines = page_lines(source, index, image, cfg.ocr)
    except Exception:  # a text layer or OCR failure: the image alone, as page_anchor_or_note does
        lines = None
    config = loaded.anchor_config
    decision = page_anchor_or_note(
        _ReadLines(lines), index, cfg.anchor, config.version, loaded.tokenizer, config.max_tokens, ocr="none"
    )
    decision.alone = False
    usable = lines is not None and lines.usable and lines.lines and lines.width > 0 and lines.height > 0
    return decision, lines if usable else None


def _generate(loaded: LoadedModel, requests: list[tuple[_PageRequests, Any]], cfg: AskConfig) -> None:
    """Runs the requests on the model that reads each (a bundle's anchored member for anchored prompts,
    as `jocr.pipeline.bundle` routes them); a request the engine refuses fails its page only."""
    groups: dict[int, tuple[LoadedModel, list[tuple[_PageRequests, Any]]]] = {}
    for entry, request in requests:
        reader = (
            loaded.anchored
            if loaded.anchored and loaded.tokenizer.is_anchored(request.prompt_ids)
            else loaded
        )
        engine = reader.engine(cfg.spec, cfg.batch_size)
        try:
            engine.check(request)
        except ValueError as exc:
            entry.error = f"page {entry.page}: {one_line(exc)}"
            continue
        groups.setdefault(id(reader), (reader, []))[1].append((entry, request))
    for reader, items in groups.values():
        results = reader.engine(cfg.spec, cfg.batch_size).generate([r for _, r in items])
        for (entry, _), result in zip(items, results):
            entry.results.append(result)
            if result.finish_reason == "error":
                reason = one_line(result.error) if result.error is not None else "unknown error"
                entry.error = f"page {entry.page}: generation failed ({reason})"


def window_answers(
    raws: Sequence[str],
    anchors: Sequence[str | None],
    question: str,
    reasons: Sequence[str | None],
    scores: Sequence[float | None] | None = None,
) -> list[WindowAnswer]:
    """A page's windows' outputs (raw text, its anchor, finish reason, mean log-probability) as answers
    read by `answer_text`, for `choose_window`."""
    scores = list(scores) if scores is not None else [None] * len(raws)
    return [
        WindowAnswer(answer_text(raw, anchor, question), raw, anchor, reason, score)
        for raw, anchor, reason, score in zip(raws, anchors, reasons, scores)
    ]


def _window_answers(loaded: LoadedModel, entry: _PageRequests, question: str) -> list[WindowAnswer]:
    results = entry.results
    raws = [loaded.tokenizer.decode(r.token_ids) for r in results]
    reasons = [r.finish_reason for r in results]
    return window_answers(raws, entry.anchors, question, reasons, [r.mean_logprob() for r in results])


def window_fields(raws: Sequence[tuple[str, str | None]], fields: Sequence[FieldSpec]) -> dict[str, Any]:
    """A page's field values from its windows' answers ((raw text, the window's anchor) each): a field
    takes the first window's value that is not None (`read_fields_answer`)."""
    values: dict[str, Any] = {f.name: None for f in fields}
    for raw, anchor in raws:
        for name, value in read_fields_answer(raw, fields, anchor).items():
            if values[name] is None:
                values[name] = value
    return values


def _window_raws(loaded: LoadedModel, entry: _PageRequests) -> list[tuple[str, str | None]]:
    """(raw text, its window's anchor) per window of a page."""
    return [(loaded.tokenizer.decode(r.token_ids), a) for a, r in zip(entry.anchors, entry.results)]


def _where(answer: str, raw: str, window: int, entry: _PageRequests) -> list[int] | None:
    """An answer's box: the lines of the runs its raw text references in its window (`runs_box`), else the
    line it is a span of (`answer_box`)."""
    first = entry.firsts[window] if window < len(entry.firsts) else 1
    anchored = window < len(entry.anchors) and entry.anchors[window] is not None
    known = anchored and known_runs(raw, entry.anchors[window])
    box = runs_box(raw, first, entry.layer, entry.size) if known else None
    return box or answer_box(answer, entry.layer, entry.size)


def ask(
    file: Any,
    question: str | Sequence[str],
    pages: str | Sequence[int] | None = None,
    model: LoadedModel | str | os.PathLike | None = None,
    device: str = "cpu",
    config: AskConfig | None = None,
    **settings: Any,
) -> Answer | list[Answer]:
    """Ask one document (a path, URL, bytes or PIL image) a question (-> Answer), or several questions
    (a list -> a list of Answers; the pages are rendered once and all requests decoded together). Each
    selected page is asked (one request per anchor window) and the answer is chosen as `Answer` says.
    `settings` are `AskConfig`'s (max_tokens, spec, batch_size, anchor, dpi, password, ocr). AskError for a
    bad question, DocumentError for an input that cannot be opened or a page selection out of range."""
    single = isinstance(question, str)
    texts = [check_question(q) for q in ([question] if single else list(question))]
    if not texts:
        raise AskError("no question to ask")
    cfg = config or AskConfig(**settings)
    if cfg.spec == "auto":  # an answer is a few tokens (`@13`): a draft pass costs more than it saves
        cfg = replace(cfg, spec=0)
    loaded = _model(model, device)
    source, entries = _read_pages(file, loaded, texts, pages, cfg)
    answers = [
        _answer(loaded, text, source, [e for e in entries if e.question == q]) for q, text in enumerate(texts)
    ]
    return answers[0] if single else answers


def _answer(loaded: LoadedModel, question: str, source: str, entries: list[_PageRequests]) -> Answer:
    result = Answer(question=question, source=source)
    for entry in entries:
        page = PageAnswer(page=entry.page, anchored=entry.anchors != [None], error=entry.error)
        if entry.error is None:
            windows = _window_answers(loaded, entry, question)
            window = choose_window(windows)
            chosen = windows[window]
            page.text, page.raw, page.finish_reason = chosen.answer, chosen.raw, chosen.finish_reason
            page.box = _where(page.text, page.raw, window, entry)
        result.pages.append(page)
    return choose_page(result)


def choose_page(result: Answer) -> Answer:
    """Sets the answer of `result` from its pages (`Answer`'s rule: the first page whose answer is a span of
    its lines, else the first non-empty one); its error is the first page's when no page was answered."""
    answered = [p for p in result.pages if p.error is None]
    best = next((p for p in answered if p.box is not None), None) or next(
        (p for p in answered if p.text), None
    )
    if best is not None:
        result.answer, result.page, result.box = best.text, best.page, best.box
    elif not answered and result.pages:
        result.error = result.pages[0].error
    return result


def extract(
    files: Any,
    schema: Any,
    pages: str | Sequence[int] | None = None,
    model: LoadedModel | str | os.PathLike | None = None,
    device: str = "cpu",
    config: AskConfig | None = None,
    raise_errors: bool = True,
    **settings: Any,
) -> Extraction | list[Extraction]:
    """Extract fields (`parse_schema`: a JSON Schema subset, a mapping name -> description, or a list of
    names) from a document or a list of them (-> a list). Each page window is asked for all fields at
    once (`extract_prompt`); a field takes the first page's value that is not None. With raise_errors,
    a document that cannot be read raises DocumentError; otherwise its Extraction carries `.error`."""
    fields = parse_schema(schema)
    question = extract_prompt(fields)
    cfg = config or AskConfig(**settings)
    loaded = _model(model, device)
    single = not isinstance(files, list | tuple)
    out = []
    for item in [files] if single else list(files):
        extraction = Extraction(source=str(item) if isinstance(item, str | os.PathLike) else "<input>")
        extraction.values = {f.name: None for f in fields}
        try:
            names = [f.name for f in fields]
            extraction.source, entries = _read_pages(item, loaded, [question], pages, cfg, names)
        except DocumentError as exc:
            if raise_errors:
                raise
            extraction.error = str(exc)
            out.append(extraction)
            continue
        every_page_blank = all(e.blank for e in entries)
        for entry in entries:
            if entry.error is not None:
                if not entry.blank or every_page_blank:  # a blank page among others holds no fields
                    extraction.error = extraction.error or entry.error
                continue
            for window, (raw, anchor) in enumerate(_window_raws(loaded, entry)):
                written = fields_json(raw)
                for name, value in read_fields_answer(raw, fields, anchor).items():
                    if value is None or extraction.values[name] is not None:
                        continue
                    extraction.values[name] = value
                    raw_value = written.get(name) if isinstance(written.get(name), str) else ""
                    box = _where(str(value), raw_value, window, entry)
                    extraction.where[name] = {"page": entry.page, "box": box}
        out.append(extraction)
    return out[0] if single else out
