"""`jocr serve`: the OpenAI-compatible API, the Reader endpoint and the demo page (see docs/serving.md)."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os

from jocr.cli import CliError
from jocr.cli.parse_cmd import add_anchor_argument, add_format_arguments, add_ocr_argument


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from jocr.serve.config import ServeConfig as D  # the defaults live there, once

    parser.add_argument("--host", default=D.host, help=f"address to listen on (default {D.host})")
    parser.add_argument(
        "--port", type=int, default=D.port, help=f"port (default {D.port}; 0 picks a free one)"
    )
    parser.add_argument("--model", metavar="DIR", help="model directory (default: $JOCR_MODEL, else models/)")
    parser.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="KEY",
        help="require Authorization: Bearer KEY (repeatable; also JOCR_API_KEY)",
    )
    parser.add_argument(
        "--max-batch", type=int, default=D.max_batch, help=f"rows decoded together (default {D.max_batch})"
    )
    parser.add_argument(
        "--max-queue",
        type=int,
        default=D.max_queue,
        help=f"requests waiting beyond the batch before 429 (default {D.max_queue})",
    )
    parser.add_argument("--max-image-pixels", type=int, default=D.max_image_pixels, help="per image or page")
    parser.add_argument(
        "--max-body-mb", type=float, default=D.max_body_bytes / 2**20, help="request body limit in MiB"
    )
    parser.add_argument(
        "--timeout", type=float, default=D.request_timeout_s, help="per-request time limit in seconds"
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="without an API key, also accept requests for this host name (besides IP addresses, localhost "
        "and --host; '*' any); other names are refused (DNS rebinding); repeatable",
    )
    parser.add_argument(
        "--allow-private-fetch",
        action="store_true",
        help="let the URL fetcher reach private and loopback addresses (never cloud metadata)",
    )
    parser.add_argument(
        "--allow-fetch-host",
        action="append",
        default=[],
        metavar="IP[:PORT]",
        help="for tests only: let the fetcher and the browser reach this private address (every port "
        "without :PORT; [v6]:PORT for IPv6; repeatable; never cloud metadata)",
    )
    parser.add_argument(
        "--chromium", metavar="PATH", help="Chromium for web pages (default: chromium on PATH, Debian's)"
    )
    parser.add_argument(
        "--browser-contexts", type=int, default=4, help="web pages rendered at once (default 4); more get 429"
    )
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    add_format_arguments(parser)
    add_anchor_argument(parser)
    add_ocr_argument(
        parser,
        default="none",
        help="OCR line source of a page asked a question without a usable text layer, as jocr ask --ocr: "
        "none (default: a scan is asked with its image alone), auto, rapidocr, tesseract",
    )
    parser.add_argument(
        "--max-tiles",
        type=int,
        help="tile-count limit per page (default: the model's; DeepSeek-OCR 9, vLLM 6)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: torch's choice; 1 avoids spin-waiting on a shared, busy CPU)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    parser.add_argument(
        "--engine",
        default="jocr",
        choices=["jocr", "vllm"],
        help="jocr (this server) or vllm (vLLM's OpenAI server with the jocr plugin; needs jocr[vllm])",
    )
    parser.add_argument(
        "--num-speculative-tokens",
        type=int,
        default=3,
        help="with --engine vllm: FastMTP draft tokens (3 without CUDA graphs, 1 with them; docs/vllm.md)",
    )


def parse_fetch_host(value: str) -> tuple[str, int]:
    """`IP`, `IP:PORT`, `[IPv6]:PORT` or a bare IPv6 address -> (address, port); port 0 means every port."""
    host, port = value.strip(), "0"
    if host.startswith("["):
        host, _, rest = host[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else (rest or "0")
    elif host.count(":") == 1:
        host, port = host.split(":")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise CliError(f"--allow-fetch-host {value!r}: not an IP address (names are not resolved)") from None
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise CliError(f"--allow-fetch-host {value!r}: bad port {port!r}")
    return str(address), int(port)


def build_config(args: argparse.Namespace):
    from jocr.documents.browser import BrowserConfig
    from jocr.documents.fetch import FetchLimits
    from jocr.serve.config import ServeConfig

    for name in ("max_batch", "max_queue", "max_image_pixels", "browser_contexts"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1")
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port {args.port} is not a port number")
    if args.timeout <= 0 or args.max_body_mb <= 0:
        raise CliError("--timeout and --max-body-mb must be positive")
    allowed = frozenset(parse_fetch_host(v) for v in args.allow_fetch_host)
    if allowed:
        shown = ", ".join(f"{a}:{p or '*'}" for a, p in sorted(allowed))
        logging.getLogger("jocr.serve").warning(
            "--allow-fetch-host: the fetcher and the browser may reach %s (meant for tests only)", shown
        )
    keys = [k for k in args.api_key if k]
    if os.environ.get("JOCR_API_KEY"):
        keys.append(os.environ["JOCR_API_KEY"])
    return ServeConfig(
        model_dir=args.model,
        host=args.host,
        port=args.port,
        api_keys=tuple(keys),
        allowed_hosts=tuple(h.strip() for h in args.allowed_host if h.strip()),
        max_batch=args.max_batch,
        max_queue=args.max_queue,
        max_image_pixels=args.max_image_pixels,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        request_timeout_s=args.timeout,
        fetch=FetchLimits(allow_private=args.allow_private_fetch, allowed_endpoints=allowed),
        # A printed web page is read no further than a PDF sent in a request body may be long.
        browser=BrowserConfig(
            executable=args.chromium,
            max_contexts=args.browser_contexts,
            max_pdf_bytes=int(args.max_body_mb * 1024 * 1024),
        ),
        anchor=args.anchor,
        ocr=args.ocr,
    )


def log_config(level: str) -> dict:
    """uvicorn's logging configuration with jocr's own loggers (`jocr.*`: refused page requests, clients that
    went away, the browser's start) at the same level and on the same stream as uvicorn's."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["jocr"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    return config


def _run_vllm(args: argparse.Namespace) -> int:
    """Hand over to vLLM's OpenAI server (docs/vllm.md); only the chat completions API is served there."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise CliError("--engine vllm needs vLLM: pip install 'jocr[vllm]' (see docs/vllm.md)")
    if args.model is None:
        raise CliError("--engine vllm needs --model DIR")
    from jocr.integrations.vllm import main as vllm_main

    argv = [args.model, "--host", args.host, "--port", str(args.port)]
    argv += ["-k", str(args.num_speculative_tokens)]
    if args.device == "cpu":
        argv.append("--cpu")
    if len(args.api_key) > 1:
        raise CliError("--engine vllm takes one --api-key (vLLM's server checks a single key)")
    argv += ["--api-key", args.api_key[0]] if args.api_key else []
    return vllm_main(argv)


def run(args: argparse.Namespace) -> int:
    if args.engine == "vllm":
        return _run_vllm(args)
    config = build_config(args)
    import uvicorn

    if args.threads is not None:
        if args.threads < 1:
            raise CliError("--threads must be >= 1")
        import torch

        torch.set_num_threads(args.threads)

    from jocr.serve.app import create_app
    from jocr.serve.backend import EngineBackend
    from jocr.serve.service import OCRService

    try:
        backend = EngineBackend.from_dir(
            args.model,
            config.max_batch,
            config.max_queue,
            device=args.device,
            dtype=args.dtype,
            quantize=args.quantize,
            max_tiles=args.max_tiles,
        )
    except (OSError, ValueError, KeyError, MemoryError) as exc:
        raise CliError(f"cannot load the model: {' '.join(str(exc).split())}") from None
    config.model_id = backend.model_id
    app = create_app(config, OCRService(backend, config))
    auth = f"{len(config.api_keys)} API key(s)" if config.api_keys else "no authentication"
    print(
        f"jocr serve: model {backend.model_id} from {backend.path}; {auth}; http://{config.host}:{config.port}/"
    )
    from jocr.serve.connections import header_timeout_protocol

    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_level=args.log_level,
        log_config=log_config(args.log_level),
        timeout_graceful_shutdown=5,
        timeout_keep_alive=config.keep_alive_s,
        http=header_timeout_protocol(config.header_timeout_s),
    )
    return 0
