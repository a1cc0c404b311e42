"""Asking a page through the server (docs/asking.md, "The server"): what a chat request or a Reader request
that asks rather than reads carries, how its windows' outputs become its answer (`jocr.pipeline.ask`'s
rules, so the server answers as `jocr ask` / `jocr extract` do), the Reader's question header and the
Reader's answer response.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from jocr.layout.request import join_windows, page_finish_reason
from jocr.lines.references import without_open_reference
from jocr.pipeline.ask import (
    MAX_QUESTION_BYTES,
    Answer,
    AskError,
    answer_text,
    check_question,
    choose_window,
    schema_answer,
    window_answers,
    window_fields,
)
from jocr.pipeline.caption import caption_text
from jocr.serve.openai import ApiError


@dataclass
class Asking:
    """A request that asks its page rather than reading it: a question (`fields` None) or a schema's
    fields."""

    fields: list | None = None
    question: str = ""  # the question asked (its words may name a run's label: `answer_value`)
    # the caption prompt (`jocr.pipeline.caption`): the image is the crop, its first anchor window the
    # crop's anchor, and the answer a caption (`caption_text`), decoded as `caption_shape` says
    caption: bool = False

    def answer(
        self,
        texts: list[str],
        reasons: list[str],
        anchors: list[str],
        scores: list[float | None] | None = None,
    ) -> tuple[str, str, str, str | None]:
        """(text, raw, finish reason, refusal) from the windows' outputs (`scores`: their mean
        log-probabilities), as `jocr ask` / `jocr extract` read a page: a question's answer is the chosen
        window's (`choose_window`), references resolved; a schema's is the windows' fields merged
        (`window_fields`) as a JSON object that validates against the schema (`schema_answer`), or a
        refusal."""
        windows: list[str | None] = list(anchors) or [None]
        if self.caption:
            return caption_text(texts[0], windows[0]), texts[0], reasons[0], None
        if self.fields is None:
            answers = window_answers(texts, windows, self.question, reasons, scores)
            i = choose_window(answers)
            return answers[i].answer, texts[i], reasons[i], None
        values = window_fields(list(zip(texts, windows)), self.fields)
        obj, refusal = schema_answer(values, self.fields)
        text = "" if obj is None else json.dumps(obj, ensure_ascii=False)
        return text, join_windows(texts), page_finish_reason(reasons), refusal

    def answer_so_far(self, texts: list[str], anchors: list[str]) -> str:
        """The answer so far from each window's decoded text so far, for streaming: a question read in one
        window, without a reference still being written; nothing for a page read in several windows (its
        answer is chosen once all have finished) or for a schema's JSON (checked whole)."""
        if self.fields is not None or len(texts) > 1:
            return ""
        anchor = anchors[0] if anchors else None
        if self.caption:
            return caption_text(without_open_reference(texts[0]) if anchor else texts[0], anchor)
        return answer_text(without_open_reference(texts[0]) if anchor else texts[0], anchor, self.question)


def checked_question(value: Any, name: str) -> str:
    """A Reader question (`X-Question` or the body's `question`), checked as `jocr ask` checks one; 400 with
    its one-line error."""
    try:
        return check_question(value)
    except AskError as exc:
        raise ApiError(400, f"{name}: {exc}", param=name) from None


def header_question(request: Request) -> str | None:
    """The `X-Question` header, percent-decoded (a header is Latin-1, so other text comes percent-encoded
    UTF-8); None when absent. An empty header is an empty question (400)."""
    raw = request.headers.get("x-question")
    if raw is None:
        return None
    if len(raw) > 3 * MAX_QUESTION_BYTES:  # percent-encoded, every byte at most 3 characters
        raise ApiError(
            400, f"X-Question: the question is over {MAX_QUESTION_BYTES:,} bytes", param="X-Question"
        )
    try:
        text = urllib.parse.unquote(raw, errors="strict") if "%" in raw else raw
    except UnicodeDecodeError:
        raise ApiError(400, "X-Question: not percent-encoded UTF-8", param="X-Question") from None
    return checked_question(text, "X-Question")


def answer_response(answer: Answer, as_json: bool, url: str, title: str) -> Response:
    """A Reader question's answer: plain text (`X-Answer-Page`: the page it came from), or with `Accept:
    application/json` `{url, title, question, answer, page, box, pages}`."""
    if as_json:
        body = answer.to_dict()
        body.pop("source", None)
        body.pop("error", None)
        return JSONResponse({"url": url, "title": title, **body})
    headers = {"X-Pages": str(len(answer.pages))}
    if answer.page is not None:
        headers["X-Answer-Page"] = str(answer.page)
    return PlainTextResponse(answer.answer, media_type="text/plain; charset=utf-8", headers=headers)
