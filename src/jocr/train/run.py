"""The skeleton every training stage shares: run folder, log, trainer state, stop flag, time limit,
periodic checkpoints and snapshots, the finished model and its export (layout in train/checkpoint.py).

    run = ResumableRun(cfg, log, curve_keys=["loss"])
    state = run.state or {"step": 0, ...}          # None on a fresh run
    with run.stop_flag():
        while run.keep_going(step):
            ...one step...
            run.after_step(step, model, tokenizer, save_state)
    run.checkpoint(model, tokenizer, save_state)
    out = run.finish(step, model, tokenizer)

A stage that is not a step loop (merge, MTP fitting) uses only the folder, the log and `export`.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from jocr.train.checkpoint import (
    load_trainer_state,
    rng_state,
    save_checkpoint,
    save_model_dir,
    set_rng_state,
)
from jocr.train.config import TrainConfig
from jocr.train.curves import RunLog, plot_curves


class ResumableRun:
    def __init__(self, cfg: TrainConfig, log=print, curve_keys: Sequence[str] = ()):
        torch.set_num_threads(max(1, cfg.threads))
        self.cfg, self.log, self.curve_keys = cfg, log, list(curve_keys)
        self.dir = Path(cfg.run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.runlog = RunLog(self.dir)
        self.state: dict[str, Any] | None = load_trainer_state(self.dir)  # None: a fresh run
        self.stop = False
        self.t_start = self.last_checkpoint = time.time()
        self._elapsed0 = 0.0

    @property
    def resumed(self) -> bool:
        return self.state is not None and "step" in self.state

    @property
    def checkpoint_dir(self) -> Path:
        return self.dir / "checkpoint"

    def begin(self, state: dict[str, Any]) -> dict[str, Any]:
        """The trainer state this invocation continues (the loaded one, else `state`)."""
        if self.state is None:
            self.state = state
        self._elapsed0 = self.state.get("elapsed", 0.0)  # training seconds of earlier invocations
        return self.state

    def restore(self, optimizer: torch.optim.Optimizer, seed: int | None = None) -> None:
        """The optimizer and RNG of the checkpoint when resuming; otherwise seed torch with `seed`."""
        if "optimizer" in self.state:
            optimizer.load_state_dict(self.state["optimizer"])
            set_rng_state(self.state.get("rng", {}))
        elif seed is not None:
            torch.manual_seed(seed)

    @contextmanager
    def stop_flag(self):
        """SIGTERM/SIGINT set `self.stop`, so the loop checkpoints and exits instead of dying mid-step."""

        def handle(signum, frame) -> None:
            self.stop = True

        old = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                old[sig] = signal.signal(sig, handle)
            except ValueError:  # not the main thread (tests): no handler
                pass
        try:
            yield self
        finally:
            for sig, previous in old.items():
                signal.signal(sig, previous)

    def keep_going(self, step: int) -> bool:
        """False once max_steps is reached, a stop signal came or the time limit passed (logged)."""
        if step >= self.cfg.max_steps or self.stop:
            return False
        limit = self.cfg.time_limit_min
        if limit is not None and time.time() - self.t_start > limit * 60:
            self.log(f"time limit of {limit} min reached at step {step}")
            return False
        return True

    def checkpoint(
        self, step: int, model, tokenizer, optimizer, extra: Callable[[dict], None] | None = None
    ) -> None:
        """Model + trainer state (step, optimizer, RNG, elapsed, what `extra(state)` adds), then curves."""
        self.state.update(
            step=step,
            optimizer=optimizer.state_dict(),
            rng=rng_state(),
            elapsed=self._elapsed0 + (time.time() - self.t_start),
        )
        if extra is not None:
            extra(self.state)
        save_checkpoint(self.dir, model, tokenizer, self.state)
        if self.curve_keys:
            plot_curves(self.runlog.path, self.dir / "curves.png", self.curve_keys)
        self.last_checkpoint = time.time()

    def after_step(self, step: int, model, tokenizer, optimizer, extra=None) -> None:
        """A model snapshot every `snapshot_every_steps`, a checkpoint every `checkpoint_every_min`."""
        if self.cfg.snapshot_every_steps and step % self.cfg.snapshot_every_steps == 0:
            save_model_dir(model, tokenizer, self.dir / "snapshots" / f"step_{step:06d}")
        if time.time() - self.last_checkpoint > self.cfg.checkpoint_every_min * 60:
            self.checkpoint(step, model, tokenizer, optimizer, extra)

    def finish(self, step: int, model, tokenizer, files: Callable[[Path], None] | None = None) -> Path:
        """final/ (and the export) when max_steps was reached, else the checkpoint to resume from."""
        model.eval()
        if step < self.cfg.max_steps:
            out = self.checkpoint_dir
        else:
            out = save_model_dir(model, tokenizer, self.dir / "final")
            if files is not None:
                files(out)
            self.export(model, tokenizer)
        self.log(f"{self.cfg.kind} stopped at step {step}/{self.cfg.max_steps}; model in {out}")
        return out

    def export(self, model, tokenizer) -> None:
        if self.cfg.export_dir:
            save_model_dir(model, tokenizer, self.cfg.export_dir)
            self.log(f"exported the model to {self.cfg.export_dir}")
