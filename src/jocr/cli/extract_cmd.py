"""`jocr extract FILE... --fields a,b,c | --schema fields.json`: one JSON object per document (field ->
value or null) on stdout, one line each."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jocr.cli import CliError
from jocr.cli.ask_cmd import add_model_arguments, settings

MAX_SCHEMA_BYTES = 1_000_000


def add_arguments(parser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="PDF or image files, or URLs")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--fields", help="comma-separated field names, e.g. invoice_number,date,total")
    which.add_argument(
        "--schema", help="a JSON Schema file: an object whose properties are string/number/integer/boolean"
    )
    from jocr.pipeline.ask import ANSWER_TOKENS

    add_model_arguments(parser, max_tokens=f"the fields' names as JSON plus {ANSWER_TOKENS} per field")


def read_schema(args):
    """The fields from --fields or --schema, checked (`jocr.pipeline.ask.parse_schema`)."""
    from jocr.pipeline.ask import AskError, parse_schema

    if args.fields is not None:
        schema = [name.strip() for name in args.fields.split(",")]
    else:
        path = Path(args.schema)
        if not path.is_file():
            raise CliError(f"--schema: no file at {path}")
        if path.stat().st_size > MAX_SCHEMA_BYTES:
            raise CliError(f"--schema: {path} is over {MAX_SCHEMA_BYTES:,} bytes")
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise CliError(f"--schema: {path} is not JSON ({str(exc).splitlines()[0]})") from None
    try:
        return parse_schema(schema)
    except AskError as exc:
        raise CliError(f"{'--fields' if args.fields is not None else '--schema'}: {exc}") from None
    except RecursionError:
        raise CliError("--schema: nested too deeply") from None


def run(args) -> int:
    from jocr.pipeline import extract

    fields = read_schema(args)
    config, model = settings(args)
    try:
        results = extract(
            args.files,
            fields_schema(fields),
            pages=args.pages,
            model=model,
            config=config,
            raise_errors=False,
        )
    except ValueError as exc:  # e.g. --spec k for a model without a draft head
        raise CliError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    failed = 0
    for result in results:
        if result.error:
            print(f"jocr extract: {result.error}", file=sys.stderr)
            failed += 1
        print(json.dumps(result.to_dict(detail=args.format == "json"), ensure_ascii=False))
    return 1 if failed else 0


def fields_schema(fields) -> dict:
    """Checked fields back as the JSON Schema subset `extract` takes."""
    properties = {f.name: {"type": f.type, "description": f.description} for f in fields}
    return {"type": "object", "properties": properties}
