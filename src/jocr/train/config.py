"""Training configuration: one dataclass per component, nested in `TrainConfig`, read from YAML or JSON.

One file describes one stage of the recipe (`kind`: sft, robust, grpo, merge, mtp); see configs/ and
docs/training.md. Unknown keys are errors, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jocr.config import from_known_keys
from jocr.train.data import DataConfig

KINDS = ("sft", "robust", "grpo", "merge", "mtp")


def _build(cls, data: Any, where: str):
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(data).__name__}")
    return from_known_keys(cls, data, where)


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """`data` (a loaded config) with each dotted key of `overrides` (`optim.lr`) set in place."""
    for dotted, value in (overrides or {}).items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return data


@dataclass
class TokenizerConfig:
    """Where tokenizer.json lives; trained on synthetic text first when it does not exist yet."""

    path: str = "runs/tokenizer/tokenizer.json"
    vocab_size: int = 3000
    corpus_pages: int = 4000
    profiles: list[str] = field(default_factory=lambda: ["cpu-lines", "cpu-small"])


@dataclass
class OptimConfig:
    """AdamW with linear warmup, then cosine decay to min_lr_ratio * lr over max_steps (or constant)."""

    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.05
    beta1: float = 0.9
    beta2: float = 0.98
    grad_clip: float = 1.0
    schedule: str = "cosine"  # cosine | constant
    # Conv weights (parameter names) kept spatially zero-mean per (out, in) channel after every step, so the
    # vision tower cannot amplify the flat page background into a large constant (see docs/training.md).
    zero_mean_convs: list[str] = field(default_factory=list)

    def lr_at(self, step: int, max_steps: int) -> float:
        import math

        if step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        if self.schedule == "constant":
            return self.lr
        span = max(1, max_steps - self.warmup_steps)
        progress = min(1.0, (step - self.warmup_steps) / span)
        floor = self.lr * self.min_lr_ratio
        return floor + 0.5 * (self.lr - floor) * (1 + math.cos(math.pi * progress))


@dataclass
class EvalConfig:
    """Greedy evaluation on held-out synthetic pages (validation seeds, never training seeds)."""

    pages: int = 32
    profile: str = "cpu-small"
    split: str = "val"
    degrade: bool = False
    max_tokens: int = 320
    batch_size: int = 16
    every_steps: int = 0  # 0: only at the end


@dataclass
class GRPOConfig:
    """GRPO with verifiable rewards (jocr.checks.reward) and group-normalised advantages.

    trainable: parameter-name prefixes that train (empty: all). E.g. ["decoder", "lm_head"] trains the
    decoder only; names are those of `OCRModel.named_parameters()`.
    """

    group_size: int = 8
    pages_per_step: int = 4
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 320
    clip_eps: float = 0.2
    kl_coef: float = 0.02
    epochs_per_batch: int = 1
    trainable: list[str] = field(default_factory=list)
    std_normalise: bool = True
    # One completion of each group is the greedy one (temperature 0), the output that is evaluated: its
    # advantage says directly whether a sampled reading beat it, and its reward is logged as reward_greedy.
    greedy_in_group: bool = False
    # > 0: the stage reads a fixed set of this many pages, over and over (epochs over a prompt set, as GRPO
    # datasets are used), instead of new pages every step.
    page_pool: int = 0
    # Set: each step reads only pages whose greedy reading scores below this reward, screened by greedy
    # decoding new pages (cheap next to a policy pass) until pages_per_step are found; the compute goes
    # where the group can beat the greedy reading. None: every page.
    hard_below: float | None = None


@dataclass
class MergeConfig:
    """Merge candidate checkpoints; weights searched with at most `budget` evaluations on `eval` pages."""

    candidates: list[str] = field(default_factory=list)
    method: str = "linear"  # linear | slerp
    budget: int = 6


@dataclass
class MTPStageConfig:
    """Fit the FastMTP head on the final verifier's own greedy outputs (train/mtp.py does the fitting):
    greedy outputs for `pages` training-split pages drawn like `data`, then `steps` head updates."""

    pages: int = 256
    steps: int = 300
    lr: float = 1e-3
    batch_size: int = 16
    max_tokens: int = 320
    step_weights: list[float] = field(default_factory=lambda: [0.51, 0.31, 0.18])


@dataclass
class TrainConfig:
    kind: str = "sft"
    run_dir: str = "runs/sft"
    model: dict[str, Any] | None = None  # an OCRConfig dict for a model trained from scratch
    model_file: str | None = None  # a YAML/JSON file with that mapping (`model` entries override it)
    init: str | None = None  # a model directory (config.json + model.safetensors) to start from
    # A model directory whose vision encoder (SAM, compressor, CLIP, projector, separators) and reading heads
    # start a model otherwise built fresh from `model` / `model_file` with this run's tokenizer: a new decoder
    # and vocabulary on a trained encoder. Exclusive with `init`.
    init_vision: str | None = None
    export_dir: str | None = None  # where the finished stage writes its model directory
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    merge: MergeConfig = field(default_factory=MergeConfig)
    mtp: MTPStageConfig = field(default_factory=MTPStageConfig)
    batch_size: int = 16
    max_steps: int = 1000
    time_limit_min: float | None = None  # stop (resumably) after this many minutes in this invocation
    checkpoint_every_min: float = 5.0
    snapshot_every_steps: int = 0  # keep a model-only copy every N steps (merge candidates); 0: never
    log_every: int = 10
    threads: int = 2
    workers: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.init and self.init_vision:
            raise ValueError("init and init_vision are exclusive: init_vision starts a fresh decoder")
        self.tokenizer = _build(TokenizerConfig, self.tokenizer, "tokenizer")
        self.data = _build(DataConfig, self.data, "data")
        self.optim = _build(OptimConfig, self.optim, "optim")
        self.eval = _build(EvalConfig, self.eval, "eval")
        self.grpo = _build(GRPOConfig, self.grpo, "grpo")
        self.merge = _build(MergeConfig, self.merge, "merge")
        self.mtp = _build(MTPStageConfig, self.mtp, "mtp")
        if self.batch_size < 1 or self.max_steps < 0:
            raise ValueError("batch_size must be >= 1 and max_steps >= 0")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        return _build(cls, data, "config")

    def model_dict(self) -> dict[str, Any] | None:
        """The model mapping: model_file's contents with `model`'s entries merged over them (per section)."""
        base: dict[str, Any] = {}
        if self.model_file:
            path = Path(self.model_file)
            if not path.is_file():
                raise FileNotFoundError(f"no model file at {path}")
            import yaml

            base = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for key, value in (self.model or {}).items():
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                base[key] = {**base[key], **value}
            else:
                base[key] = value
        return base or None

    @classmethod
    def load(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no config file at {path}")
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text) or {}
        apply_overrides(data, overrides)
        return cls.from_dict(data)
