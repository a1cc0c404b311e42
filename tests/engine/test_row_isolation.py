"""One row's own error fails that request alone: the batch drops the row and the other rows decode on."""

from __future__ import annotations

import pytest
import torch
from engine_models import random_prompt

from jocr.engine import Engine, EngineConfig, GenerationRequest, Scheduler
from jocr.engine.batch import Row, sample_token

NAN_ERROR = "probability tensor contains either `inf`, `nan` or element < 0"  # torch.multinomial's message


def _good(n: int) -> list[GenerationRequest]:
    g = torch.Generator().manual_seed(3)
    return [
        GenerationRequest(prompt_ids=random_prompt(g), max_tokens=12, request_id=f"good{i}") for i in range(n)
    ]


def _bad(where: str, max_tokens: int = 12) -> GenerationRequest:
    """A greedy row that fails committing, or a sampled row that fails sampling (engine/verify.py)."""
    kind = {"spec": False} if where == "commit" else {"temperature": 0.7}
    return GenerationRequest(prompt_ids=[20, 21, 22], max_tokens=max_tokens, request_id="bad", **kind)


@pytest.fixture
def failing_row(monkeypatch):
    """Rows whose request_id starts with "bad" raise choosing or committing their third token (mid-decode,
    not at prefill), as a NaN distribution raised in torch.multinomial did."""
    real_push, real_choose = Row.push, Row.choose

    def bad(row) -> bool:
        return (row.req.request_id or "").startswith("bad") and len(row.out) >= 2

    def push(self, token):
        if bad(self) and self.generator is None:
            raise RuntimeError(NAN_ERROR)
        return real_push(self, token)

    def choose(self, logits):
        if bad(self) and self.generator is not None:
            raise RuntimeError(NAN_ERROR)
        return real_choose(self, logits)

    monkeypatch.setattr(Row, "push", push)
    monkeypatch.setattr(Row, "choose", choose)


@pytest.mark.parametrize("where", ["commit", "sample"])
@pytest.mark.parametrize("drafter", ["none", "mtp"])
def test_failing_row_among_good_ones_generate(cycle_model, failing_row, drafter, where):
    good = _good(5)
    config = EngineConfig(
        drafter=drafter, num_draft_tokens=2 if drafter == "mtp" else "auto", max_batch_size=8
    )
    expected = Engine(cycle_model, config).generate(good)
    mixed = good[:2] + [_bad(where)] + good[2:]
    results = Engine(cycle_model, config).generate(mixed)
    assert results[2].finish_reason == "error"
    assert "nan" in str(results[2].error)
    assert len(results[2].token_ids) == 2  # the tokens before the failure, none after
    others = results[:2] + results[3:]
    assert [r.token_ids for r in others] == [r.token_ids for r in expected]
    assert [r.finish_reason for r in others] == [r.finish_reason for r in expected]


@pytest.mark.parametrize("where", ["commit", "sample"])
def test_failing_row_fails_its_handle_alone(cycle_model, failing_row, where):
    good = _good(6)
    expected = Engine(cycle_model, EngineConfig(drafter="none")).generate(good)
    engine = Engine(cycle_model, EngineConfig(drafter="none", max_batch_size=8))
    with Scheduler(engine, start=False) as scheduler:
        handles = [scheduler.submit(r) for r in good[:3]]
        bad = scheduler.submit(_bad(where))
        handles += [scheduler.submit(r) for r in good[3:]]
        scheduler._thread.start()  # all seven join the same batch
        with pytest.raises(RuntimeError, match="nan"):
            bad.result(timeout=60)
        got = [h.result(timeout=60) for h in handles]
        # The scheduler goes on serving after the failure.
        again = scheduler.submit(good[0]).result(timeout=60)
    assert [r.token_ids for r in got] == [r.token_ids for r in expected]
    assert again.token_ids == expected[0].token_ids


def test_seed_the_generator_refuses_fails_its_row_alone(cycle_model):
    """A seed past the generator's range (were validation bypassed) is that row's failure, not the batch's."""
    engine = Engine(cycle_model, EngineConfig(drafter="none"))
    good = _good(2)
    bad = GenerationRequest(prompt_ids=[20, 21], max_tokens=5, temperature=0.7, seed=2**64)
    batch = engine.new_batch()
    events = batch.admit([(0, good[0]), (1, bad), (2, good[1])])
    assert {row.index for row, _ in events} == {0, 2}
    failed = [r for r in batch.pop_finished() if r.index == 1]
    assert failed and failed[0].result().finish_reason == "error"
    assert "Overflow" in type(failed[0].error).__name__ + str(failed[0].error)
    while batch.rows:
        batch.step()
    assert {r.index for r in batch.pop_finished()} == {0, 2}


def test_sampling_never_produces_nan_at_the_range_edges():
    logits = torch.randn(64) * 40  # (V,)
    logits[3] = float("-inf")  # a banned token
    g = torch.Generator().manual_seed(0)
    for temperature in (1e-3, 1e-30, 100.0):
        for top_p in (1e-6, 1e-30, 1.0):
            token = sample_token(logits, temperature, top_p, g)
            assert token != 3
    assert sample_token(logits, 1e-3, 1.0, g) == int(logits.argmax())
