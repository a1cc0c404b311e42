"""DecodeBatch admission: a page shared by requests admitted apart is encoded once, with unchanged tokens."""

from __future__ import annotations

import gc

import torch
from engine_models import IMAGE_ID, RefTokens, random_prompt

from jocr.engine import Engine, EngineConfig, GenerationRequest, naive_generate
from jocr.engine.batch import DecodeBatch
from jocr.model import kernels
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
