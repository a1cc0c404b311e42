"""`jocr model info --preset NAME | --model DIR [--json]`: parameter counts without allocating the model, and
for a model directory its bundle members and how each is stored.
`jocr model quantize SRC DST`: a model directory as weight-only int8 (the form of a bundle's asking member,
docs/asking.md "The asking member")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jocr.cli import CliError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    info = sub.add_parser("info", help="total and active (per decoded token) parameter counts")
    source = info.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="a built-in config: deepseek-ocr or tiny")
    source.add_argument("--model", help="a model directory with config.json")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    quantize = sub.add_parser(
        "quantize", help="write a model directory as weight-only int8 (linear and embedding matrices)"
    )
    quantize.add_argument("source", metavar="SRC", help="a model directory (config.json, *.safetensors)")
    quantize.add_argument("target", metavar="DST", help="a new (or empty) directory, e.g. models/ask")


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


def members(directory: str) -> list[dict]:
    """The model directory and its bundle members: name, path, storage (float dtype, or int8) and bytes of
    weights each."""
    from jocr.model.weights import CheckpointError, checkpoint_files, checkpoint_storage
    from jocr.pipeline.model import bundle_members

    out = []
    for name, path in bundle_members(directory):
        try:
            files = checkpoint_files(path)
            dtype, int8 = checkpoint_storage(files)
        except CheckpointError as exc:
            raise CliError(str(exc)) from None
        storage = "int8" if int8 else str(dtype).removeprefix("torch.")
        size = sum(f.stat().st_size for f in set(files.values()))
        out.append({"name": name, "path": str(path), "storage": storage, "bytes": size})
    return out


def run(args: argparse.Namespace) -> int:
    if args.action == "quantize":
        return quantize(args)
    from jocr.model.params import count_parameters

    config, source = _load_config(args)
    counts = count_parameters(config)
    bundle = members(args.model) if args.model is not None else []
    if args.json:
        print(json.dumps({"source": source, **counts, **({"members": bundle} if bundle else {})}))
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
    for member in bundle:
        line = f"member {member['name']} ({member['storage']}, {member['bytes'] / 1e6:.1f} MB)"
        print(f"{line:<48} {member['path']}")
    return 0


def quantize(args: argparse.Namespace) -> int:
    from jocr.model.formats import quantize_model_dir
    from jocr.model.weights import CheckpointError

    target = Path(args.target)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise CliError(f"{target} exists and is not an empty directory")
    try:
        quantize_model_dir(args.source, target)
    except (CheckpointError, FileNotFoundError, ValueError) as exc:
        raise CliError(str(exc).splitlines()[0]) from None
    size = sum(p.stat().st_size for p in target.glob("*.safetensors"))
    print(f"{target}: int8 weights, {size / 1e6:.1f} MB")
    return 0
