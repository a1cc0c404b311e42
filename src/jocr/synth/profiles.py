"""Page profiles: what a synthetic page looks like and holds, one frozen dataclass each."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SynthProfile:
    name: str
    # Fixed page size (width, height), or None for document pages whose long side is drawn from `long_side`.
    size: tuple[int, int] | None = None
    long_side: tuple[int, int] = (1024, 1600)
    body_px: tuple[int, int] = (20, 26)  # body font size in pixels (DejaVu cap height is ~0.73 of it)
    margin_px: tuple[int, int] = (16, 28)
    blocks: tuple[int, int] = (1, 4)  # target number of content blocks (`fill` pages stop when full)
    fill: bool = False
    kind_weights: dict[str, float] = field(
        default_factory=lambda: {
            "heading": 0.2,
            "paragraph": 0.35,
            "list": 0.15,
            "table": 0.15,
            "formula": 0.15,
        }
    )
    max_markdown_chars: int = 500
    sentences: tuple[int, int] = (1, 2)
    sentence_words: int = 10
    list_items: tuple[int, int] = (2, 3)
    math_page_p: float = 0.5  # share of pages that may hold formulas (the rest may print `$` amounts)
    inline_math_p: float = 0.3
    table_rows: tuple[int, int] = (2, 4)  # body rows
    table_cols: tuple[int, int] = (2, 4)
    table_header_p: float = 0.7
    table_span_p: float = 0.0
    table_min_px: int = 20  # tables shrink their font to fit, but not below this
    caption_p: float = 0.0  # share of tables with a caption above them
    two_column_p: float = 0.0
    furniture_p: float = 0.0  # share of pages with a running header / footer / page number
    zh_p: float = 0.0  # share of Chinese pages
    lines_only: bool = False  # cpu-lines: short single lines instead of full blocks
    heading_levels: tuple[int, ...] = (1, 2, 3)


PROFILES: dict[str, SynthProfile] = {
    "cpu-lines": SynthProfile(
        name="cpu-lines",
        size=(384, 384),
        body_px=(22, 30),
        margin_px=(20, 40),
        blocks=(1, 3),
        kind_weights={"paragraph": 0.7, "table": 0.15, "formula": 0.15},
        max_markdown_chars=200,
        table_rows=(1, 2),
        table_cols=(2, 3),
        table_min_px=22,
        lines_only=True,
    ),
    "cpu-small": SynthProfile(
        name="cpu-small",
        size=(384, 384),
        furniture_p=0.1,
    ),
    "page": SynthProfile(
        name="page",
        body_px=(16, 22),
        margin_px=(60, 110),
        blocks=(6, 40),
        fill=True,
        kind_weights={"heading": 0.12, "paragraph": 0.45, "list": 0.1, "table": 0.18, "formula": 0.15},
        max_markdown_chars=8000,
        sentences=(2, 6),
        sentence_words=18,
        list_items=(2, 5),
        math_page_p=0.6,
        inline_math_p=0.25,
        table_rows=(3, 9),
        table_cols=(3, 6),
        table_header_p=0.85,
        table_span_p=0.4,
        table_min_px=14,
        caption_p=0.5,
        two_column_p=0.35,
        furniture_p=0.7,
        zh_p=0.2,
    ),
    "dense": SynthProfile(
        name="dense",
        body_px=(16, 20),
        margin_px=(50, 90),
        blocks=(8, 40),
        fill=True,
        kind_weights={"heading": 0.06, "paragraph": 0.14, "list": 0.03, "table": 0.42, "formula": 0.35},
        max_markdown_chars=9000,
        sentences=(1, 3),
        sentence_words=16,
        math_page_p=1.0,
        inline_math_p=0.5,
        table_rows=(3, 10),
        table_cols=(3, 7),
        table_header_p=0.9,
        table_span_p=0.5,
        table_min_px=14,
        caption_p=0.4,
        two_column_p=0.2,
        furniture_p=0.5,
        zh_p=0.15,
    ),
}


# Formula crops for a learned formula reader: one to three display formulas on a small page (rendered by
# mathtext, scan degradations with `jocr synth --degrade`), the target each formula's LaTeX in `$$..$$` as
# the templates write it (the spelling `jocr.checks.formula.normalise_latex` keeps).
PROFILES["formula"] = SynthProfile(
    name="formula",
    size=(384, 384),
    body_px=(20, 30),
    margin_px=(16, 40),
    blocks=(1, 3),
    kind_weights={"formula": 1.0},
    max_markdown_chars=600,
    math_page_p=1.0,
    inline_math_p=0.0,
)

# Vector pages (jocr.synth.vector): the `page` profile's content, typeset by Chromium into real PDFs.
PROFILES["vector"] = SynthProfile(**{**PROFILES["page"].__dict__, "name": "vector", "caption_p": 0.6})


def get_profile(name: str) -> SynthProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown synth profile {name!r}; choose from {', '.join(PROFILES)}") from None
