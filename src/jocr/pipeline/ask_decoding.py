"""How an asked page's answer is decoded so that it stays an answer, and which window's answer a page gives
(docs/asking.md, "Decoding an answer").

What an answer looks like comes from the training targets (`jocr.train.docqa_data.docqa_examples` on the
synthetic train documents, `jocr synth --profile docqa` and `--profile docqa-prose`, `--split train`;
counted in docs/results/2026-12-06-ask.md and 2026-12-06-ask-prose.md): a question's target is one line, a
run reference list (`@i`, up to MAX_ANSWER_RUNS runs) or a short typed value (a count, or a span inside a
sentence as the anchor prints it), never page markup; an extraction target is one compact JSON object and
nothing after it. So:

- the first token of a question's answer may not be empty, begin with whitespace, with block markup (`#`,
  `|`, `<`, `>`, `!`, a backtick, `*`) or with `{` (an extraction's answer, not a question's);
- a question's answer ends at the end of its first line (stop string "\\n") and within ANSWER_TOKENS;
- an extraction answer begins with `{` and ends where that JSON object closes (`closes_json_object`),
  within an answer's budget per field (`fields_tokens`).

A page read in several anchor windows is asked once per window; `choose_window` takes the answer with the
most evidence: one that finished on its own (EOS or the end of its line, not cut by the token cap or the
repetition guard) and names only runs its window's anchor holds, then the model's own mean log-probability
of its tokens.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from jocr.pipeline.ask_answers import known_runs

# Output tokens of a question's answer: the longest training answer typed (40 tokens with EOS with the
# bundled tokenizer: a licence's name in a prose document) and four references to 4-digit runs
# (`@1234 @1235 @1236 @1237`: 23) fit.
ANSWER_TOKENS = 48
ANSWER_STOP = "\n"  # no training answer holds a line break: the first line is the answer
# Output tokens of a figure caption by default: the reference captions of the chart training documents
# (`jocr.synth.charts`) are one line of one or two sentences.
CAPTION_TOKENS = 64
_MARKUP = ("#", "|", "<", ">", "!", "`", "*")


@dataclass(frozen=True)
class AnswerShape:
    """Decoding settings of one answer request (GenerationRequest keyword arguments, `options`)."""

    first_banned_ids: frozenset[int]
    max_tokens: int
    stop_strings: tuple[str, ...] = ()
    json_object: bool = False  # stop where the first JSON object closes

    def options(self) -> dict:
        return {
            "first_banned_ids": self.first_banned_ids,
            "max_tokens": self.max_tokens,
            "stop_strings": self.stop_strings,
            "stop_when": closes_json_object if self.json_object else None,
            "logprobs": True,
        }


def question_shape(tokenizer, max_tokens: int | None = None) -> AnswerShape:
    """A question's answer: one line, ANSWER_TOKENS (or `max_tokens`) at most, its first token as the module
    docstring says (the same with an anchor or on the image alone)."""
    return AnswerShape(_banned_first(tokenizer, "answer"), max_tokens or ANSWER_TOKENS, (ANSWER_STOP,))


def caption_shape(tokenizer, max_tokens: int | None = None) -> AnswerShape:
    """A figure caption (`jocr.pipeline.caption`): one line of text, CAPTION_TOKENS (or `max_tokens`) at
    most, its first token that of a question's answer (not EOS, whitespace, block markup or `{`), with or
    without an anchor: a caption's training target is its sentences, never run references alone."""
    return AnswerShape(_banned_first(tokenizer, "answer"), max_tokens or CAPTION_TOKENS, (ANSWER_STOP,))


def fields_shape(tokenizer, names: Sequence[str], max_tokens: int | None = None) -> AnswerShape:
    """An extraction answer: a JSON object, from its `{` to where it closes, `fields_tokens` (or
    `max_tokens`) at most."""
    cap = max_tokens or fields_tokens(tokenizer, names)
    return AnswerShape(_banned_first(tokenizer, "json"), cap, (), json_object=True)


def fields_tokens(tokenizer, names: Sequence[str]) -> int:
    """An extraction answer's budget: the fields' names as compact JSON plus ANSWER_TOKENS per value."""
    skeleton = json.dumps(dict.fromkeys(names), ensure_ascii=False, separators=(",", ":"))
    return len(tokenizer.encode(skeleton)) + ANSWER_TOKENS * len(names)


@cache
def _banned_first(tokenizer, kind: str) -> frozenset[int]:
    """Token ids that may not begin an answer of `kind` ("answer": a question's, "json": an extraction's),
    by each token's decoded text (special tokens included: EOS decodes to nothing, `<td>`
    is markup; a byte of a multi-byte character, decoding to U+FFFD alone, may begin a typed answer).
    Computed once per tokenizer and kind."""
    banned = set()
    # One batched call: a published vocabulary has ~129k tokens.
    texts = tokenizer.hf.decode_batch([[i] for i in range(tokenizer.vocab_size)], skip_special_tokens=False)
    for i, text in enumerate(texts):
        if i == tokenizer.eos_id or not text or text[0].isspace():
            ok = False
        elif kind == "json":
            ok = text[0] == "{"
        else:  # a question's answer: neither block markup nor an extraction's JSON object
            ok = not text.startswith((*_MARKUP, "{"))
        if not ok:
            banned.add(i)
    return frozenset(banned)


def closes_json_object(text: str) -> bool:
    """Whether `text` holds a whole JSON object from its first `{`: its braces balance, outside strings
    (escapes honoured)."""
    start = text.find("{")
    if start < 0:
        return False
    depth, in_string, escaped = 0, False, False
    for ch in text[start:]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return True
    return False


@dataclass(frozen=True)
class WindowAnswer:
    """One window's answer as `choose_window` weighs it."""

    answer: str  # read (`answer_text`)
    raw: str  # as the model wrote it
    anchor: str | None = None
    finish_reason: str | None = "stop"
    mean_logprob: float | None = None

    def evidence(self) -> tuple[bool, float]:
        """(finished on its own and names only runs of its anchor, mean log-probability or -inf)."""
        whole = bool(self.answer) and self.finish_reason == "stop" and known_runs(self.raw, self.anchor)
        return whole, -math.inf if self.mean_logprob is None else self.mean_logprob


def choose_window(windows: Sequence[WindowAnswer]) -> int:
    """The index of the window whose answer a page gives (module docstring): the best `evidence`, the first
    among equals; 0 when no window answered."""
    answered = [i for i, w in enumerate(windows) if w.answer]
    if not answered:
        return 0
    return max(answered, key=lambda i: (windows[i].evidence(), -i))
