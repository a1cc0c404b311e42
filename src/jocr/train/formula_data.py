"""Training data of the formula reader: formula crops as input strips, in shards.

Four sources: `mathtext` (`jocr.synth.formula_crops`, matplotlib's mathtext), `katex`
(`jocr.synth.katex_crops`, papers' constructs typeset by KaTeX in Chromium), `katex-long` (the same typesetter
on long relation chains and aligned rows, `katex_crops.LONG_CROPS`) and `katex-faces` (papers' formulas with
letters, digits and words in the faces papers are set in, `katex_crops.FACED_CROPS`). Rendering a crop costs
about 11 ms (mathtext) or 20 ms (KaTeX) on one core, as much as a training step of a small batch, so the crops
are drawn once, before training, by worker processes into shards under a run's folder (`shard_0000.pkl`, ...:
a list of (strip, LaTeX) pairs, the strip as `jocr.documents.formula_strip` makes it) and training draws
batches from all of them. Crop k of a source is seeded `<its seed base> + k`, so a run's data is the same
wherever it is drawn and never holds the frozen formula set's seeds or the validation crops'.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
from pathlib import Path

import numpy as np

from jocr.documents.formula_strip import formula_strip

CROP_SEED_BASE = 200_000_000
KATEX_SEED_BASE = 300_000_000
KATEX_LONG_SEED_BASE = 400_000_000
KATEX_FACES_SEED_BASE = 500_000_000
KATEX_SEED_BASES = {"katex": KATEX_SEED_BASE, "katex-long": KATEX_LONG_SEED_BASE,
                    "katex-faces": KATEX_FACES_SEED_BASE}  # fmt: skip
SOURCES = ("mathtext", *KATEX_SEED_BASES)
SHARD_SIZE = 2_000
_KATEX_BATCH = 100  # formulas typeset per page of the browser


def strip_and_latex(seed: int) -> tuple[np.ndarray, str]:
    """Formula crop `seed` (`jocr.synth.formula_crops.formula_crop`) as (input strip, its LaTeX alone)."""
    from jocr.synth.formula_crops import formula_crop

    image, target = formula_crop(seed)
    return formula_strip(image), target.removeprefix("$$\n").removesuffix("\n$$")


def _shard_path(folder: Path, shard: int) -> Path:
    return folder / f"shard_{shard:04d}.pkl"


def katex_strips(seeds, cfg=None) -> list[tuple[np.ndarray, str]]:
    """KaTeX crops of `seeds` (`jocr.synth.katex_crops`, drawn by `cfg`, a `KatexCropConfig`: its default
    when None) as (input strip, LaTeX); a formula KaTeX refuses is left out."""
    from jocr.synth.katex_crops import KatexTypesetter, katex_crops

    seeds, rows = list(seeds), []
    with KatexTypesetter() as renderer:
        for start in range(0, len(seeds), _KATEX_BATCH):
            crops = katex_crops(seeds[start : start + _KATEX_BATCH], renderer, cfg)
            rows.extend((formula_strip(image), latex) for image, latex in crops)
    return rows


def katex_config(source: str):
    """The `KatexCropConfig` a KaTeX source draws its crops by."""
    from jocr.synth.katex_crops import FACED_CROPS, LONG_CROPS, KatexCropConfig

    return {"katex": KatexCropConfig(), "katex-long": LONG_CROPS, "katex-faces": FACED_CROPS}[source]


def render_shard(folder: Path, shard: int, size: int = SHARD_SIZE, source: str = "mathtext") -> Path:
    """Draws crops shard*size ... (shard+1)*size - 1 of `source` and writes them as one shard (skipped if
    present)."""
    path = _shard_path(Path(folder), shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return path
    ks = range(shard * size, (shard + 1) * size)
    if source in KATEX_SEED_BASES:
        rows = katex_strips((KATEX_SEED_BASES[source] + k for k in ks), katex_config(source))
    elif source == "mathtext":
        rows = [strip_and_latex(CROP_SEED_BASE + k) for k in ks]
    else:
        raise ValueError(f"unknown formula crop source {source!r} (one of {', '.join(SOURCES)})")
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))
    tmp.replace(path)  # a shard is whole or absent: an interrupted draw resumes at the missing shards
    return path


def _render(args: tuple[Path, int, int, str]) -> Path:
    return render_shard(*args)


def render_shards(
    folder: Path, crops: int, workers: int = 2, size: int = SHARD_SIZE, source: str = "mathtext"
) -> list[Path]:
    """The shards holding the first `crops` crops of `source` (rounded up to whole shards), drawn where
    missing by `workers` processes."""
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(folder, shard, size, source) for shard in range(-(-crops // size))]
    if workers <= 1:
        return [_render(job) for job in jobs]
    with mp.get_context("spawn").Pool(workers) as pool:
        return list(pool.imap(_render, jobs))


def load_shards(paths: list[Path]) -> list[tuple[np.ndarray, str]]:
    """Every (strip, LaTeX) pair of the shards, in order."""
    rows: list[tuple[np.ndarray, str]] = []
    for path in paths:
        rows.extend(pickle.loads(Path(path).read_bytes()))
    return rows
