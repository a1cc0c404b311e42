"""Speed of the checks: olmOCR-Bench scoring of the shipped sample (no browser) and GRPO reward throughput.

    .venv/bin/python benchmarks/scoring.py [--sample DIR] [--pages 400] [--repeats 3]

Prints two tables:
1. scoring all 120 tests of the olmOCR-Bench sample, cold (fresh process state: KaTeX context created, caches
   empty) and warm, against the 2 s goal; the official scorer took 11.5 s here with Chromium;
2. rewards per second (CPU and wall clock) on synthetic Markdown pages (paragraphs, an HTML table, display
   and inline formulas, a list) scored against their reference with five unit tests each (present, order,
   table, math, baseline), for exact, lightly and heavily corrupted candidates, against the 200 pages/s goal.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = (
    "the model reads each page and writes clean markdown with tables and formulas while keeping the natural "
    "reading order of columns headers footnotes and captions across scanned and born digital documents"
).split()


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def synthetic_page(rng: random.Random) -> tuple[str, list[dict]]:
    """A realistic page (about 2-3k characters) and five unit tests for it."""
    cols, rows = rng.randint(3, 6), rng.randint(4, 9)
    header = [f"Metric {c}" for c in range(cols)]
    body = [[f"{rng.uniform(0, 100):.1f}" for _ in range(cols)] for _ in range(rows)]
    body = [[f"Row {r}"] + row[1:] for r, row in enumerate(body)]
    table = (
        "<table><tr>"
        + "".join(f"<th>{h}</th>" for h in header)
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in body)
        + "</table>"
    )
    a, b = rng.randint(2, 9), rng.randint(2, 9)
    formula = (
        f"\\frac{{\\partial L}}{{\\partial w_{{{a}}}}} = "
        f"\\sum_{{i=1}}^{{{b}}} x_i \\left( y_i - \\hat{{y}}_i \\right)"
    )
    paras = [_sentence(rng, rng.randint(18, 40)) for _ in range(rng.randint(4, 7))]
    md = (
        f"# Section {a}.{b}\n\n{paras[0]}\n\n{paras[1]} The loss is $L = \\sum_i (y_i - \\hat y_i)^2$.\n\n"
        f"$$\n{formula}\n$$\n\n{table}\n\n" + "\n\n".join(paras[2:]) + "\n\n- first item\n- second item\n"
    )
    first, last = paras[0][:40], paras[-1][:40]
    tests = [
        {"pdf": "s.pdf", "page": 1, "id": "p", "type": "present", "text": paras[1][:60]},
        {"pdf": "s.pdf", "page": 1, "id": "o", "type": "order", "before": first, "after": last},
        {"pdf": "s.pdf", "page": 1, "id": "t", "type": "table", "cell": body[1][1], "top_heading": header[1],
         "left": body[1][0]},
        {"pdf": "s.pdf", "page": 1, "id": "m", "type": "math", "math": formula},
        {"pdf": "s.pdf", "page": 1, "id": "b", "type": "baseline"},
    ]  # fmt: skip
    return md, tests


def corrupt(md: str, rng: random.Random, rate: float) -> str:
    out = []
    for ch in md:
        r = rng.random()
        if r < rate / 2 and ch.isalnum():
            out.append(rng.choice("abcdefghij0123456789"))
        elif r < rate and ch.isalnum():
            continue
        else:
            out.append(ch)
    return "".join(out)


def bench_sample(sample: Path, repeats: int) -> list[tuple[str, float, float]]:
    from jocr.checks.unittests import BaselineTest, load_tests

    def run_once() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        tests = [t for f in sorted(sample.glob("*.jsonl")) for t in load_tests(f)]
        for pdf in sorted(str(p.relative_to(sample / "pdfs")) for p in (sample / "pdfs").rglob("*.pdf")):
            if not any(t.type == "baseline" and t.pdf == pdf for t in tests):
                tests.append(BaselineTest(id=f"{pdf}_baseline", pdf=pdf, page=1, type="baseline"))
        for t in tests:
            md = next((sample / "olmocr_pipeline").glob(f"{t.pdf[:-4]}_pg{t.page}_repeat*.md")).read_text()
            t.run(md)
        assert len(tests) == 120
        return time.perf_counter() - start, time.process_time() - cpu

    cold = run_once()
    warm = sorted(run_once() for _ in range(repeats))[repeats // 2]
    return [("cold (KaTeX context + caches built)", *cold), ("warm (median)", *warm)]


def bench_rewards(n_pages: int, repeats: int) -> list[tuple[str, float, float, float]]:
    from jocr.checks.reward import page_reward
    from jocr.checks.unittests import load_test

    rng = random.Random(0)
    pages = [synthetic_page(rng) for _ in range(n_pages)]
    loaded = [(md, [load_test(t) for t in tests]) for md, tests in pages]
    rows = []
    for label, rate in (("exact copy", 0.0), ("light noise (2%)", 0.02), ("heavy noise (15%)", 0.15)):
        cands = [corrupt(md, random.Random(i), rate) for i, (md, _) in enumerate(loaded)]
        # Each repeat scores fresh string objects with caches cleared, so no run profits from an earlier one.
        walls, cpus, mean_reward = [], [], 0.0
        for _ in range(repeats):
            _clear_caches()
            fresh = [(c + " ")[:-1] for c in cands]
            start, cpu = time.perf_counter(), time.process_time()
            scores = [page_reward(c, md, tests) for c, (md, tests) in zip(fresh, loaded)]
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
            mean_reward = sum(scores) / len(scores)
        rows.append(
            (label, n_pages / statistics.median(cpus), n_pages / statistics.median(walls), mean_reward)
        )
    return rows


def _clear_caches() -> None:
    """Empty every memo the checks keep, except the renders of the references' own formulas."""
    from jocr.checks import reward, table, teds, text
    from jocr.checks.math import default_renderer

    for fn in (text.normalize_text, table.parse_markdown_tables, table.parse_html_tables, teds.teds,
               reward._table_trees):  # fmt: skip
        fn.cache_clear()
    renderer = default_renderer()
    renderer._cache.clear()
    renderer._glyph_cache.clear()


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", default=str(ROOT / "tests" / "data" / "olmocr-bench-sample"))
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sample = Path(args.sample)
    if sample.is_dir():
        print(
            "olmOCR-Bench sample, 120 tests, no browser (goal < 2 s; official scorer with Chromium: 11.5 s)\n"
        )
        print("| run | wall s | CPU s | wall vs goal |\n|---|---|---|---|")
        for label, wall, cpu in bench_sample(sample, args.repeats):
            print(f"| {label} | {wall:.3f} | {cpu:.3f} | {wall / 2.0:.2f}x of budget |")
    else:
        print(f"(sample not found at {sample}; skipping)", file=sys.stderr)
    print(
        f"\nGRPO reward throughput, {args.pages} synthetic pages with 5 unit tests each "
        "(goal >= 200 pages/s)\n"
    )
    print("(pages per CPU-second of this process, V8 thread included, and per wall-clock second; on a shared")
    print(f" machine the wall figure depends on the load; load average at start: {_load()})\n")
    print("| candidates | pages/CPU-s | pages/wall-s | mean reward | CPU vs goal |\n|---|---|---|---|---|")
    for label, cpu_pps, wall_pps, mean_reward in bench_rewards(args.pages, args.repeats):
        print(f"| {label} | {cpu_pps:.0f} | {wall_pps:.0f} | {mean_reward:.3f} | {cpu_pps / 200:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
