"""Shaping a request's output in the batch (jocr.engine.batch): a first token that may not be chosen, a stop
rule over the decoded text, and the chosen tokens' log-probabilities, each equal to the naive oracle's with
and without drafting."""

from __future__ import annotations

import math

import pytest
import torch
from engine_models import random_prompt

from jocr.engine import Engine, EngineConfig, GenerationRequest, naive_generate
from jocr.tokenizer import Tokenizer

CONFIGS = [dict(drafter="none"), dict(drafter="mtp", num_draft_tokens=3, max_batch_size=3)]


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.byte_level()


def _prompts(seed: int, count: int = 4) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [random_prompt(g) for _ in range(count)]


def _same(engine_results, refs) -> None:
    for res, ref in zip(engine_results, refs):
        assert (res.token_ids, res.finish_reason) == (ref.token_ids, ref.finish_reason)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_a_banned_first_token_is_never_chosen_first(cycle_model, tok, cfg):
    prompts = _prompts(1)
    free = [naive_generate(cycle_model, GenerationRequest(p, max_tokens=8)) for p in prompts]
    requests = [
        GenerationRequest(p, max_tokens=8, first_banned_ids=frozenset({f.token_ids[0]}))
        for p, f in zip(prompts, free)
    ]
    refs = [naive_generate(cycle_model, r, tokenizer=tok) for r in requests]
    for ref, f in zip(refs, free):
        assert ref.token_ids[0] != f.token_ids[0]  # the ban changed the oracle's first token
    _same(Engine(cycle_model, EngineConfig(**cfg), tokenizer=tok).generate(requests), refs)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_a_stop_rule_ends_the_output_where_it_first_holds(cycle_model, tok, cfg):
    prompts = _prompts(2)
    free = [naive_generate(cycle_model, GenerationRequest(p, max_tokens=20)) for p in prompts]

    def rule(text: str) -> bool:
        return len(text.encode("utf-8")) >= 5

    requests = [GenerationRequest(p, max_tokens=20, stop_when=rule) for p in prompts]
    refs = [naive_generate(cycle_model, r, tokenizer=tok) for r in requests]
    for ref, f in zip(refs, free):
        assert ref.finish_reason == "stop" and len(ref.token_ids) < len(f.token_ids)
        assert ref.token_ids == f.token_ids[: len(ref.token_ids)]
    _same(Engine(cycle_model, EngineConfig(**cfg), tokenizer=tok).generate(requests), refs)


def test_a_stop_rule_needs_a_tokenizer(cycle_model):
    with pytest.raises(ValueError, match="tokenizer"):
        Engine(cycle_model, EngineConfig()).check(GenerationRequest([20, 21], stop_when=lambda t: True))


@pytest.mark.parametrize("cfg", CONFIGS)
def test_logprobs_are_the_chosen_tokens_and_the_stop_token(cycle_model, tok, cfg):
    prompts = _prompts(3)
    free = [naive_generate(cycle_model, GenerationRequest(p, max_tokens=12)) for p in prompts]
    # the 4th token of each output made a stop id: the 4th choice (the stop) is scored too
    requests = [
        GenerationRequest(p, max_tokens=12, stop_token_ids=(f.token_ids[3],), logprobs=True)
        for p, f in zip(prompts, free)
    ]
    refs = [naive_generate(cycle_model, r, tokenizer=tok) for r in requests]
    results = Engine(cycle_model, EngineConfig(**cfg), tokenizer=tok).generate(requests)
    _same(results, refs)
    for res, ref in zip(results, refs):
        assert len(res.logprobs) == len(res.token_ids) + 1 == 4
        assert all(v <= 0 for v in res.logprobs)
        assert res.logprobs == pytest.approx(ref.logprobs, abs=1e-4)
        assert math.isclose(res.mean_logprob(), sum(res.logprobs) / 4)
    plain = Engine(cycle_model, EngineConfig(**cfg), tokenizer=tok).generate([GenerationRequest(prompts[0])])
    assert plain[0].logprobs is None and plain[0].mean_logprob() is None
