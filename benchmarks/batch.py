"""Pages/s of `jocr batch` with 1 and 2 inference actors beside `jocr parse`, on the same pages.

    .venv/bin/python benchmarks/batch.py                          # bundled model, 4 documents x 2 pages
    .venv/bin/python benchmarks/batch.py --docs 8 --pages 2 --max-tokens 64 --model DIR

Documents are generated text PDFs (the tests' byte-level writer), so every run reads the same pages. One
local Ray instance (`--num-cpus`, default all cores) serves both batch runs; its start-up is timed apart.
Each batch row's time is the whole job: actors starting and loading the model, rendering, reading and
writing, so short runs understate the steady rate. Parse runs in this process with torch's default threads;
one actor gets the same threads, two actors split them. Retries are off (`--retries 0`) so that every
system does the same work: one greedy reading per page. Prints the machine's load average beside the
numbers, since other processes on the machine share the cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "documents"))  # the byte-level PDF writer used by the tests

from pdf_fixtures import text_pdf  # noqa: E402

WORDS = "the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches".split()


def make_inputs(folder: Path, docs: int, pages: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for d in range(docs):
        texts = [" ".join(WORDS[(d + p + i) % len(WORDS)] for i in range(8)) for p in range(pages)]
        path = folder / f"doc{d}.pdf"
        path.write_bytes(text_pdf(texts))
        paths.append(str(path))
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="model directory (default: the bundled models/)")
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--pages", type=int, default=2, help="pages per document")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count())
    args = parser.parse_args()

    import ray

    import jocr
    from jocr.bulk import BatchConfig, PageSettings, run_batch

    work = Path(tempfile.mkdtemp(prefix="jocr-batch-bench-"))
    inputs = make_inputs(work / "in", args.docs, args.pages)
    total = args.docs * args.pages
    threads = os.cpu_count() or 1
    rows = []

    model = jocr.load_model(args.model)
    start = time.perf_counter()
    jocr.parse(inputs, model=model, max_tokens=args.max_tokens, batch_size=args.batch_size)
    rows.append(("jocr parse (1 process)", time.perf_counter() - start, os.getloadavg()[0]))

    start = time.perf_counter()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    ray_start = time.perf_counter() - start
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    render_cpus = 0.5
    for actors in (1, 2):
        cpus = (args.num_cpus - render_cpus) / actors
        settings = PageSettings(
            model=args.model,
            max_tokens=args.max_tokens,
            batch_size=args.batch_size,
            retries=0,
            threads=max(1, threads // actors),
        )
        config = BatchConfig(
            inputs=inputs,
            output=str(work / f"out{actors}"),
            settings=settings,
            actors=actors,
            cpus_per_actor=cpus,
            render_cpus=render_cpus,
            quiet=True,
        )
        summary = run_batch(config)
        assert summary.pages == total and summary.failed == 0, summary.line()
        rows.append((f"jocr batch, {actors} actor(s)", summary.seconds, os.getloadavg()[0]))
    ray.shutdown()

    print(
        f"{total} pages ({args.docs} documents x {args.pages}), max_tokens {args.max_tokens}, "
        f"batch size {args.batch_size}, {os.cpu_count()} cores; Ray start-up {ray_start:.1f} s (not counted)"
    )
    print("| system | seconds | pages/s | load average (1 min) after |")
    print("|---|---|---|---|")
    for name, seconds, load in rows:
        print(f"| {name} | {seconds:.1f} | {total / seconds:.3f} | {load:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
