"""Shared fixtures for the pipeline and CLI tests: PDF writers from tests/documents, a scripted engine
(fake_engine.py) and `parse_cli`, which runs `jocr parse` in-process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from jocr.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "documents"))


@pytest.fixture
def parse_cli(capsys):
    """`parse_cli(args, max_tokens=6)` runs `jocr parse -q --max-tokens N *args` -> (exit code, stderr)."""

    def run(args: list[str], max_tokens: int = 6) -> tuple[int, str]:
        code = main(["parse", "-q", "--max-tokens", str(max_tokens), *args])
        return code, capsys.readouterr().err

    return run
