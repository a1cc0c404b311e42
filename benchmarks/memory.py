"""Peak memory (RSS) of parsing a long PDF versus a short one: pages are rendered lazily, so it stays flat.

    .venv/bin/python benchmarks/memory.py                      # 20 vs 500 pages, a tiny random model
    .venv/bin/python benchmarks/memory.py --model models --pages 20 200 --max-tokens 64
    .venv/bin/python benchmarks/memory.py --page-size 306 396 --max-tokens 4   # quicker on a busy machine
    .venv/bin/python benchmarks/memory.py --reader             # the same through the server's Reader endpoint

Each size runs in a fresh Python process (`jocr.parse` on a generated US Letter PDF at 144 dpi, with the
DeepSeek-OCR page views when the model uses them); the process reports its peak RSS (getrusage) and its RSS
once the model is loaded. With `--reader` the process serves the app in-process and POSTs the PDF (base64)
to the Reader endpoint (`POST /`), which reads it on the same streaming pipeline. The goal: the longest
document's peak within 1.5x of the shortest one's.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "documents"))  # the byte-level PDF writer used by the tests


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(pdf: str, model_dir: str, max_tokens: int, batch_size: int, reader: bool) -> None:
    import jocr

    model = jocr.load_model(model_dir)
    if reader:
        return reader_child(pdf, model, max_tokens, batch_size)
    from jocr.pipeline import iter_documents

    loaded = rss_mb()
    start = time.perf_counter()
    pages = 0
    for doc in iter_documents([pdf], model, max_tokens=max_tokens, batch_size=batch_size):
        assert doc.ok, doc.error
        pages += len(doc.pages)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"pages": pages, "loaded_mb": loaded, "peak_mb": peak, "seconds": elapsed}))


def reader_child(pdf: str, model, max_tokens: int, batch_size: int) -> None:
    """The whole PDF through `POST /` of the app, served in this process."""
    import base64

    from starlette.testclient import TestClient

    from jocr.documents.pages import open_source
    from jocr.serve.app import create_app
    from jocr.serve.backend import EngineBackend
    from jocr.serve.config import ServeConfig
    from jocr.serve.service import OCRService

    data = Path(pdf).read_bytes()
    with open_source(pdf) as src:
        pages = src.num_pages
        pixels = sum(src.page_pixels(i) for i in range(pages))
    # Admission counts every page of a Reader request and reserves every selected page's pixels (an upper
    # bound, docs/serving.md): room for all of them, and no page limit, so the memory is the pipeline's.
    config = ServeConfig(
        max_batch=batch_size,
        max_queue=pages,
        max_pages=pages,
        max_request_pixels=pixels,
        max_server_pixels=pixels,
        default_max_tokens=max_tokens,
        request_timeout_s=3600.0,
        allowed_hosts=("testserver",),  # the TestClient's Host header
    )
    backend = EngineBackend.from_loaded(model, config.max_batch, config.max_queue, model_id="jocr")
    service = OCRService(backend, config)
    body = {"pdf": base64.b64encode(data).decode()}
    with TestClient(create_app(config, service)) as client:
        loaded = rss_mb()
        start = time.perf_counter()
        response = client.post("/", json=body, headers={"Accept": "application/json"})
        elapsed = time.perf_counter() - start
    assert response.status_code == 200, response.text
    pages = response.json()["usage"]["pages"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"pages": pages, "loaded_mb": loaded, "peak_mb": peak, "seconds": elapsed}))


def tiny_model(directory: Path) -> Path:
    from jocr.config import tiny_config
    from jocr.model import OCRModel
    from jocr.tokenizer import Tokenizer

    OCRModel(tiny_config()).init_weights(seed=0).save_pretrained(directory)
    Tokenizer.byte_level().save(directory / "tokenizer.json")
    return directory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, nargs="+", default=[20, 500])
    parser.add_argument("--model", help="model directory (default: a tiny random model)")
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument(
        "--page-size",
        type=int,
        nargs=2,
        default=[612, 792],
        metavar=("W", "H"),
        help="points (default Letter)",
    )
    parser.add_argument("--reader", action="store_true", help="through the Reader endpoint (POST /)")
    parser.add_argument("--child", nargs=2, metavar=("PDF", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.max_tokens, args.batch_size, args.reader)
        return 0

    from pdf_fixtures import text_pdf

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model_dir = args.model or str(tiny_model(tmp / "model"))
        rows = []
        for n in args.pages:
            pdf = tmp / f"doc{n}.pdf"
            texts = [f"Page {i + 1} of {n}: the quick brown fox" for i in range(n)]
            pdf.write_bytes(text_pdf(texts, size=tuple(args.page_size)))
            cmd = [
                sys.executable,
                __file__,
                "--child",
                str(pdf),
                model_dir,
                "--max-tokens",
                str(args.max_tokens),
                "--batch-size",
                str(args.batch_size),
                *(["--reader"] if args.reader else []),
            ]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"{n} pages: failed")
                return 1
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))

    w, h = args.page_size
    print(
        f"{'Reader endpoint' if args.reader else 'jocr.parse'}; model: {args.model or 'tiny random'}; "
        f"pages {w}x{h} pt at 144 dpi; "
        f"max_tokens {args.max_tokens}; batch {args.batch_size}"
    )
    header = ("pages", "RSS after load MB", "peak RSS MB", "growth MB", "s", "pages/s")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (6, 18, 12, 10, 7, 8))))
    for r in rows:
        growth = r["peak_mb"] - r["loaded_mb"]
        rate = r["pages"] / r["seconds"]
        print(
            f"{r['pages']:6d} {r['loaded_mb']:18.1f} {r['peak_mb']:12.1f} {growth:10.1f} "
            f"{r['seconds']:7.1f} {rate:8.2f}"
        )
    ratio = rows[-1]["peak_mb"] / rows[0]["peak_mb"]
    verdict = "within" if ratio <= 1.5 else "OVER"
    long, short = rows[-1]["pages"], rows[0]["pages"]
    print(f"peak RSS {long} pages / {short} pages = {ratio:.3f} ({verdict} the 1.5x goal)")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
