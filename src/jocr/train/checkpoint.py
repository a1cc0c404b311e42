"""Resumable checkpoints: a model directory (config.json, model.safetensors, tokenizer.json) plus the
trainer state (optimizer, step, next data index, RNG), written atomically so a kill never leaves a half file.

Run folder layout:
    <run_dir>/checkpoint/          latest resumable state (model dir + trainer_state.pt)
    <run_dir>/snapshots/step_N/    model-only copies (merge candidates)
    <run_dir>/final/               the stage's finished model
    <run_dir>/log.jsonl, curves.png
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch


def save_model_dir(model, tokenizer, directory: str | Path) -> Path:
    """Write the model (its own save_pretrained) and tokenizer.json into directory, atomically.

    A model card (README.md) already in the directory is kept: exporting into `models/` must not delete it.
    """
    directory = Path(directory)
    tmp = directory.with_name(directory.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)
    tokenizer.save(tmp / "tokenizer.json")
    card = directory / "README.md"
    if card.is_file():
        shutil.copy2(card, tmp / "README.md")
    _replace_dir(tmp, directory)
    return directory


def _replace_dir(tmp: Path, directory: Path) -> None:
    old = directory.with_name(directory.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if directory.exists():
        os.replace(directory, old)
    os.replace(tmp, directory)
    if old.exists():
        shutil.rmtree(old)


def save_checkpoint(run_dir: str | Path, model, tokenizer, state: dict[str, Any]) -> Path:
    """Model dir + trainer_state.pt under <run_dir>/checkpoint, replaced as one unit."""
    run_dir = Path(run_dir)
    tmp = run_dir / "checkpoint.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)
    tokenizer.save(tmp / "tokenizer.json")
    torch.save(state, tmp / "trainer_state.pt")
    final = run_dir / "checkpoint"
    _replace_dir(tmp, final)
    return final


def load_trainer_state(run_dir: str | Path) -> dict[str, Any] | None:
    path = Path(run_dir) / "checkpoint" / "trainer_state.pt"
    if not path.is_file():
        return None
    return torch.load(path, map_location="cpu", weights_only=False)


def rng_state() -> dict[str, Any]:
    return {"torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    if "torch" in state:
        torch.set_rng_state(state["torch"])
