"""Fixtures for the batch tests (the tiny checkpoint `model_dir` is tests/conftest.py's): PDF writers from
tests/documents, and one local
Ray instance (2 CPUs) shared by the tests of a module, because starting Ray costs seconds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "documents"))


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")  # the test extra installs it: a skip here is a broken setup
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=300 * 1024 * 1024,
        logging_level="WARNING",
    )
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()
