"""OpenAI chat-completions schemas (the subset an OCR model can honour) and OpenAI-style errors.

Requests are validated by hand from the raw body (not by FastAPI's injection) so that every problem, from
malformed JSON to an unsupported option, becomes a 400 with OpenAI's error shape:
`{"error": {"message", "type": "invalid_request_error", "param", "code"}}`.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jocr.engine.requests import MAX_SEED, MAX_TEMPERATURE, MIN_TEMPERATURE, MIN_TOP_P
from jocr.pipeline.ask import (
    ANSWER_TOKENS,
    FIELDS_TOKENS,
    AskError,
    FieldSpec,
    check_question,
    extract_prompt,
    parse_schema,
)
from jocr.pipeline.ask_decoding import CAPTION_TOKENS
from jocr.tokenizer import DEFAULT_PROMPT, GROUNDING_TOKEN, IMAGE_TOKEN, PROMPTS

# Size limits of every field (docs/serving.md "Limits"). Strings are bounded in characters, lists in items;
# the whole body is bounded by ServeConfig.max_body_bytes and `MAX_JSON_VALUES` below.
MAX_JSON_VALUES = 20_000  # separators and containers in one body: 3.3 million metadata keys never parse
MAX_PROMPT_CHARS = 8192  # the text parts of a request, joined
MAX_NAME_CHARS = 256  # model, user, name, filename, stop strings
MAX_URL_CHARS = 8192  # an http(s) image URL (data: URLs are bounded by the body limit)
MAX_MESSAGES = 16
MAX_STOP_STRINGS = 4
MAX_METADATA_KEYS = 16  # OpenAI's own limits on `metadata`: 16 pairs, keys <= 64, values <= 512 characters
MAX_SCHEMA_NAME_CHARS = 64  # OpenAI's limit on `response_format.json_schema.name`
# The document prompts DeepSeek-OCR documents besides those in PROMPTS: a chat text equal to one of them asks
# for the page's Markdown, as PROMPTS' do (docs/asking.md, "The server").
DEEPSEEK_OCR_PROMPTS = ("<|grounding|>OCR this image.", "Parse the figure.")


class ApiError(Exception):
    """An error answered as OpenAI-style JSON with `status` (4xx or 5xx) and a one-line message."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}

    @property
    def type(self) -> str:
        if self.status == 401:
            return "authentication_error"
        if self.status == 429:
            return "rate_limit_error"
        if self.status >= 500:
            return "server_error"
        return "invalid_request_error"

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


class ImageURL(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    url: str  # http(s) URLs are capped at MAX_URL_CHARS in parse_chat_request; data: URLs by the body limit
    detail: Literal["auto", "low", "high"] | None = None


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["text", "image_url"]
    text: str | None = Field(default=None, max_length=MAX_PROMPT_CHARS)
    image_url: ImageURL | None = None


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    role: Literal["system", "developer", "user", "assistant", "tool"]
    # Bounded in `parse_chat_request` (prompt characters, images), whose errors cite those limits.
    content: str | list[ContentPart] | None = None
    name: str | None = Field(default=None, max_length=MAX_NAME_CHARS)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    include_usage: bool = False
    include_obfuscation: bool | None = None


class ChatCompletionRequest(BaseModel):
    """Fields the server honours, plus OpenAI fields accepted only at their no-op values (checked in
    `parse_chat_request`). Anything else is an unsupported option and gets a 400."""

    # Strict: JSON types as written ("5" and true are not integers, 1 is not a boolean).
    model_config = ConfigDict(extra="allow", strict=True)
    model: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    # OpenAI's range is [0, 2]; a positive temperature below MIN_TEMPERATURE would only round to greedy.
    temperature: float | None = Field(default=None, ge=0.0, le=min(2.0, MAX_TEMPERATURE))
    top_p: float | None = Field(default=None, ge=MIN_TOP_P, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1, le=2**31)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=2**31)
    stop: str | list[str] | None = None  # bounded in `parse_chat_request`
    stream: bool = False
    stream_options: StreamOptions | None = None
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED)
    user: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    n: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    response_format: dict[str, Any] | None = Field(default=None, max_length=4)
    store: bool | None = None
    metadata: dict[str, str] | None = Field(default=None, max_length=MAX_METADATA_KEYS)
    service_tier: str | None = Field(default=None, max_length=MAX_NAME_CHARS)


@dataclass
class ChatTask:
    """What a chat request asks of the model: image references (http(s) or data: URLs) and the prompt."""

    image_urls: list[str]
    prompt: str
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    include_usage: bool = False
    model: str | None = None
    # What the model is asked (docs/asking.md, "The server"): "ocr" (the page's Markdown), "question" (the
    # prompt is a question, answered as `jocr ask` answers it), "fields" (`response_format`'s JSON schema:
    # the prompt is its extraction prompt, the answer a JSON object that validates against the schema) or
    # "caption" (the caption prompt: the image's caption, asked as `jocr.pipeline.caption` asks it) or
    # "formula" (the formula prompt: read by the model's formula reader where it has one, as `jocr parse
    # --task formula` reads an image; else read as "ocr" under that prompt).
    task: str = "ocr"
    fields: list[FieldSpec] | None = None

    @property
    def asks(self) -> bool:
        """Whether the request asks the page (a question, fields or a caption) rather than reading it."""
        return self.task in ("question", "fields", "caption")


def _validation_message(exc: ValidationError) -> tuple[str, str | None]:
    # The deepest error: of a union's (content: text or parts), the branch that got furthest says what is
    # wrong ("text: at most 8192 characters", not "content: not a string").
    err = max(exc.errors(), key=lambda e: len(e.get("loc", ())))
    loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("str", "list[ContentPart]"))
    msg = err.get("msg", "invalid value")
    return (f"{loc}: {msg}" if loc else msg), (loc or None)


def load_json_body(raw: bytes) -> Any:
    """Parse a JSON body or raise a 400 naming the position of the first error.

    CPU work proportional to the body: call it off the event loop (`OCRService.run_blocking`). Bodies with
    more than MAX_JSON_VALUES separators or containers are refused before parsing (counted with C-speed
    `bytes.count`), which bounds both the parse time of millions of tiny values and the nesting depth."""
    if not raw.strip():
        raise ApiError(400, "request body is empty; expected JSON")
    values = sum(raw.count(c) for c in (b",", b":", b"[", b"{"))
    if values > MAX_JSON_VALUES:
        raise ApiError(
            400, f"request body has too many JSON values or too deep nesting (limit {MAX_JSON_VALUES})"
        )
    try:
        # UTF-8 only (RFC 8259 section 8.1): json.loads would also take UTF-16 and UTF-32 bytes.
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, "request body is not valid UTF-8 JSON") from None
    except RecursionError:
        raise ApiError(400, "request body is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ApiError(
            400, f"malformed JSON in request body: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def resolve_prompt(text: str) -> str:
    """The text part selects the task: empty -> the default OCR prompt; a task name from `PROMPTS`
    ("ocr", "free", "grounding", "table", "formula", "caption") -> that prompt; other text is the prompt."""
    text = text.strip()
    if not text:
        return DEFAULT_PROMPT
    return PROMPTS.get(text.lower(), text)


def _prompt_key(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(".")


_OCR_PROMPTS = {_prompt_key(p): p for p in (*PROMPTS.values(), *DEEPSEEK_OCR_PROMPTS)}


def ocr_prompt(text: str) -> str | None:
    """The reading prompt a chat's text names, or None when the text is a question (docs/asking.md):
    empty text, a task name of `PROMPTS`, one of their prompts or DeepSeek-OCR's documented document prompts
    (case, spacing and a final full stop aside), or any prompt holding `<|grounding|>` (its boxes become
    Markdown) read the page; any other text is a question about it, whatever the served model."""
    text = text.strip()
    if not text:
        return DEFAULT_PROMPT
    if text.lower() in PROMPTS:
        return PROMPTS[text.lower()]
    known = _OCR_PROMPTS.get(_prompt_key(text))
    if known is not None:
        return known
    return text if GROUNDING_TOKEN in text else None


def _without_image_tag(text: str) -> str:
    """The text part without a leading `<image>` (DeepSeek-OCR's prompts are written `"<image>\n" + text`;
    the image is the request's image part). 400 for `<image>` anywhere else: the image count would not
    match the images sent."""
    text = text.strip()
    while text.startswith(IMAGE_TOKEN):
        text = text[len(IMAGE_TOKEN) :].strip()
    if IMAGE_TOKEN in text:
        raise ApiError(
            400, f"the text holds {IMAGE_TOKEN}: send the image as an image_url part", param="messages"
        )
    return text


def schema_fields(response_format: dict[str, Any]) -> list[FieldSpec] | None:
    """The fields of `response_format` (None for plain text): `{"type": "json_schema", "json_schema":
    {"name", "schema", "strict", "description"}}` whose schema is `jocr.pipeline.ask.parse_schema`'s subset;
    400 with the schema's one-line error otherwise."""
    kind = response_format.get("type")
    if kind == "text" and len(response_format) == 1:
        return None
    if kind != "json_schema":
        raise ApiError(
            400,
            f"response_format type {str(kind)[:40]!r} is not supported; use text or json_schema "
            "(a JSON schema of the fields to extract)",
            param="response_format",
            code="unsupported",
        )
    extra = sorted(set(response_format) - {"type", "json_schema"})
    if extra:
        raise ApiError(400, f"response_format: unknown key {extra[0][:40]!r}", param="response_format")
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict):
        raise ApiError(400, "response_format.json_schema must be an object", param="response_format")
    unknown = sorted(set(spec) - {"name", "schema", "strict", "description"})
    if unknown:
        raise ApiError(
            400, f"response_format.json_schema: unknown key {unknown[0][:40]!r}", param="response_format"
        )
    name = spec.get("name", "")
    if not isinstance(name, str) or len(name) > MAX_SCHEMA_NAME_CHARS:
        raise ApiError(
            400,
            f"response_format.json_schema.name must be a string of up to {MAX_SCHEMA_NAME_CHARS} characters",
            param="response_format",
        )
    if not isinstance(spec.get("strict", False), bool) or not isinstance(spec.get("description", ""), str):
        raise ApiError(
            400, "response_format.json_schema: strict is a boolean, description text", param="response_format"
        )
    if "schema" not in spec:
        raise ApiError(400, "response_format.json_schema needs a schema", param="response_format")
    try:
        return parse_schema(spec["schema"])
    except AskError as exc:
        raise ApiError(400, f"response_format.json_schema.schema: {exc}", param="response_format") from None
    except RecursionError:
        raise ApiError(400, "response_format.json_schema.schema is nested too deeply") from None


def parse_chat_request(
    payload: Any, max_tokens_cap: int, default_max_tokens: int, max_images: int
) -> ChatTask:
    """Validate a chat-completions payload into a ChatTask; raise ApiError(400) with a clear message."""
    if not isinstance(payload, dict):
        raise ApiError(400, "request body must be a JSON object")
    try:
        req = ChatCompletionRequest.model_validate(payload)
    except RecursionError:
        raise ApiError(400, "request body is nested too deeply") from None
    except ValidationError as exc:
        message, param = _validation_message(exc)
        raise ApiError(400, message, param=param) from None
    unsupported = sorted((req.model_extra or {}).keys())
    if unsupported:
        raise ApiError(
            400, f"unsupported parameter: {unsupported[0]}", param=unsupported[0], code="unsupported"
        )
    for name, ok in (
        ("n", req.n in (None, 1)),
        ("frequency_penalty", not req.frequency_penalty),
        ("presence_penalty", not req.presence_penalty),
        ("logprobs", not req.logprobs),
        ("top_logprobs", not req.top_logprobs),
    ):
        if not ok:
            raise ApiError(400, f"unsupported value for {name}", param=name, code="unsupported")

    images: list[str] = []
    texts: list[str] = []
    for i, msg in enumerate(req.messages):
        if msg.role in ("assistant", "tool"):
            raise ApiError(
                400, f"messages.{i}: multi-turn conversations are not supported; send one user message"
            )
        if msg.role != "user":
            continue  # system/developer instructions do not apply to a transcription model
        if isinstance(msg.content, str) and len(msg.content) > MAX_PROMPT_CHARS:
            raise ApiError(
                400, f"messages.{i}.content: text over {MAX_PROMPT_CHARS} characters", param="messages"
            )
        parts = (
            [ContentPart.model_construct(type="text", text=msg.content, image_url=None)]
            if isinstance(msg.content, str)
            else msg.content or []
        )
        for j, part in enumerate(parts):
            if part.type == "text":
                texts.append(part.text or "")
            elif part.image_url is None:
                raise ApiError(
                    400, f"messages.{i}.content.{j}: image_url part without image_url", param="messages"
                )
            else:
                url = part.image_url.url.strip()
                if len(url) > MAX_URL_CHARS and not url[:5].lower() == "data:":
                    raise ApiError(
                        400, f"messages.{i}.content.{j}: image URL over {MAX_URL_CHARS} characters"
                    )
                if not url.lower().startswith(("http://", "https://", "data:")):
                    scheme = url.split(":", 1)[0] if ":" in url else ""
                    raise ApiError(
                        400,
                        f"messages.{i}.content.{j}: image URL scheme {scheme!r} is not allowed "
                        "(use http, https or data:)",
                        param="messages",
                    )
                images.append(url)
    if not images:
        raise ApiError(400, "no image: send at least one image_url content part", param="messages")
    if len(images) > max_images:
        raise ApiError(400, f"too many images ({len(images)}; limit {max_images})", param="messages")

    stop = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
    if len(stop) > MAX_STOP_STRINGS or any(not s or len(s) > MAX_NAME_CHARS for s in stop):
        raise ApiError(
            400,
            f"stop: up to {MAX_STOP_STRINGS} non-empty strings of up to {MAX_NAME_CHARS} characters",
            param="stop",
        )
    for key, value in (req.metadata or {}).items():
        if len(key) > 64 or len(value) > 512:
            raise ApiError(400, "metadata: keys up to 64 and values up to 512 characters", param="metadata")
    prompt = "\n".join(texts)
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ApiError(400, f"prompt text over {MAX_PROMPT_CHARS} characters", param="messages")
    temperature = 0.0 if req.temperature is None else req.temperature
    if 0 < temperature < MIN_TEMPERATURE:
        raise ApiError(
            400,
            f"temperature must be 0 or at least {MIN_TEMPERATURE}, not {temperature}",
            param="temperature",
        )
    fields = schema_fields(req.response_format) if req.response_format is not None else None
    text = _without_image_tag(prompt)
    reading = ocr_prompt(text)
    if fields is not None:  # the schema is what is asked; the text, if any, is not sent to the model
        task, prompt = "fields", extract_prompt(fields)
    elif reading == PROMPTS["caption"]:  # the caption task: asked as `jocr parse --task caption` asks it
        task, prompt = "caption", reading
    elif reading == PROMPTS["formula"]:  # the formula task: the formula reader's, where the model has one
        task, prompt = "formula", reading
    elif reading is not None:
        task, prompt = "ocr", reading
    else:
        try:
            task, prompt = "question", check_question(text)
        except AskError as exc:
            raise ApiError(400, f"question: {exc}", param="messages") from None
    given = "max_completion_tokens" if req.max_completion_tokens else "max_tokens"
    # Unless the request says, an answer gets `jocr ask`'s token budget and a schema's JSON `jocr extract`'s
    # (within the server's default), a page its reading default.
    default = {"question": ANSWER_TOKENS, "fields": FIELDS_TOKENS, "caption": CAPTION_TOKENS}.get(
        task, default_max_tokens
    )
    max_tokens = req.max_completion_tokens or req.max_tokens or min(default, default_max_tokens)
    if max_tokens > max_tokens_cap:
        raise ApiError(400, f"{given} {max_tokens} is over the limit of {max_tokens_cap}", param=given)
    return ChatTask(
        image_urls=images,
        prompt=prompt,
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=1.0 if req.top_p is None else req.top_p,
        seed=req.seed,
        stop=stop,
        stream=req.stream,
        include_usage=bool(req.stream_options and req.stream_options.include_usage),
        model=req.model,
        task=task,
        fields=fields,
    )


def completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def usage_dict(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def openai_finish_reason(engine_reason: str) -> str:
    """The engine stops for stop|length|repetition; a repetition stop truncates the output, so it is reported
    as "length" (the field OpenAI clients check for truncation) with the engine's reason in `stop_reason`."""
    return "stop" if engine_reason == "stop" else "length"


def chat_completion(
    cid: str,
    model: str,
    text: str,
    finish: str,
    prompt_tokens: int,
    completion_tokens: int,
    refusal: str | None = None,
) -> dict[str, Any]:
    """A chat completion; with `refusal` (a schema's answer the page does not give), the content is null
    and the reason is the message's `refusal`, as OpenAI answers a structured output it does not give."""
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None if refusal else text,
                    "refusal": refusal or None,
                },
                "logprobs": None,
                "finish_reason": openai_finish_reason(finish),
                "stop_reason": finish,
            }
        ],
        "usage": usage_dict(prompt_tokens, completion_tokens),
    }


def chat_chunk(
    cid: str,
    model: str,
    created: int,
    delta: dict[str, Any] | None,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    choices = []
    if delta is not None:
        choices.append(
            {
                "index": 0,
                "delta": delta,
                "logprobs": None,
                "finish_reason": None if finish is None else openai_finish_reason(finish),
            }
        )
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": None,
        "choices": choices,
        "usage": usage,
    }


def models_list(model_id: str, created: int) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": model_id, "object": "model", "created": created, "owned_by": "jocr"}],
    }
