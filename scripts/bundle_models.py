"""Build step (pyproject.toml, [tool.setuptools.cmdclass]): puts the repository's bundled models into the
wheel.

The models live at the repository root (`models/`: config.json, model.safetensors, tokenizer.json, the
`anchored/` and `ask/` members and the model card), outside the package, so package-data cannot name them.
This build_py copies them (`copy_models`) to `jocr/bundled_models/` in the build tree, where
`jocr.pipeline.model.default_model_dir` looks first. An editable install skips the copy: it reads `models/`
in place. An sdist carries `models/` (MANIFEST.in) so a wheel built from it has them too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools.command.build_py import build_py

MODELS = Path("models")  # relative to the project root, the build's working directory
TARGET = ("jocr", "bundled_models")  # must match jocr.pipeline.model.BUNDLED_MODELS


class BuildPyWithModels(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (MODELS / "config.json").is_file():
            raise RuntimeError(f"{MODELS.resolve()}: no bundled model for the wheel (config.json missing)")
        copy_models(MODELS, Path(self.build_lib).joinpath(*TARGET))


def copy_models(models: Path, target: Path) -> None:
    """Every file under `models` (the members' folders too) to the same place under `target`, which is
    emptied first: a stale copy from an earlier build must not linger."""
    if target.exists():
        shutil.rmtree(target)
    for source in sorted(models.rglob("*")):
        if source.is_file():
            destination = target / source.relative_to(models)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
