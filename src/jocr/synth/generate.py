"""`generate_page(seed, profile, degrade)`: one synthetic page with its exact ground truth and unit tests."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from PIL import Image

from jocr.synth.degrade import degrade as apply_degradation
from jocr.synth.glyphs import GlyphMap
from jocr.synth.page import compose
from jocr.synth.profiles import get_profile
from jocr.synth.testgen import make_tests, validate_tests

# Bump when a change alters any page's bytes for a given (profile, seed): recorded in every page's metadata
# and in the frozen test set's recipe.
GENERATOR_VERSION = "1.4.0"
PAGE_FORMATS = ("png", "pdf")


@dataclass
class SynthPage:
    """A page image, its ground-truth Markdown, olmOCR-Bench unit tests and metadata.

    When degraded, `image` is the degraded page and `clean` its undegraded twin (same ground truth).
    `glyphs` says where each printed character of the clean page lies (`jocr.synth.glyphs`).
    """

    image: Image.Image
    markdown: str
    tests: list[dict[str, Any]]
    meta: dict[str, Any]
    clean: Image.Image | None = None
    dropped_tests: list[dict[str, Any]] = field(default_factory=list)
    glyphs: GlyphMap | None = None


def page_name(profile: str, seed: int) -> str:
    return f"{profile}_{seed:010d}"


def generate_page(
    seed: int,
    profile: str = "cpu-small",
    degrade: bool | float = False,
    validate: bool = True,
    name: str | None = None,
    page_format: str = "png",
) -> SynthPage:
    """Generate one page, deterministically from (profile, seed).

    degrade: False for a clean page; True for a random strength in [0.2, 1]; a float for that strength.
    validate: run every unit test on the ground truth with `jocr.checks` and drop the ones that fail
      (the count is in `meta["tests_dropped"]`); False skips that (faster, for SFT data that ignores tests).
    name: file stem the tests' `pdf` field refers to (`<name>.png`); default `<profile>_<seed>`.
    page_format: "png" or "pdf": the extension of the page file that the tests' `pdf` field names.
    """
    prof = get_profile(profile)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    comp = compose(seed, prof)
    markdown = comp.markdown
    stem = name or page_name(profile, seed)
    if page_format not in PAGE_FORMATS:
        raise ValueError(f"page_format must be one of {', '.join(PAGE_FORMATS)}, got {page_format!r}")
    pdf_name = f"{stem}.{page_format}"
    tests = make_tests(comp, random.Random(f"jocr-synth-tests/{profile}/{seed}"), pdf_name, stem)
    dropped: list[dict[str, Any]] = []
    if validate:
        tests, dropped = validate_tests(tests, markdown)

    blocks = []
    offset = 0
    for placed in comp.blocks:
        block_md = placed.block.markdown()
        blocks.append(
            {
                "category": placed.block.kind,
                "bbox": list(placed.bbox),
                "column": placed.column,
                "md_span": [offset, offset + len(block_md)],
            }
        )
        offset += len(block_md) + 2
    meta: dict[str, Any] = {
        "generator_version": GENERATOR_VERSION,
        "profile": profile,
        "seed": seed,
        "name": stem,
        "width": comp.image.width,
        "height": comp.image.height,
        "columns": comp.columns,
        "language": "zh" if comp.context.cjk else "en",
        "style": asdict(comp.style),
        "blocks": blocks,
        "furniture": [
            {"category": f.item.kind, "bbox": list(f.bbox), "text": f.item.text} for f in comp.furniture
        ],
        "tests_total": len(tests) + len(dropped),
        "tests_dropped": len(dropped),
        "degrade": None,
    }

    image, clean = comp.image, None
    if degrade is not False:
        rng = random.Random(f"jocr-synth-degrade/{profile}/{seed}")
        strength = rng.uniform(0.2, 1.0) if degrade is True else float(degrade)
        image, log = apply_degradation(comp.image, strength, rng)
        clean = comp.image
        meta["degrade"] = log
    return SynthPage(
        image=image,
        markdown=markdown,
        tests=tests,
        meta=meta,
        clean=clean,
        dropped_tests=dropped,
        glyphs=comp.glyphs,
    )
