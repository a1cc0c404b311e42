"""`jocr batch INPUT... --output DIR_OR_URI`: many documents through Ray Data (docs/batch.md)."""

from __future__ import annotations

import sys

from jocr.cli import CliError
from jocr.cli.parse_cmd import add_anchor_argument, add_ocr_argument, add_retries_argument, checked_retries


def add_arguments(parser) -> None:
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="PDF/image files, folders, globs, URLs, storage URIs (s3://...) or .txt/.lst files listing them",
    )
    parser.add_argument("-o", "--output", required=True, help="output folder or URI (s3://bucket/prefix)")
    parser.add_argument("--engine", choices=("jocr", "vllm"), default="jocr", help="inference engine")
    parser.add_argument("--address", help="join a Ray cluster: auto or ray://HOST:10001 (default: local Ray)")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default: all)")
    parser.add_argument(
        "--actors", type=int, default=1, help="inference actors / model replicas (default: 1)"
    )
    parser.add_argument("--cpus-per-actor", type=float, default=1.0, help="CPUs per actor (default: 1)")
    parser.add_argument("--gpus-per-actor", type=float, default=0.0, help="GPUs per actor (default: 0)")
    parser.add_argument("--render-cpus", type=float, default=0.5, help="CPUs per render task (default: 0.5)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads per actor (default: torch's)")
    parser.add_argument("--batch-size", type=int, default=8, help="pages decoded together per actor")
    parser.add_argument("--limit", type=int, help="only the first N documents (try a subset first)")
    parser.add_argument("--pages", help="1-based pages of every input, e.g. 1-3,7 or 10-")
    parser.add_argument("--format", choices=("md", "json"), default="md", help="json also writes <stem>.json")
    parser.add_argument("--model", help="model directory (default: $JOCR_MODEL or the bundled models/)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument(
        "--vllm-kwargs", default="{}", help="JSON of extra vllm.LLM arguments, e.g. '{\"max_num_seqs\": 128}'"
    )
    parser.add_argument("--max-tokens", type=int, default=4096, help="output tokens per page (default: 4096)")
    parser.add_argument("--spec", default="auto", help="speculative draft tokens: auto, 0 (off), 1, 2 or 3")
    parser.add_argument(
        "--prompt", help="task (ocr, free, grounding, table, formula, caption) or prompt text"
    )
    add_anchor_argument(parser)
    add_ocr_argument(parser)
    add_retries_argument(parser)
    parser.add_argument(
        "--figures",
        choices=("none", "files"),
        default="files",
        help="figures cut out of pages: files (<stem>_p<N>_fig<K>.png beside each document's Markdown, "
        "listed in the manifest; default, as jocr parse), none (no image; captions stay)",
    )
    parser.add_argument("--dpi", type=float, default=144.0, help="PDF render resolution (default: 144)")
    parser.add_argument("--longest-side", type=int, help="render PDF pages to this many pixels")
    parser.add_argument("--password", help="password for encrypted PDFs")
    parser.add_argument("--page-timeout", type=float, help="seconds of generation per page attempt")
    parser.add_argument("--max-doc-pages", type=int, help="documents with more pages fail at once")
    parser.add_argument("--no-page-marker", action="store_true", help="join pages with a blank line only")
    parser.add_argument(
        "--keep-blank-pages", action="store_true", help="also read pages without ink (default: empty)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def run(args) -> int:
    from jocr.cli.parse_cmd import checked_pages_and_spec

    checks = [
        (args.max_tokens < 1, "--max-tokens must be >= 1"),
        (args.batch_size < 1, "--batch-size must be >= 1"),
        (args.actors < 1, "--actors must be >= 1"),
        (args.limit is not None and args.limit < 1, "--limit must be >= 1"),
        (args.dpi <= 0, "--dpi must be > 0"),
        (args.longest_side is not None and args.longest_side < 16, "--longest-side must be >= 16"),
        (args.page_timeout is not None and args.page_timeout <= 0, "--page-timeout must be > 0"),
        (
            min(args.cpus_per_actor, args.gpus_per_actor, args.render_cpus) < 0,
            "CPU and GPU counts must be >= 0",
        ),
    ]
    for bad, message in checks:
        if bad:
            raise CliError(message)
    spec = checked_pages_and_spec(args)
    retries = checked_retries(args)

    import json

    try:
        vllm_kwargs = json.loads(args.vllm_kwargs)
    except json.JSONDecodeError as exc:
        raise CliError(f"--vllm-kwargs is not JSON ({exc})") from None
    if not isinstance(vllm_kwargs, dict):
        raise CliError("--vllm-kwargs must be a JSON object")

    from jocr.bulk import BatchConfig, BatchError, PageSettings, run_batch

    settings = PageSettings(
        model=args.model,
        device=args.device,
        prompt=args.prompt,
        pages=args.pages,
        max_tokens=args.max_tokens,
        spec=spec,
        batch_size=args.batch_size,
        dpi=args.dpi,
        longest_side=args.longest_side,
        password=args.password,
        skip_blank=not args.keep_blank_pages,
        retries=retries,
        page_timeout=args.page_timeout,
        max_doc_pages=args.max_doc_pages,
        threads=args.threads,
        anchor=args.anchor,
        ocr=args.ocr,
        figures=args.figures,
        vllm_kwargs=vllm_kwargs,
    )
    config = BatchConfig(
        inputs=args.inputs,
        output=args.output,
        settings=settings,
        engine=args.engine,
        address=args.address,
        num_cpus=args.num_cpus,
        actors=args.actors,
        cpus_per_actor=args.cpus_per_actor,
        gpus_per_actor=args.gpus_per_actor,
        render_cpus=args.render_cpus,
        formats=("md", "json") if args.format == "json" else ("md",),
        page_marker=not args.no_page_marker,
        limit=args.limit,
        quiet=args.quiet,
    )
    try:
        summary = run_batch(config)
    except BatchError as exc:
        raise CliError(str(exc)) from None
    for error in summary.errors:
        print(f"jocr batch: {error}", file=sys.stderr)
    print(summary.line(), file=sys.stderr)
    return 1 if summary.failed else 0
