"""Model tests use tiny shapes, where one intra-op thread is as fast as two and avoids OpenMP spin-waits on a
loaded machine (measured: 6.5 s instead of 15.9 s CPU time for the decoder tests); the previous thread count
is restored after each test."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _single_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
