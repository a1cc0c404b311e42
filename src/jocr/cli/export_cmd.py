"""`jocr export hf MODEL_DIR OUT_DIR`: write a self-contained Hugging Face repository (docs/export.md)."""

from __future__ import annotations

import argparse

from jocr.cli import CliError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="format", metavar="FORMAT", required=True)
    hf = sub.add_parser(
        "hf",
        help="a Hugging Face repository for Transformers (trust_remote_code) and vLLM, without jocr",
    )
    hf.add_argument(
        "model_dir", metavar="MODEL_DIR", help="a jocr checkpoint or a published DeepSeek-OCR layout"
    )
    hf.add_argument("out_dir", metavar="OUT_DIR", help="the repository to write (must be new or empty)")
    hf.add_argument("--max-shard-size", default="5GB", help="largest safetensors shard (default: 5GB)")
    hf.add_argument("--name", help="the repository name the model card uses (default: OUT_DIR's name)")
    hf.add_argument("--overwrite", action="store_true", help="replace a non-empty OUT_DIR")


def run(args: argparse.Namespace) -> int:
    from jocr.integrations.hf.bundle import BundleError
    from jocr.integrations.hf.export import ExportError, export_hf
    from jocr.model.weights import CheckpointError

    try:
        out = export_hf(
            args.model_dir,
            args.out_dir,
            max_shard_size=args.max_shard_size,
            overwrite=args.overwrite,
            name=args.name,
        )
    except (ExportError, CheckpointError, BundleError, ValueError, OSError) as exc:
        raise CliError(" ".join(str(exc).split())) from None
    files = sorted(p.name for p in out.iterdir())
    print(f"jocr export: wrote {out} ({len(files)} files: {', '.join(files)})")
    return 0
