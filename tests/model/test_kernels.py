"""The decode kernels' build (jocr.model.kernels.available / unavailable_reason): a missing source or a
failing compiler leaves torch's products in use and says why, instead of failing or staying silent."""

from __future__ import annotations

import shutil

import pytest

from jocr.model import kernels


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """The module as before its first `available()`, building into an empty cache."""
    monkeypatch.setattr(kernels, "_lib", None)
    monkeypatch.setattr(kernels, "_tried", False)
    monkeypatch.setattr(kernels, "_reason", None)
    monkeypatch.setenv("JOCR_KERNEL_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("JOCR_KERNELS", raising=False)
    monkeypatch.setattr(kernels, "_cpu_supports", lambda: True)
    return tmp_path


def test_turned_off_says_so(fresh, monkeypatch):
    monkeypatch.setenv("JOCR_KERNELS", "0")
    assert not kernels.available()
    assert kernels.unavailable_reason() == "turned off (JOCR_KERNELS=0)"


def test_a_missing_source_says_which_file(fresh, monkeypatch):
    monkeypatch.setattr(kernels, "SOURCE", fresh / "linear.c")
    assert not kernels.available()
    reason = kernels.unavailable_reason()
    assert reason.startswith(f"cannot build {fresh / 'linear.c'}") and "\n" not in reason


def test_a_compiler_error_is_one_line(fresh, monkeypatch):
    broken = fresh / "linear.c"
    broken.write_text("this is not C\n")
    monkeypatch.setattr(kernels, "SOURCE", broken)
    monkeypatch.setenv("CC", "cc")
    assert not kernels.available()
    reason = kernels.unavailable_reason()
    assert reason.startswith(f"cannot build {broken}: ") and "\n" not in reason
    if shutil.which("cc"):
        assert "cc failed on linear.c" in reason


def test_the_shipped_source_is_beside_the_module():
    assert kernels.SOURCE.is_file() and kernels.SOURCE.parent.name == "kernels"
    if kernels.available():
        assert kernels.unavailable_reason() is None
