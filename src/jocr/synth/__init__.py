"""Synthetic document pages with exact ground truth and olmOCR-Bench unit tests (JinaOCRSynth-style).

    from jocr.synth import generate_page
    page = generate_page(seed, profile="cpu-small", degrade=False)
    page.image, page.markdown, page.tests, page.meta, page.clean

Profiles: `cpu-lines`, `cpu-small` (384x384, for the bundled CPU model), `page` (full pages at 144 dpi),
`dense` (packed with tables and formulas). See docs/synth.md.
"""

from jocr.synth.dataset import (
    FROZEN_TEST_SETS,
    SPLIT_BASE,
    SPLIT_SIZE,
    global_seed,
    iter_pages,
    split_of,
    split_seeds,
    write_dataset,
)
from jocr.synth.fonts import FontMissingError
from jocr.synth.generate import GENERATOR_VERSION, SynthPage, generate_page
from jocr.synth.profiles import PROFILES, SynthProfile, get_profile

__all__ = [
    "FROZEN_TEST_SETS",
    "GENERATOR_VERSION",
    "PROFILES",
    "SPLIT_BASE",
    "SPLIT_SIZE",
    "FontMissingError",
    "SynthPage",
    "SynthProfile",
    "generate_page",
    "get_profile",
    "global_seed",
    "iter_pages",
    "split_of",
    "split_seeds",
    "write_dataset",
]
