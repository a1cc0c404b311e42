"""Decoding an answer that stays an answer (jocr.pipeline.ask_decoding): the first token's bans by answer
kind, the stop rules, the window choice by evidence, and `jocr.ask` end to end with a tiny real model that
"reads the page" (`# @1\\n@1 ...`) when left to itself."""

from __future__ import annotations

import pytest
import torch
from layer_fixtures import PROSE, plain_pdf

from jocr.config import OCRConfig
from jocr.documents.pages import open_source
from jocr.engine.requests import GenerationResult
from jocr.engine.stats import RequestStats
from jocr.lines.anchor import ANCHOR_VERSION
from jocr.model import OCRModel
from jocr.pipeline import ask, extract, load_model
from jocr.pipeline.ask import AskConfig, question_anchor
from jocr.pipeline.ask_decoding import (
    ANSWER_TOKENS,
    WindowAnswer,
    choose_window,
    closes_json_object,
    fields_shape,
    fields_tokens,
    question_shape,
)
from jocr.tokenizer import Tokenizer

QUESTION = "What is the first sentence?"


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.byte_level()


def _allowed_first(tok: Tokenizer, shape) -> set[str]:
    return {tok.decode([i], skip_special_tokens=False) for i in range(tok.vocab_size)} - {
        tok.decode([i], skip_special_tokens=False) for i in shape.first_banned_ids
    }


def test_an_answer_may_be_typed_or_a_reference_but_not_markup(tok):
    shape = question_shape(tok)
    allowed = _allowed_first(tok, shape)
    assert {"A", "z", "$", "1", "@", "("} <= allowed
    assert not allowed & {"#", "|", "<", ">", "!", "`", "*", "\n", " ", "<td>", "", "{"}
    assert tok.eos_id in shape.first_banned_ids
    # the first byte of a CJK character may begin an answer
    assert tok.encode("合")[0] not in shape.first_banned_ids
    assert shape.stop_strings == ("\n",) and shape.max_tokens == ANSWER_TOKENS
    assert question_shape(tok, max_tokens=5).max_tokens == 5


def test_an_extraction_answer_is_one_json_object(tok):
    shape = fields_shape(tok, ["total", "date"])
    assert _allowed_first(tok, shape) == {"{"}
    assert shape.max_tokens == fields_tokens(tok, ["total", "date"]) == len('{"total":null,"date":null}') + 96
    options = shape.options()
    assert options["stop_when"] is closes_json_object and options["logprobs"] and not options["stop_strings"]
    assert closes_json_object('{"a":"@3","b":null}')
    assert closes_json_object('{"a":"x} {y","b":"\\"}"} and then page text')
    assert not closes_json_object('{"a":"@3","b":"}')
    assert not closes_json_object('{"a":{"b":1}') and not closes_json_object("no object")


ANCHOR = "page 612x792\n@1 72,60 Store: Orion\n@2 72,80 Total: $5.00"


def test_window_choice_by_evidence_then_the_models_score():
    cut = WindowAnswer("Orion", "@1 @1 @1 @1", ANCHOR, "length", -0.1)
    unknown = WindowAnswer("x", "@7", ANCHOR, "stop", -0.05)  # names a run its window lacks
    answered = WindowAnswer("$5.00", "@2", ANCHOR, "stop", -0.9)
    assert choose_window([cut, unknown, answered]) == 2  # the first window no longer wins by default
    sure = WindowAnswer("Orion", "@1", ANCHOR, "stop", -0.2)
    assert choose_window([answered, sure]) == 1  # both whole: the higher mean log-probability
    typed = WindowAnswer("3", "3", ANCHOR, "stop", -0.3)
    assert choose_window([cut, typed]) == 1  # a typed answer names no run: whole when it ended itself
    # without scores (an engine that gives none): the first whole answer; nothing answered: window 0
    assert choose_window([WindowAnswer("a", "@1", ANCHOR), WindowAnswer("b", "@2", ANCHOR)]) == 0
    assert choose_window([WindowAnswer("", ""), WindowAnswer("", "")]) == 0
    assert choose_window([WindowAnswer("", ""), cut]) == 1


# A tiny real model that reads the page instead of answering ------------------------------------------------
def _bigram_model(
    tok: Tokenizer, chain: dict[str, str], second: tuple[str, str], anchor_tokens: int
) -> OCRModel:
    """A tiny model whose greedy next token depends on the current token alone: `chain` maps a token's text
    to the next one's; `second` = (token, next) makes `next` the runner-up after `token`. Attention and
    MLP outputs are zeroed, so the last hidden state is the current token's embedding."""
    config = OCRConfig.preset("tiny")
    config.anchor.version = ANCHOR_VERSION
    config.anchor.max_tokens = anchor_tokens
    model = OCRModel(config).init_weights(seed=5).eval()
    vocab, width = config.decoder.vocab_size, config.decoder.hidden_size
    g = torch.Generator().manual_seed(6)
    with torch.no_grad():
        emb = torch.randn(vocab, width, generator=g)
        emb = emb / emb.norm(dim=-1, keepdim=True) * width**0.5
        model.model.embed_tokens.weight.copy_(emb)
        head = torch.zeros(vocab, width)
        for current, following in chain.items():
            head[tok.encode(following)[0]] += 0.5 * emb[tok.encode(current)[0]]
        head[tok.encode(second[1])[0]] += 0.3 * emb[tok.encode(second[0])[0]]
        model.lm_head.weight.copy_(head)
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            for name, p in layer.mlp.named_parameters():
                if "down_proj" in name:
                    p.zero_()
    return model


# The prompt ends with ANCHOR_CLOSE ("...>"); left to itself the model writes "# @1\n@1\n@1 ...".
READER_CHAIN = {">": "#", "#": " ", " ": "@", "@": "1", "1": "\n", "\n": "@"}


@pytest.fixture(scope="module")
def reader_dir(tmp_path_factory, tok):
    directory = tmp_path_factory.mktemp("page-reader")
    _bigram_model(tok, READER_CHAIN, (">", "@"), 2048).save_pretrained(directory)
    tok.save(directory / "tokenizer.json")
    return directory


def test_a_page_reading_model_gives_an_answer_not_the_page(reader_dir):
    loaded = load_model(reader_dir, cache=False)
    answer = ask(plain_pdf(), QUESTION, model=loaded, spec=0)
    page = answer.pages[0]
    # the first token cannot be "#": the runner-up "@" begins the answer; the line break ends it
    assert page.anchored and page.raw == "@1\n" and page.finish_reason == "stop"
    assert answer.answer == PROSE[0] and answer.box is not None
    # an explicit budget still caps it, and the rule holds with drafting on
    assert ask(plain_pdf(), QUESTION, model=loaded, spec=2).answer == PROSE[0]
    assert ask(plain_pdf(), QUESTION, model=loaded, max_tokens=1).pages[0].raw == "@"


class _Recorder:
    """The real engine, its results kept."""

    def __init__(self, engine, results: list):
        self.engine, self.results = engine, results

    def check(self, request) -> None:
        self.engine.check(request)

    def generate(self, requests):
        self.results += self.engine.generate(requests)
        return self.results[-len(requests) :]


def test_an_extraction_answer_begins_with_its_object_and_ends_with_it(tmp_path, tok):
    # left to itself the model writes `#{}` and then page text (`\n@1\n@1 ...`)
    chain = {">": "#", "#": "{", "{": "}", "}": "\n", "\n": "@", "@": "1", "1": "\n"}
    _bigram_model(tok, chain, (">", "{"), 2048).save_pretrained(tmp_path)
    tok.save(tmp_path / "tokenizer.json")
    loaded = load_model(tmp_path, cache=False)
    engine, results = loaded.engine, []
    loaded.engine = lambda spec="auto", batch_size=8: _Recorder(engine(spec, batch_size), results)
    assert extract(plain_pdf(), ["a"], model=loaded, spec=0).values == {"a": None}
    assert tok.decode(results[0].token_ids) == "{}" and results[0].finish_reason == "stop"


class _Windows:
    """Answers each window's request with its own text and score (by the anchor's first run)."""

    def __init__(self, tokenizer, by_first_run: dict[str, tuple[str, str, float]]):
        self.tokenizer, self.by_first_run = tokenizer, by_first_run

    def check(self, request) -> None:
        pass

    def generate(self, requests):
        out = []
        for r in requests:
            prompt = self.tokenizer.decode(r.prompt_ids)
            text, reason, score = next(v for k, v in self.by_first_run.items() if k in prompt)
            ids = self.tokenizer.encode(text)
            out.append(GenerationResult(ids, reason, RequestStats(), logprobs=[score] * (len(ids) + 1)))
        return out


def test_a_page_in_several_windows_gives_the_answer_with_evidence(tmp_path, tok):
    _bigram_model(tok, READER_CHAIN, (">", "@"), 100).save_pretrained(tmp_path)
    tok.save(tmp_path / "tokenizer.json")
    loaded = load_model(tmp_path, cache=False)
    with open_source(plain_pdf()) as source:
        decision, _ = question_anchor(source, 0, source.render(0), loaded, AskConfig(ocr="none"))
    assert [w.first for w in decision.windows] == [1, 2, 3]  # one line per window, each run numbered @1
    # window 1 reads the page to its cap, window 3 names a run it lacks: window 2's answer is the page's,
    # though the model's score is lower for it (evidence first)
    engine = _Windows(
        tok,
        {
            PROSE[0][:20]: ("@1 @2 @1 @2", "length", -0.01),
            PROSE[1][:20]: ("@1", "stop", -2.0),
            PROSE[2][:20]: ("@5", "stop", -0.5),
        },
    )
    loaded.engine = lambda spec="auto", batch_size=8: engine
    answer = ask(plain_pdf(), QUESTION, model=loaded)
    assert answer.answer == PROSE[1] and answer.pages[0].raw == "@1"
    # the page's box is window 2's run: the page's second line
    with open_source(plain_pdf()) as source:
        _, lines = question_anchor(source, 0, source.render(0), loaded, AskConfig(ocr="none"))
    assert answer.box[1] > 0 and lines.lines[1].text == PROSE[1]
