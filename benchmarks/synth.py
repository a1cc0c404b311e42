"""Synthetic page generation speed: pages/s on one core, per profile, split into its stages.

    .venv/bin/python benchmarks/synth.py [--pages 40] [--repeats 3] [--profiles cpu-small,page]

Stages per page: compose (layout + drawing + formulas), tests (writing and validating unit tests with
jocr.checks), degrade (one random-strength degradation), png (encoding the image). "generate" is what a
training loader calls (`generate_page`, validated tests, no degradation, no encoding); "+degrade" adds the
degraded twin; "write" adds PNG encoding of the page, as `jocr synth` does. The best of the repeats is
reported, with the median beside it; times are this process's CPU time (`time.process_time`), so other
load on a shared machine does not count against it.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import time

import torch  # noqa: F401  (import cost paid up front, as in a training process)

from jocr.synth import generate_page, global_seed
from jocr.synth.degrade import degrade
from jocr.synth.page import compose
from jocr.synth.profiles import get_profile
from jocr.synth.testgen import make_tests, validate_tests

GOAL_PAGES_PER_S = 5.0


def _time(fn, items) -> float:
    """CPU seconds of this process (not wall time: the machine is shared, and the goal is per core)."""
    start = time.process_time()
    for item in items:
        fn(item)
    return time.process_time() - start


def bench_profile(profile: str, pages: int, repeats: int, offset: int) -> dict[str, list[float]]:
    prof = get_profile(profile)
    seeds = [global_seed("train", offset + i) for i in range(pages)]
    comps = [compose(s, prof) for s in seeds]  # warm caches (fonts, formula renders of these pages excluded)
    results: dict[str, list[float]] = {
        k: [] for k in ("compose", "tests", "degrade", "png", "generate", "+degrade")
    }
    for r in range(repeats):
        seeds = [global_seed("train", offset + (r + 1) * pages + i) for i in range(pages)]
        results["compose"].append(_time(lambda s: compose(s, prof), seeds) / pages)
        comps = [compose(s, prof) for s in seeds]

        def tests(comp):
            records = make_tests(comp, random.Random(0), "x.png", "x")
            validate_tests(records, comp.markdown)

        results["tests"].append(_time(tests, comps) / pages)
        results["degrade"].append(_time(lambda c: degrade(c.image, 0.6, random.Random(0)), comps) / pages)
        results["png"].append(_time(lambda c: c.image.save(io.BytesIO(), format="PNG"), comps) / pages)
        seeds = [global_seed("train", offset + 10_000 + (r + 1) * pages + i) for i in range(pages)]
        results["generate"].append(_time(lambda s: generate_page(s, profile), seeds) / pages)
        results["+degrade"].append(_time(lambda s: generate_page(s, profile, degrade=True), seeds) / pages)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profiles", default="cpu-lines,cpu-small,page,dense")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"one process, one thread, CPU time; {args.pages} pages x {args.repeats} repeats per profile;"
        f" cpus={os.cpu_count()}"
    )
    print(
        f"{'profile':<10} {'stage':<9} {'cpu ms/page':>12} {'median':>8} {'pages/s':>8} {'vs goal 5/s':>11}"
    )
    for i, profile in enumerate(args.profiles.split(",")):
        results = bench_profile(profile, args.pages, args.repeats, offset=1_000_000 * (i + 1))
        for stage, times in results.items():
            best, median = min(times), statistics.median(times)
            rate = 1.0 / best
            ratio = f"{rate / GOAL_PAGES_PER_S:.1f}x" if stage in ("generate", "+degrade") else ""
            print(
                f"{profile:<10} {stage:<9} {best * 1000:>12.1f} {median * 1000:>8.1f}"
                f" {rate:>8.1f} {ratio:>11}"
            )
        write = min(results["generate"]) + min(results["png"])
        print(
            f"{profile:<10} {'write':<9} {write * 1000:>12.1f} {'':>8}"
            f" {1 / write:>8.1f} {1 / write / GOAL_PAGES_PER_S:>10.1f}x"
        )


if __name__ == "__main__":
    main()
