"""Where the bundled models are found (jocr.pipeline.model.default_model_dir): $JOCR_MODEL, else inside the
installed package (a wheel), else models/ beside src/ (a source checkout or editable install)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from jocr.pipeline.model import (
    ANCHORED_MEMBER,
    ASK_MEMBER,
    BUNDLED_MODELS,
    MODEL_ENV,
    bundled_model_dir,
    default_model_dir,
)

REPO = Path(__file__).resolve().parents[2]


def _model(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text("{}")
    return directory


def test_a_source_checkout_reads_the_repository_models(monkeypatch):
    monkeypatch.delenv(MODEL_ENV, raising=False)
    assert default_model_dir() == REPO / "models"
    assert (default_model_dir() / "model.safetensors").is_file()


def test_the_environment_variable_wins(monkeypatch, tmp_path):
    monkeypatch.setenv(MODEL_ENV, str(tmp_path))
    assert default_model_dir() == tmp_path


def test_an_installed_wheel_reads_the_models_inside_the_package(tmp_path):
    package = tmp_path / "lib" / "python3.11" / "site-packages" / "jocr"
    package.mkdir(parents=True)
    assert bundled_model_dir(package) == package / BUNDLED_MODELS  # not there: named in the error
    _model(tmp_path / "lib" / "python3.11" / "models")  # what the old parents[3] rule would have read
    assert bundled_model_dir(package) == package / BUNDLED_MODELS
    _model(package / BUNDLED_MODELS)
    assert bundled_model_dir(package) == package / BUNDLED_MODELS


def test_a_checkout_prefers_a_copy_inside_the_package_then_models_beside_src(tmp_path):
    package = tmp_path / "src" / "jocr"
    package.mkdir(parents=True)
    assert bundled_model_dir(package) == tmp_path / "models"  # neither: the checkout's place is named
    _model(tmp_path / "models")
    assert bundled_model_dir(package) == tmp_path / "models"
    _model(package / BUNDLED_MODELS)
    assert bundled_model_dir(package) == package / BUNDLED_MODELS


def test_the_build_step_copies_into_the_place_the_package_looks():
    text = (REPO / "scripts" / "bundle_models.py").read_text()
    assert f'TARGET = ("jocr", "{BUNDLED_MODELS}")' in text


def test_the_wheel_and_the_sdist_carry_every_member(tmp_path):
    """The build step copies the members' folders (anchored/, ask/) with the outer model, over a stale copy;
    the sdist grafts the whole models/ folder, members included."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bundle_models", REPO / "scripts" / "bundle_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    models = tmp_path / "models"
    for member in ("", ANCHORED_MEMBER, ASK_MEMBER):
        _model(models / member if member else models)
        (models / member / "model.safetensors").write_bytes(member.encode() or b"image")
    target = tmp_path / "build" / BUNDLED_MODELS
    _model(target / "stale")
    module.copy_models(models, target)
    copied = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert copied == sorted(str(p.relative_to(models)) for p in models.rglob("*") if p.is_file())
    assert (target / ASK_MEMBER / "model.safetensors").read_bytes() == ASK_MEMBER.encode()
    assert "graft models" in (REPO / "MANIFEST.in").read_text().splitlines()


# What `jocr parse` does before reading a page: import its command, load the bundled models (both members)
# and build the engine; then the compiler stack (torch._dynamo and sympy, about 2-3 CPU-s to import) must
# not have been imported, and the command module alone imports no torch. In a new interpreter, where no
# other test has imported them already.
PARSE_START = """
import sys
import jocr.cli.parse_cmd
assert "torch" not in sys.modules, "jocr.cli.parse_cmd imports torch"
from jocr.pipeline import load_model
loaded = load_model()
assert loaded.anchored is not None
loaded.engine("auto", 8)
loaded.anchored.engine("auto", 8)
print(sorted(m for m in ("torch._dynamo", "sympy") if m in sys.modules))
"""


def test_loading_the_models_to_parse_imports_no_compiler_stack(monkeypatch):
    monkeypatch.delenv(MODEL_ENV, raising=False)
    out = subprocess.run([sys.executable, "-c", PARSE_START], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "[]"


def test_the_bundled_models_are_under_50_mb_with_every_member():
    """The size goal of the bundle (docs/asking.md, "The asking member"): models/ with its image model, its
    anchored member and its int8 asking member, every file counted, under 50 MB (10^6 bytes)."""
    models = REPO / "models"
    for member in ("", ANCHORED_MEMBER, ASK_MEMBER):
        assert (models / member / "model.safetensors").stat().st_size > 1_000_000, member  # not a pointer
    total = sum(path.stat().st_size for path in models.rglob("*") if path.is_file())
    assert total < 50_000_000, total
