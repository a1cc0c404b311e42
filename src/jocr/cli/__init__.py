"""The `jocr` command. Each subcommand lives in its own module exposing `add_arguments(parser)` and
`run(args) -> int`; modules are imported only when their subcommand runs, so `jocr --help` stays fast."""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "parse": "Parse PDFs, images or URLs into Markdown",
    "ask": "Ask a document a question: the model's answer alone on stdout",
    "extract": "Extract fields from documents (--fields or a JSON Schema) as JSON, one object per document",
    "batch": "Parse many documents with Ray Data, resumable (pip install 'jocr[batch]')",
    "score": "Score outputs with olmOCR-Bench unit tests or OmniDocBench metrics",
    "synth": "Generate synthetic pages with ground truth and unit tests",
    "train": "Train: sft, robust, grpo, merge, mtp",
    "serve": "Serve the OpenAI-compatible API, the Reader endpoint and the demo page",
    "model": "Inspect models (parameter counts, bundle members) and write int8 copies",
    "export": "Export a model: hf (a self-contained Hugging Face repository)",
}


class CliError(Exception):
    """An error to print as one line (no traceback) before exiting with status 2."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="jocr", description="Document pages to clean Markdown.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    name = argv[0]
    if name not in SUBCOMMANDS:
        parser.error(f"unknown command {name!r}; choose from {', '.join(SUBCOMMANDS)}")
    module = importlib.import_module(f"jocr.cli.{name}_cmd")
    cmd_parser = argparse.ArgumentParser(prog=f"jocr {name}", description=SUBCOMMANDS[name])
    module.add_arguments(cmd_parser)
    args = cmd_parser.parse_args(argv[1:])
    try:
        return int(module.run(args) or 0)
    except CliError as exc:
        print(f"jocr {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"jocr {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
