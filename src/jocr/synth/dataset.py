"""Write synthetic pages to disk in the olmOCR-Bench layout, split by seed range.

Layout of OUTDIR:
    pdfs/<name>.png                page images (degraded ones with --degrade); tests name them in `pdf`;
                                   with page_format "pdf", one-page PDFs `pdfs/<name>.pdf` instead
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

import hashlib
import io
import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jocr.synth.generate import GENERATOR_VERSION, PAGE_FORMATS, SynthPage, generate_page

SPLIT_SIZE = 1_000_000_000
SPLIT_BASE = {"train": 0, "val": SPLIT_SIZE, "test": 2 * SPLIT_SIZE}

# The frozen test sets: fixed recipes that regenerate byte-identically with this generator version.
FROZEN_TEST_SETS: dict[str, dict[str, Any]] = {
    "cpu-small": {"profile": "cpu-small", "split": "test", "seed": 0, "pages": 200, "degrade": False},
    "page": {"profile": "page", "split": "test", "seed": 0, "pages": 50, "degrade": False},
    # Vector PDFs (jocr.synth.vector), committed as written: data/frozen-test/vector/.
    "vector": {"profile": "vector", "split": "test", "seed": 0, "pages": 8, "degrade": False},
    # Documents to ask (jocr.synth.docqa), committed as written: data/frozen-test/docqa/.
    "docqa": {"profile": "docqa", "split": "test", "seed": 0, "pages": 16, "degrade": False},
    # Charts and tables to ask (jocr.synth.charts), committed as written: data/frozen-test/docqa-charts/.
    "docqa-charts": {"profile": "docqa-charts", "split": "test", "seed": 0, "pages": 20, "degrade": False},
    # Prose documents to ask (jocr.synth.prose_qa), committed as written: data/frozen-test/docqa-prose/.
    "docqa-prose": {"profile": "docqa-prose", "split": "test", "seed": 0, "pages": 16, "degrade": False},
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
    manifest: dict[str, Any]


def library_versions() -> dict[str, str]:
    """Versions that decide the image bytes (text outputs depend only on this package and Python's random)."""
    import matplotlib
    import PIL
    from PIL import features

    return {
        "pillow": PIL.__version__,
        "freetype": str(features.version("freetype2")),
        "zlib": str(features.version("zlib")),
        "matplotlib": matplotlib.__version__,
    }


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


# PDF pages carry a fixed date so a page gives the same bytes (Pillow stamps the current time otherwise).
_PDF_DATE = time.gmtime(946684800)  # 2000-01-01


def page_files(page: SynthPage, page_format: str = "png") -> dict[str, bytes]:
    """The bytes written for one page, keyed by kind: image, clean, markdown, tests, meta.

    With page_format "pdf" the page is a one-page PDF holding the image at 144 dpi (so rendering it at 144
    dpi, as the parser does, gives back the same pixel size; Pillow embeds the image as JPEG).
    """
    out: dict[str, bytes] = {}
    buffer = io.BytesIO()
    if page_format == "pdf":
        page.image.save(
            buffer, format="PDF", resolution=144.0, quality=95, creationDate=_PDF_DATE, modDate=_PDF_DATE
        )
    else:
        page.image.save(buffer, format="PNG")
    out["image"] = buffer.getvalue()
    if page.clean is not None:
        buffer = io.BytesIO()
        page.clean.save(buffer, format="PNG")
        out["clean"] = buffer.getvalue()
    out["markdown"] = (page.markdown + "\n").encode("utf-8")
    out["tests"] = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in page.tests).encode("utf-8")
    meta = {**page.meta, "dropped_tests": page.dropped_tests}
    out["meta"] = (json.dumps(meta, ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode("utf-8")
    return out


def page_digests(files: dict[str, bytes]) -> dict[str, str]:
    return {kind: _digest(data) for kind, data in files.items()}


def _write_one(args: tuple[str, int, str, bool | float, str]) -> tuple[str, bytes, int, int, dict[str, str]]:
    outdir, seed, profile, degrade, page_format = args
    page = generate_page(seed, profile=profile, degrade=degrade, page_format=page_format)
    root = Path(outdir)
    name = page.meta["name"]
    files = page_files(page, page_format)
    (root / "pdfs" / f"{name}.{page_format}").write_bytes(files["image"])
    if "clean" in files:
        (root / "clean" / f"{name}.png").write_bytes(files["clean"])
    (root / "gt" / f"{name}_pg1_repeat1.md").write_bytes(files["markdown"])
    (root / "meta" / f"{name}.json").write_bytes(files["meta"])
    return name, files["tests"], len(page.tests), len(page.dropped_tests), page_digests(files)


def write_dataset(
    outdir: str | os.PathLike,
    pages: int,
    seed: int = 0,
    split: str = "train",
    profile: str = "cpu-small",
    degrade: bool | float = False,
    workers: int = 1,
    page_format: str = "png",
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
    if page_format not in PAGE_FORMATS:
        raise ValueError(f"page_format must be one of {', '.join(PAGE_FORMATS)}, got {page_format!r}")
    jobs = [(str(root), s, profile, degrade, page_format) for s in seeds]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(_write_one, jobs, chunksize=8))
    else:
        results = [_write_one(job) for job in jobs]
    jsonl = root / f"{profile}_{split}.jsonl"
    with open(jsonl, "wb") as fh:
        for _, tests_bytes, _, _, _ in results:
            fh.write(tests_bytes)
    n_tests = sum(r[2] for r in results)
    n_dropped = sum(r[3] for r in results)
    manifest = {
        "generator_version": GENERATOR_VERSION,
        "profile": profile,
        "split": split,
        "seed_offsets": [seed, seed + pages - 1],
        "global_seeds": [seeds[0], seeds[-1]],
        "pages": pages,
        "degrade": degrade,
        "page_format": page_format,
        "tests": n_tests,
        "tests_dropped": n_dropped,
        "libraries": library_versions(),
        # sha256 (first 16 hex digits) of every file written per page: regenerating must reproduce them.
        "digests": {name: digests for name, _, _, _, digests in results},
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return WriteSummary(pages=pages, tests=n_tests, tests_dropped=n_dropped, jsonl=jsonl, manifest=manifest)
