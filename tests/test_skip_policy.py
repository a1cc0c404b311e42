"""The suite's skip rule (tests/conftest.py) on a throwaway test directory, run in a fresh pytest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).parent / "conftest.py"


def _run(tmp_path, body: str) -> subprocess.CompletedProcess:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_case.py").write_text("import pytest\n\n" + body)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    vllm: v\n    gpu: g\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_an_unmarked_skip_fails(tmp_path):
    run = _run(tmp_path, "def test_x():\n    pytest.skip('no data here')\n")
    assert run.returncode == 1 and "skipped without a vllm or gpu marker: no data here" in run.stdout


def test_a_module_level_skip_fails(tmp_path):
    run = _run(tmp_path, "pytest.importorskip('no_such_module_here')\n\ndef test_x():\n    pass\n")
    assert run.returncode != 0 and "skipped at collection" in run.stdout


def test_vllm_and_gpu_marked_skips_pass(tmp_path):
    body = (
        "@pytest.mark.vllm\ndef test_v():\n    pytest.skip('no vllm')\n\n"
        "@pytest.mark.gpu\n@pytest.mark.skipif(True, reason='no gpu')\ndef test_g():\n    pass\n"
    )
    run = _run(tmp_path, body)
    assert run.returncode == 0 and "2 skipped" in run.stdout
