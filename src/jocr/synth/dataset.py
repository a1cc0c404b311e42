"""Write synthetic pages to disk in the olmOCR-Bench layout, split by seed range.

Layout of OUTDIR:
    pdfs/<name>.png                page images (degraded ones with --degrade); tests name them in `pdf`
    <profile>_<split>.jsonl        the unit tests of all pages (one JSONL file: one benchmark group)
    gt/<name>_pg1_repeat1.md       ground-truth Markdown, in the benchmark's candidate layout, so scoring
                                   `gt` as the outputs must give 100%
    clean/<name>.png               clean twins (only with --degrade)
    meta/<name>.json               block boxes and categories, style, generator version, seed, dropped tests
    manifest.json                  the run: generator version, profile, split, seeds, counts
Seeds: split S uses global seeds SPLIT_BASE[S] + offset, offset in [0, SPLIT_SIZE); the three ranges are
disjoint, so train, val and test never share a page.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jocr.synth.generate import GENERATOR_VERSION, SynthPage, generate_page

SPLIT_SIZE = 1_000_000_000
SPLIT_BASE = {"train": 0, "val": SPLIT_SIZE, "test": 2 * SPLIT_SIZE}

# The frozen test sets: fixed recipes that regenerate byte-identically with this generator version.
FROZEN_TEST_SETS: dict[str, dict[str, Any]] = {
    "cpu-small": {"profile": "cpu-small", "split": "test", "seed": 0, "pages": 200, "degrade": False},
    "page": {"profile": "page", "split": "test", "seed": 0, "pages": 50, "degrade": False},
}


def global_seed(split: str, offset: int) -> int:
    if split not in SPLIT_BASE:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLIT_BASE)}")
    if not 0 <= offset < SPLIT_SIZE:
        raise ValueError(f"seed offset {offset} is outside the split's range [0, {SPLIT_SIZE})")
    return SPLIT_BASE[split] + offset


def split_seeds(split: str, n: int, start: int = 0) -> list[int]:
    """Global seeds of pages `start .. start+n-1` of a split (e.g. the first n validation pages)."""
    if n < 0 or start < 0 or start + n > SPLIT_SIZE:
        raise ValueError(
            f"seed offsets {start}..{start + n - 1} are outside the split's range [0, {SPLIT_SIZE})"
        )
    return [global_seed(split, offset) for offset in range(start, start + n)]


def split_of(seed: int) -> str:
    for name, base in SPLIT_BASE.items():
        if base <= seed < base + SPLIT_SIZE:
            return name
    raise ValueError(f"seed {seed} belongs to no split")


def iter_pages(
    split: str,
    start: int,
    count: int,
    profile: str = "cpu-small",
    degrade: bool | float = False,
    validate: bool = True,
) -> Iterator[SynthPage]:
    """Pages `start .. start+count-1` of a split, in order (what a training loader iterates)."""
    if start + count > SPLIT_SIZE:
        raise ValueError(f"seeds {start}..{start + count - 1} run past the split's range")
    for offset in range(start, start + count):
        yield generate_page(global_seed(split, offset), profile=profile, degrade=degrade, validate=validate)


@dataclass
class WriteSummary:
    pages: int
    tests: int
    tests_dropped: int
    jsonl: Path


def _write_one(args: tuple[str, int, str, bool | float]) -> tuple[str, list[dict[str, Any]], int]:
    outdir, seed, profile, degrade = args
    page = generate_page(seed, profile=profile, degrade=degrade)
    root = Path(outdir)
    name = page.meta["name"]
    page.image.save(root / "pdfs" / f"{name}.png", optimize=False)
    if page.clean is not None:
        page.clean.save(root / "clean" / f"{name}.png", optimize=False)
    (root / "gt" / f"{name}_pg1_repeat1.md").write_text(page.markdown + "\n", encoding="utf-8")
    meta = {**page.meta, "dropped_tests": page.dropped_tests}
    (root / "meta" / f"{name}.json").write_text(
        json.dumps(meta, ensure_ascii=False, sort_keys=True, indent=1) + "\n", encoding="utf-8"
    )
    return name, page.tests, len(page.dropped_tests)


def write_dataset(
    outdir: str | os.PathLike,
    pages: int,
    seed: int = 0,
    split: str = "train",
    profile: str = "cpu-small",
    degrade: bool | float = False,
    workers: int = 1,
) -> WriteSummary:
    """Generate `pages` pages (seed offsets from `seed`) into `outdir`; same arguments, same bytes."""
    if pages < 1:
        raise ValueError("pages must be at least 1")
    seeds = [global_seed(split, seed + i) for i in range(pages)] if seed + pages <= SPLIT_SIZE else None
    if seeds is None:
        raise ValueError(
            f"seed offsets {seed}..{seed + pages - 1} run past the split's range [0, {SPLIT_SIZE})"
        )
    root = Path(outdir)
    for sub in ("pdfs", "gt", "meta") + (("clean",) if degrade is not False else ()):
        (root / sub).mkdir(parents=True, exist_ok=True)
    jobs = [(str(root), s, profile, degrade) for s in seeds]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(_write_one, jobs, chunksize=8))
    else:
        results = [_write_one(job) for job in jobs]
    jsonl = root / f"{profile}_{split}.jsonl"
    n_tests = n_dropped = 0
    with open(jsonl, "w", encoding="utf-8") as fh:
        for _, tests, dropped in results:
            n_tests += len(tests)
            n_dropped += dropped
            for test in tests:
                fh.write(json.dumps(test, ensure_ascii=False) + "\n")
    manifest = {
        "generator_version": GENERATOR_VERSION,
        "profile": profile,
        "split": split,
        "seed_offsets": [seed, seed + pages - 1],
        "global_seeds": [seeds[0], seeds[-1]],
        "pages": pages,
        "degrade": degrade,
        "tests": n_tests,
        "tests_dropped": n_dropped,
        "names": [name for name, _, _ in results],
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return WriteSummary(pages=pages, tests=n_tests, tests_dropped=n_dropped, jsonl=jsonl)
