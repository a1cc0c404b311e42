"""DecodeBatch (jocr.engine.batch): a page shared by requests admitted apart is encoded once, with unchanged
tokens; and shaping a request's output in the batch: a first token that may not be chosen, a stop rule over
the decoded text, and the chosen tokens' log-probabilities, each equal to the naive oracle's with and
without drafting."""

from __future__ import annotations

import gc
import math

import pytest
import torch
from engine_models import IMAGE_ID, RefTokens, random_prompt

from jocr.engine import Engine, EngineConfig, GenerationRequest, naive_generate
from jocr.engine.batch import DecodeBatch
from jocr.model import kernels
from jocr.tokenizer import Tokenizer
from jocr.types import PageViews


def _page(cfg, seed: int) -> PageViews:
    size = cfg.vision.base_size
    g = torch.Generator().manual_seed(seed)
    return PageViews(torch.rand(3, size, size, generator=g) * 2 - 1, None, (1, 1))


def _windows(cfg, page: PageViews, count: int, seed: int) -> list[GenerationRequest]:
    """`count` requests on one page, each longer than kernels.QUERY_MAX (so each is prefilled alone), as
    the windows of a long anchored page are."""
    g = torch.Generator().manual_seed(seed)
    image = [IMAGE_ID] * cfg.image_token_count()
    out = []
    for _ in range(count):
        text = random_prompt(g, kernels.QUERY_MAX + 2, kernels.QUERY_MAX + 20)
        out.append(GenerationRequest(prompt_ids=[0, *image, *text], images=[page], max_tokens=10))
    return out


def _counting(monkeypatch, model) -> list[int]:
    """Record how many pages each `model.encode_images` call encodes."""
    calls: list[int] = []
    encode = model.encode_images

    def counted(pages):
        calls.append(len(pages))
        return encode(pages)

    monkeypatch.setattr(model, "encode_images", counted)
    return calls


def test_page_shared_by_requests_admitted_apart_is_encoded_once(cycle_model, monkeypatch):
    cfg = cycle_model.config
    page = _page(cfg, 1)
    requests = _windows(cfg, page, 3, seed=2)
    refs = [naive_generate(cycle_model, r) for r in requests]
    calls = _counting(monkeypatch, cycle_model)
    for drafter, k in (("none", 0), ("mtp+refs", 3)):
        calls.clear()
        # One row at a time: every request is admitted on its own, after the one before it finished.
        engine = Engine(
            cycle_model,
            EngineConfig(drafter=drafter, num_draft_tokens=k, max_batch_size=1),
            tokenizer=RefTokens(),
        )
        results = engine.generate(requests)
        assert [r.token_ids for r in results] == [r.token_ids for r in refs], drafter
        assert calls == [1], drafter


def test_equal_pixels_in_another_page_object_are_encoded_again(cycle_model, monkeypatch):
    """Pages are remembered by object, never by value, and forgotten once the page object is gone."""
    cfg = cycle_model.config
    first, second = _page(cfg, 5), _page(cfg, 5)
    calls = _counting(monkeypatch, cycle_model)
    engine = Engine(cycle_model, EngineConfig(drafter="none", max_batch_size=1), tokenizer=RefTokens())
    batch = DecodeBatch(engine)
    for request in _windows(cfg, first, 1, seed=6) + _windows(cfg, second, 1, seed=7):
        batch.admit([(0, request)])
        batch.rows.clear()
    assert calls == [1, 1]
    del first, second, request
    gc.collect()
    batch.admit([(0, _windows(cfg, _page(cfg, 8), 1, seed=9)[0])])
    assert len(batch._pages) == 1  # the two dropped pages' entries are pruned


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
