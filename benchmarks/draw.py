"""What `jocr parse --draw` adds to a parse, per page: in one process with one loaded model, each repeat
parses every PDF (`jocr.parse`, the CLI's defaults) and then does what `--draw` does for its pages (render
the page again, `jocr.layout.draw.draw_tree`, write the PNG with `save_drawn`), timing both; a warm-up
pass first, medians over --repeats. Parse and draw alternate document by document, so both see the same
load on a shared machine.

    .venv/bin/python benchmarks/draw.py                       # 6 born-digital pages of data/frozen-real
    .venv/bin/python benchmarks/draw.py --repeats 5 --pdf a.pdf --pdf b.pdf
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import jocr
from jocr.documents.pages import LoadOptions, open_source
from jocr.layout.draw import draw_tree, save_drawn
from jocr.pipeline import load_model

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PDFS = [
    ROOT / "data" / "frozen-real" / "pdfs" / "pdf" / name
    for name in (
        "rintro-p007.pdf",
        "amsldoc-p15.pdf",
        "eduzh-p09.pdf",
        "psnfss2e-p3.pdf",
        "refman-p0410.pdf",
        "ltnews35-p1.pdf",
    )
]
STEPS = ("parse", "render", "draw_tree", "png")


def one_pass(pdfs: list[Path], model, out: Path) -> dict[str, float]:
    """Seconds of each step over all pages, one pass."""
    total = dict.fromkeys(STEPS, 0.0)
    for pdf in pdfs:
        start = time.perf_counter()
        doc = jocr.parse(str(pdf), model=model)
        total["parse"] += time.perf_counter() - start
        with open_source(str(pdf), LoadOptions()) as source:  # as `jocr parse --draw` opens it again
            for page in doc.pages:
                if page.tree is None or page.error is not None:
                    continue
                t0 = time.perf_counter()
                image = source.render(page.page - 1)
                t1 = time.perf_counter()
                drawn = draw_tree(image, page.tree)
                t2 = time.perf_counter()
                save_drawn(drawn, out / f"{pdf.stem}_p{page.page}_layout.png")
                t3 = time.perf_counter()
                total["render"] += t1 - t0
                total["draw_tree"] += t2 - t1
                total["png"] += t3 - t2
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", type=Path, action="append", help="PDF files (default: 6 frozen-real pages)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pdfs = args.pdf or DEFAULT_PDFS
    pages = 0
    for pdf in pdfs:
        with open_source(str(pdf), LoadOptions()) as source:
            pages += source.num_pages
    model = load_model(None)
    with tempfile.TemporaryDirectory() as out:
        one_pass(pdfs, model, Path(out))  # warm-up
        passes = [one_pass(pdfs, model, Path(out)) for _ in range(args.repeats)]
    print(f"{len(pdfs)} file(s), {pages} page(s), {args.repeats} repeats after a warm-up pass")
    for step in STEPS:
        runs = [p[step] for p in passes]
        med = statistics.median(runs)
        print(f"{step:10s}: median {med:.3f} s ({1000 * med / pages:.0f} ms/page); runs "
              + ", ".join(f"{t:.3f}" for t in runs))  # fmt: skip
    added = [p["render"] + p["draw_tree"] + p["png"] for p in passes]
    ratios = [a / p["parse"] for a, p in zip(added, passes, strict=True)]
    median_added = statistics.median(added)
    print(
        f"--draw adds: median {median_added:.3f} s ({1000 * median_added / pages:.0f} ms/page), "
        f"{100 * statistics.median(ratios):.1f}% of the parse (per pass: "
        + ", ".join(f"{100 * r:.1f}%" for r in ratios)
        + ")"
    )


if __name__ == "__main__":
    main()
