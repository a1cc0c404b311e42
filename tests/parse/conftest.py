"""Shared fixtures for the pipeline and CLI tests: PDF writers from tests/documents and a scripted engine."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "documents"))
