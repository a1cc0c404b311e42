"""Fixtures for the engine tests: tiny real models (built in engine_models.py) and one torch thread."""

from __future__ import annotations

import pytest
import torch
from engine_models import OCRModel, build_cycle_model, build_random_model, build_tied_model


@pytest.fixture(autouse=True)
def single_thread():
    """Tiny models run fastest on one thread, and the test machine's cores are shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def random_model() -> OCRModel:
    return build_random_model(0)


@pytest.fixture(scope="session")
def cycle_model() -> OCRModel:
    return build_cycle_model(0, noise=60.0)


@pytest.fixture(scope="session")
def loop_model() -> OCRModel:
    """Greedy output cycles through 7 tokens: the repetition guard has work to do."""
    return build_cycle_model(2, period=7, noise=10.0)


@pytest.fixture(scope="session")
def tied_model() -> OCRModel:
    """Pairs of nearly tied logits, in the row-invariant float32 format (engine_models.build_tied_model)."""
    return build_tied_model(0)
