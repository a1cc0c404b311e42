"""`jocr ask FILE "question"`: the model's answer to a question about a document, alone on stdout."""

from __future__ import annotations

import json

from jocr.cli import CliError


def add_model_arguments(parser, max_tokens: str) -> None:
    """--pages, --model, --device, --max-tokens, --spec, --anchor, --ocr, --dpi, --password, --format: shared
    by `jocr ask` and `jocr extract`."""
    from jocr.cli.parse_cmd import add_anchor_argument, add_ocr_argument

    parser.add_argument("--pages", help="1-based pages to ask, e.g. 2 or 1-3 (default: every page)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="json adds page and box")
    parser.add_argument("--model", help="model directory (default: $JOCR_MODEL or the bundled models/)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help=f"answer tokens per request (default: {max_tokens})",
    )
    parser.add_argument("--spec", default="auto", help="speculative draft tokens: auto, 0 (off) or k")
    parser.add_argument("--dpi", type=float, default=144.0, help="PDF render resolution (default: 144)")
    parser.add_argument("--password", help="password for encrypted PDFs")
    add_anchor_argument(parser)
    add_ocr_argument(parser)


def add_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="a PDF or image file, or a URL")
    parser.add_argument("question", help="the question, in the document's language or any other")
    from jocr.pipeline.ask import ANSWER_TOKENS

    add_model_arguments(parser, max_tokens=str(ANSWER_TOKENS))


def settings(args):
    """An `AskConfig` and the loaded model from the shared arguments (one-line errors)."""
    from jocr.cli.parse_cmd import checked_pages_and_spec
    from jocr.pipeline import AskConfig, AskError, ModelNotFoundError, load_model

    spec = checked_pages_and_spec(args)
    if args.dpi <= 0:
        raise CliError("--dpi must be > 0")
    try:
        config = AskConfig(
            max_tokens=args.max_tokens,
            spec=spec,
            anchor=args.anchor,
            dpi=args.dpi,
            password=args.password,
            ocr=args.ocr,
        )
        model = load_model(args.model, device=args.device)
    except (AskError, ModelNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None
    return config, model


def run(args) -> int:
    from jocr.documents.pages import DocumentError
    from jocr.pipeline import AskError, ask
    from jocr.pipeline.ask import check_question

    try:
        check_question(args.question)
    except AskError as exc:
        raise CliError(str(exc)) from None
    config, model = settings(args)
    try:
        answer = ask(args.file, args.question, pages=args.pages, model=model, config=config)
    except (AskError, DocumentError, ValueError) as exc:  # ValueError: e.g. --spec k without a draft head
        raise CliError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if answer.error and not answer.answer:
        raise CliError(answer.error)
    if args.format == "json":
        print(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        print(answer.answer)
    return 0
