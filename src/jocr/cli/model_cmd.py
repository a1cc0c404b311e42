"""`jocr model info --preset NAME | --model DIR [--json]`: parameter counts without allocating the model."""

from __future__ import annotations

import argparse
import json

from jocr.cli import CliError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    info = sub.add_parser("info", help="total and active (per decoded token) parameter counts")
    source = info.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="a built-in config: deepseek-ocr or tiny")
    source.add_argument("--model", help="a model directory with config.json")
    info.add_argument("--json", action="store_true", help="print one JSON object")


def _load_config(args: argparse.Namespace):
    from jocr.config import PRESETS, OCRConfig

    if args.preset is not None:
        if args.preset not in PRESETS:
            raise CliError(f"unknown preset {args.preset!r}; choose from {', '.join(PRESETS)}")
        return OCRConfig.preset(args.preset), f"preset {args.preset}"
    try:
        return OCRConfig.load(args.model), args.model
    except (FileNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from jocr.model.params import count_parameters

    config, source = _load_config(args)
    counts = count_parameters(config)
    if args.json:
        print(json.dumps({"source": source, **counts}))
        return 0
    d = config.decoder
    rows = [
        ("total", counts["total_params"]),
        ("active per decoded token", counts["active_params"]),
        ("  vision encoder (not active per token)", counts["vision_params"]),
        ("  input embeddings (row lookup, not active)", counts["embedding_params"]),
        ("  decoder layers excl. routed experts", counts["decoder_layer_params"]),
        (
            f"  routed experts ({d.num_experts_per_tok} of {d.n_routed_experts} active)",
            counts["routed_expert_params"],
        ),  # fmt: skip
        ("  lm_head", counts["lm_head_params"]),
        ("  MTP draft head (not counted as active)", counts["mtp_params"]),
    ]
    print(f"jocr model: {source}")
    for label, value in rows:
        print(f"{label:<48} {value:>15,}  ({value / 1e9:.3f}B)")
    return 0
