"""`jocr train sft|robust|grpo|merge|mtp|formula --config FILE`: one stage of the training recipe, or
the formula reader (docs/training.md).

Every stage resumes from its run folder when run again with the same config; `--set key=value` overrides a
config entry (dotted keys, YAML values), e.g. `--set max_steps=200 --set optim.lr=5e-4`.
"""

from __future__ import annotations

import argparse

from jocr.cli import CliError

STAGES = ("sft", "robust", "grpo", "merge", "mtp", "formula")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stage", choices=STAGES, help="which stage of the recipe to run")
    parser.add_argument("--config", required=True, help="YAML or JSON training config (see configs/)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config entry (dotted key, YAML value); repeatable",
    )


def _overrides(items: list[str]) -> dict:
    import yaml

    out = {}
    for item in items:
        if "=" not in item:
            raise CliError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise CliError(f"--set {key}: cannot parse value {value!r} ({exc})") from None
    return out


def _run_formula(args: argparse.Namespace) -> int:
    """The formula reader's training (`jocr.train.formula_stage`): its own config, not a page model's."""
    from jocr.train.formula_stage import FormulaTrainConfig, train_formula_reader

    try:
        cfg = FormulaTrainConfig.load(args.config, _overrides(args.set))
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    except Exception as exc:  # YAML errors, unknown entries: one line
        raise CliError(f"{args.config}: cannot read config ({type(exc).__name__}: {exc})") from None
    train_formula_reader(cfg)
    return 0


def run(args: argparse.Namespace) -> int:
    from jocr.train.config import TrainConfig

    if args.stage == "formula":
        return _run_formula(args)

    try:
        cfg = TrainConfig.load(args.config, _overrides(args.set))
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    except (ValueError, TypeError) as exc:
        raise CliError(f"{args.config}: {exc}") from None
    except Exception as exc:  # YAML syntax errors and the like: one line, not a traceback
        raise CliError(f"{args.config}: cannot read config ({type(exc).__name__}: {exc})") from None
    if cfg.kind != args.stage:
        raise CliError(f"{args.config} describes a {cfg.kind!r} stage, not {args.stage!r}")
    try:
        if args.stage in ("sft", "robust"):
            from jocr.train.sft import train_sft

            train_sft(cfg)
        elif args.stage == "grpo":
            from jocr.train.grpo import train_grpo

            train_grpo(cfg)
        elif args.stage == "merge":
            from jocr.train.merge_stage import run_merge

            run_merge(cfg)
        else:
            from jocr.train.mtp_stage import run_mtp_fit

            run_mtp_fit(cfg)
    except (FileNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None
    return 0
