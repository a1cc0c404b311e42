"""Scheduler: concurrent submits from threads, streaming, results equal to batch generate, bounded queue."""

from __future__ import annotations

import threading

import pytest
import torch
from engine_models import random_prompt

from jocr.engine import Engine, EngineConfig, GenerationRequest, QueueFull, Scheduler


def _requests(n: int, seed: int = 0) -> list[GenerationRequest]:
    g = torch.Generator().manual_seed(seed)
    return [
        GenerationRequest(
            prompt_ids=random_prompt(g), max_tokens=int(torch.randint(4, 20, (1,), generator=g))
        )
        for _ in range(n)
    ]


def test_concurrent_submits_stream_and_match_generate(cycle_model):
    requests = _requests(10)
    expected = Engine(cycle_model, EngineConfig(drafter="mtp", num_draft_tokens=2)).generate(requests)
    engine = Engine(cycle_model, EngineConfig(drafter="mtp", num_draft_tokens=2, max_batch_size=4))
    streamed: dict[int, list[int]] = {}
    results = {}
    with Scheduler(engine, max_queue=64) as scheduler:

        def client(i: int) -> None:
            handle = scheduler.submit(requests[i])
            chunks = [t for chunk in handle for t in chunk]
            streamed[i] = chunks
            results[i] = handle.result(timeout=60)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(requests))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    for i, want in enumerate(expected):
        assert results[i].token_ids == want.token_ids
        assert streamed[i] == want.token_ids
        assert results[i].finish_reason == want.finish_reason
    assert engine.stats.requests == len(requests)


def test_queue_full_and_bad_request(cycle_model):
    engine = Engine(cycle_model, EngineConfig(drafter="none", max_batch_size=1))
    scheduler = Scheduler(engine, max_queue=2, start=False)  # loop not started: nothing leaves the queue
    scheduler.submit(GenerationRequest(prompt_ids=[20], max_tokens=3))
    scheduler.submit(GenerationRequest(prompt_ids=[21], max_tokens=3))
    with pytest.raises(QueueFull, match="queue full"):
        scheduler.submit(GenerationRequest(prompt_ids=[22], max_tokens=3))
    with pytest.raises(ValueError, match="empty prompt"):
        scheduler.submit(GenerationRequest(prompt_ids=[], max_tokens=3))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        scheduler.submit(GenerationRequest(prompt_ids=[10**6], max_tokens=3))
    with pytest.raises(ValueError, match="placeholders"):  # <image> ids without images
        scheduler.submit(GenerationRequest(prompt_ids=[0, 3, 3, 20], max_tokens=3))


def test_cancel_frees_the_row(cycle_model):
    engine = Engine(cycle_model, EngineConfig(drafter="none", max_batch_size=1))
    with Scheduler(engine) as scheduler:
        long = scheduler.submit(GenerationRequest(prompt_ids=[20, 21], max_tokens=100000 // 100))
        waiting = scheduler.submit(GenerationRequest(prompt_ids=[22, 23], max_tokens=5))
        first = next(iter(long))
        assert first
        long.cancel()
        assert long.result(timeout=60).finish_reason == "cancelled"
        assert waiting.result(timeout=60).finish_reason in ("length", "stop", "repetition")


def test_sampling_is_seeded_and_unaffected_by_speculation(cycle_model):
    g = torch.Generator().manual_seed(9)
    prompt = random_prompt(g)
    reqs = [
        GenerationRequest(prompt_ids=prompt, max_tokens=16, temperature=1.5, top_p=0.9, seed=s)
        for s in (1, 1, 2)
    ]
    plain = Engine(cycle_model, EngineConfig(drafter="none")).generate(reqs)
    spec = Engine(cycle_model, EngineConfig(drafter="mtp", num_draft_tokens=3)).generate(reqs)
    assert plain[0].token_ids == plain[1].token_ids  # same seed, same sample
    assert plain[0].token_ids != plain[2].token_ids
    assert [r.token_ids for r in spec] == [r.token_ids for r in plain]
    # top_p small enough keeps only the argmax: sampling equals greedy.
    greedy = Engine(cycle_model, EngineConfig(drafter="none")).generate(
        [GenerationRequest(prompt, max_tokens=16)]
    )
    narrow = GenerationRequest(prompt_ids=prompt, max_tokens=16, temperature=1.0, top_p=1e-6, seed=3)
    assert Engine(cycle_model).generate([narrow])[0].token_ids == greedy[0].token_ids
