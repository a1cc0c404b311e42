"""Figures cut out of pages (`jocr parse --figures`): figures found per page, and the time `--figures files`
and `--draw` add to a page's parse, on real PDF pages with figures (Debian documentation PDFs).

    .venv/bin/python benchmarks/figures.py                      # the pages below, 3 repeats
    .venv/bin/python benchmarks/figures.py --repeats 5 --out figs/

Each page is parsed alone (`jocr.parse(path, pages=[n])`, the bundled models, 144 dpi) with figures "none"
and "files" in turn (files: the PNGs written as the CLI writes them), after one warm-up parse of each kind;
`--draw` is timed as the CLI does it (the page rendered again, its tree drawn, the PNG written). Times are
medians over the repeats; the cut PNGs are kept under --out to be looked at.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import jocr
from jocr.documents.pages import LoadOptions, open_source
from jocr.layout.draw import draw_tree
from jocr.layout.figures import save_page_figures
from jocr.pipeline import load_model

TEXLIVE = Path("/usr/share/doc/texlive-doc/latex")
ROOT = Path(__file__).resolve().parents[1]
# (file, page, figures present as counted by eye: a panel drawn apart counts as one)
PAGES = [
    (TEXLIVE / "bodeplot/bodeplot.pdf", 3, 2),
    (TEXLIVE / "bodeplot/bodeplot.pdf", 6, 3),
    (TEXLIVE / "bodeplot/bodeplot.pdf", 10, 4),
    (TEXLIVE / "bodeplot/bodeplot.pdf", 13, 2),
    (TEXLIVE / "hyperref/paper.pdf", 2, 3),
    (TEXLIVE / "hyperref/slides.pdf", 12, 2),
    (TEXLIVE / "graphics/grfguide.pdf", 12, 5),
    (TEXLIVE / "pinoutikz/pinoutikz_doc_en.pdf", 3, 3),
    (ROOT / "data/frozen-real/pdfs/pdf/eduzh-p07.pdf", 1, 1),
    (ROOT / "data/frozen-real/pdfs/pdf/eduzh-p09.pdf", 1, 0),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "jocr-figures-bench"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = load_model(None)
    pages = [(f, p, n) for f, p, n in PAGES if f.exists()]
    first = pages[0]
    for mode in ("none", "files"):  # warm-up: models, fonts, PDFium
        jocr.parse(str(first[0]), pages=[first[1]], model=model, figures=mode)
    rows = []
    for path, number, present in pages:
        times: dict[str, list[float]] = {"none": [], "files": [], "draw": [], "cut": []}
        found = 0
        for _ in range(args.repeats):
            for mode in ("none", "files"):
                t0 = time.perf_counter()
                doc = jocr.parse(str(path), pages=[number], model=model, figures=mode)
                stem = f"{path.stem}"
                if mode == "files":
                    save_page_figures(doc.pages, out, stem, mode)
                times[mode].append(time.perf_counter() - t0)
                if mode == "files":
                    page = doc.pages[0]
                    found = len(page.figures)
                    times["cut"].append(page.timings.get("figures_s", 0.0))
                    t0 = time.perf_counter()
                    with open_source(str(path), LoadOptions(), name=str(path)) as source:
                        image = source.render(number - 1)
                    draw_tree(image, page.tree).save(out / f"{stem}_p{number}_layout.png")
                    times["draw"].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"file": str(path), "page": number, "present": present, "found": found,
                     **{f"{k}_s": round(v, 4) for k, v in med.items()}})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    base = statistics.median(r["none_s"] for r in rows)
    files = statistics.median(r["files_s"] - r["none_s"] for r in rows)
    cut = statistics.median(r["cut_s"] for r in rows)
    draw = statistics.median(r["draw_s"] for r in rows)
    print(
        json.dumps(
            {
                "pages": len(rows),
                "present": sum(r["present"] for r in rows),
                "found": sum(r["found"] for r in rows),
                "parse_none_median_s": round(base, 3),
                "files_added_median_s": round(files, 4),
                "files_added_pct": round(100 * files / base, 2),
                "figures_step_median_s": round(cut, 4),
                "figures_step_pct": round(100 * cut / base, 2),
                "draw_median_s": round(draw, 4),
                "draw_pct": round(100 * draw / base, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
