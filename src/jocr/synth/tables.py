"""Synthetic table pages: one table per vector PDF, with its exact HTML and its box on the page (the frozen
table set, data/frozen-test/tables; docs/elements.md).

    with VectorRenderer() as renderer:
        page = table_page(seed, renderer)   # page.pdf, page.html (ground truth), page.region (points)

The tables are the vector pages' own (`jocr.synth.content.make_table`: header rows, colspans and rowspans,
distinct cell texts), typeset by the same Chromium (`jocr.synth.vector.VectorRenderer`) in one of four
styles: `grid` (every cell ruled), `booktabs` (rules above, below and under the header only), `plain` (no
rules at all), `wrapped` (a grid whose first column is narrow enough that its labels wrap over lines).
A paragraph above and below the table makes the region a crop of a page, not the whole page.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, replace
from pathlib import Path

from jocr.synth import vocab
from jocr.synth.content import PageContext, make_table
from jocr.synth.profiles import PROFILES

TABLE_SET_VERSION = 1
STYLES = ("grid", "booktabs", "plain", "wrapped")
_FONTS = ("Liberation Serif", "Liberation Sans", "DejaVu Sans", "DejaVu Serif")
_PAGE = (612, 792)  # US Letter, points
_CSS_PX = 0.75  # points per CSS pixel

_STYLE_CSS = {
    "grid": "td, th { border: 0.6pt solid #111; padding: 2pt 5pt; }",
    "booktabs": "table { border-top: 1pt solid #000; border-bottom: 1pt solid #000; }"
    " td, th { padding: 2pt 8pt; } tr.lasthead th { border-bottom: 0.5pt solid #000; }",
    "plain": "td, th { padding: 2pt 10pt; }",
    "wrapped": "td, th { border: 0.6pt solid #111; padding: 2pt 5pt; }"
    " td:first-child, th:first-child { width: 52pt; max-width: 52pt; }",
}


@dataclass
class TablePage:
    pdf: bytes
    html: str  # the ground truth table
    region: tuple[float, float, float, float]  # the table's box on the page, points, top-left origin
    style: str
    seed: int


def _wrapped_labels(rng: random.Random, table) -> None:
    """Long row labels (two or three words) so that a narrow first column wraps them."""
    for row in table.rows:
        first = row[0]
        if not first.header:
            words = rng.sample(vocab.NOUNS, k=rng.randint(2, 3))
            row[0] = replace(first, text=" ".join(w.capitalize() for w in words) + f" {rng.randint(1, 99)}")


def _document(table_html: str, style: str, font: str, size: float, rng: random.Random) -> str:
    para = " ".join(vocab.NOUNS[rng.randrange(len(vocab.NOUNS))] for _ in range(40)).capitalize() + "."
    after = " ".join(vocab.NOUNS[rng.randrange(len(vocab.NOUNS))] for _ in range(30)).capitalize() + "."
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
@page {{ size: {_PAGE[0]}pt {_PAGE[1]}pt; margin: 0; }}
body {{ margin: 60pt; font-family: '{font}'; font-size: {size:.1f}pt; }}
table {{ border-collapse: collapse; font-size: {size * 0.95:.1f}pt; }}
th {{ font-weight: bold; }}
{_STYLE_CSS[style]}
</style></head><body><div id="body">
<p>{para}</p>
<div data-block="0" id="table">{table_html}</div>
<p>{after}</p>
</div></body></html>"""


def _styled_html(table, style: str) -> str:
    """The table's HTML with the last header row marked (booktabs rules it below)."""
    html = table.markdown()
    if style != "booktabs":
        return html
    head_rows = [i for i, row in enumerate(table.rows) if all(c.header for c in row)]
    if not head_rows:
        return html
    parts = html.split("<tr>")
    k = head_rows[-1] + 1  # parts[0] is "<table>"
    return "<tr>".join(parts[:k]) + '<tr class="lasthead">' + "<tr>".join(parts[k:])


def table_page(seed: int, renderer, style: str | None = None) -> TablePage:
    """One table page for `seed` (deterministic given the Chromium build and fonts)."""
    rng = random.Random(f"jocr-table-{TABLE_SET_VERSION}-{seed}")
    style = style or STYLES[seed % len(STYLES)]
    profile = replace(PROFILES["page"], table_span_p=0.5, table_rows=(3, 8), table_cols=(3, 6))
    table = make_table(rng, PageContext(profile=profile, cjk=False, math=False))
    if style == "wrapped":
        _wrapped_labels(rng, table)
    font, size = rng.choice(_FONTS), rng.choice((9.0, 10.0, 11.0))
    document = _document(_styled_html(table, style), style, font, size, rng)
    page = renderer._page
    # Laid out at the printed page's width, for print: the box read here is the box the PDF shows.
    page.set_viewport_size({"width": round(_PAGE[0] / _CSS_PX), "height": round(_PAGE[1] / _CSS_PX)})
    page.emulate_media(media="print")
    page.set_content(document, wait_until="load")
    rect = page.evaluate(
        "() => { const r = document.querySelector('#table table').getBoundingClientRect();"
        " return [r.left, r.top, r.right, r.bottom]; }"
    )
    pdf = page.pdf(width=f"{_PAGE[0] / 72:.4f}in", height=f"{_PAGE[1] / 72:.4f}in", print_background=True,
                   page_ranges="1")  # fmt: skip
    region = tuple(round(v * _CSS_PX, 2) for v in rect)
    return TablePage(pdf=pdf, html=table.markdown(), region=region, style=style, seed=seed)


def write_table_set(outdir: Path, count: int, first_seed: int = 0) -> dict:
    """`count` table pages into `outdir`: pdfs/<id>.pdf and manifest.jsonl (id, pdf, region, style, html,
    sha256 of the PDF's first 16 hex digits). Returns the summary written to manifest.json."""
    from jocr.synth.vector import VectorRenderer

    outdir = Path(outdir)
    (outdir / "pdfs").mkdir(parents=True, exist_ok=True)
    rows = []
    with VectorRenderer() as renderer:
        for seed in range(first_seed, first_seed + count):
            page = table_page(seed, renderer)
            name = f"table_{seed:03d}"
            (outdir / "pdfs" / f"{name}.pdf").write_bytes(page.pdf)
            rows.append({
                "id": name, "pdf": f"pdfs/{name}.pdf", "region": list(page.region), "unit": "pt",
                "style": page.style, "seed": seed, "html": page.html,
                "sha256": hashlib.sha256(page.pdf).hexdigest()[:16],
            })  # fmt: skip
    with open(outdir / "manifest.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {"version": TABLE_SET_VERSION, "count": count, "first_seed": first_seed,
               "styles": {s: sum(r["style"] == s for r in rows) for s in STYLES}}  # fmt: skip
    (outdir / "manifest.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary
