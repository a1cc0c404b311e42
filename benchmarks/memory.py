"""Peak memory (RSS) of parsing a long PDF versus a short one: pages are rendered lazily, so it stays flat.

    .venv/bin/python benchmarks/memory.py                      # 20 vs 500 pages, a tiny random model
    .venv/bin/python benchmarks/memory.py --model models --pages 20 200 --max-tokens 64
    .venv/bin/python benchmarks/memory.py --page-size 306 396 --max-tokens 4   # quicker on a busy machine

Each size runs in a fresh Python process (`jocr.parse` on a generated US Letter PDF at 144 dpi, with the
DeepSeek-OCR page views when the model uses them); the process reports its peak RSS (getrusage) and its RSS
once the model is loaded. The goal: the longest document's peak within 1.5x of the shortest one's.
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


def child(pdf: str, model_dir: str, max_tokens: int, batch_size: int) -> None:
    import jocr
    from jocr.pipeline import iter_documents

    model = jocr.load_model(model_dir)
    loaded = rss_mb()
    start = time.perf_counter()
    pages = 0
    for doc in iter_documents([pdf], model, max_tokens=max_tokens, batch_size=batch_size):
        assert doc.ok, doc.error
        pages += len(doc.pages)
    elapsed = time.perf_counter() - start
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
    parser.add_argument("--child", nargs=2, metavar=("PDF", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.max_tokens, args.batch_size)
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
            ]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))

    w, h = args.page_size
    print(
        f"model: {args.model or 'tiny random'}; pages {w}x{h} pt at 144 dpi; "
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
