#!/usr/bin/env bash
# Sets up and runs the whole test suite (the README's second command; .ci/run calls exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/python -m pytest -x --timeout=600 tests
