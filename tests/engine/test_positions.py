"""A request never decodes past the positions the model was trained for: its output is cut there with
finish reason "length" (engine and oracle alike), and a prompt that fills them is refused."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from engine_models import build_cycle_model, random_prompt

from jocr.engine import Engine, EngineConfig, GenerationRequest, naive_generate


@pytest.fixture(scope="module")
def short_model():
    model = build_cycle_model(0, noise=10.0)
    decoder = dataclasses.replace(model.config.decoder, max_position_embeddings=48)
    model.config = dataclasses.replace(model.config, decoder=decoder)
    return model


@pytest.mark.parametrize("drafter", ["none", "mtp", "mtp+ngram"])
def test_output_stops_at_the_models_last_position(short_model, drafter):
    prompt = random_prompt(torch.Generator().manual_seed(3))
    request = GenerationRequest(prompt_ids=prompt, max_tokens=100)
    engine = Engine(short_model, EngineConfig(drafter=drafter, num_draft_tokens=3))
    (result,) = engine.generate([request])
    ref = naive_generate(short_model, request)
    assert len(prompt) + len(result.token_ids) == 48
    assert (result.token_ids, result.finish_reason) == (ref.token_ids, "length")


def test_a_prompt_that_fills_the_positions_is_refused(short_model):
    engine = Engine(short_model, EngineConfig(drafter="none"))
    with pytest.raises(ValueError, match="fills the model's 48 positions"):
        engine.check(GenerationRequest(prompt_ids=[5] * 48, max_tokens=1))
