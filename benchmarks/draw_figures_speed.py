"""What `--draw --figures files` adds to a page's time in `jocr parse`: the CLI itself (`jocr.cli.main`) run
in one process over one-page PDFs, each page parsed as `jocr parse PAGE --figures none` (the control: no
figure search, no overlay) and as `jocr parse PAGE --draw --figures files` (figures found, cut and written,
the page drawn and written), the two in turn page by page (their order swapped every other repeat, so both
see the same load), after warm-up runs of both. The model is loaded once and handed to every run (the CLI's
`load_model` returns it), so the times are a page's parse and writes, not the model's loading.

    .venv/bin/python benchmarks/draw_figures_speed.py                    # 5 pages, 1 warm-up, 5 repeats
    .venv/bin/python benchmarks/draw_figures_speed.py --repeats 1 --warmup 0 --pdf a.pdf --pdf b.pdf

Prints one row per page (median seconds of each command over the repeats, and the added share), then the
totals: the sum over pages of each command's median, and what the second adds in per cent of the first
(issue #37's goal: under 10%). Needs idle cores for a number worth quoting: on a loaded machine the parse's
own spread is larger than what is measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import jocr.pipeline
from jocr.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "data" / "frozen-real" / "pdfs" / "pdf"
# Born-digital pages: one with a picture (eduzh-p07), prose, code, math, two columns.
DEFAULT_PDFS = [
    REAL / f"{name}.pdf" for name in ("eduzh-p07", "rintro-p007", "amsldoc-p15", "psnfss2e-p3", "ltnews35-p1")
]
CONTROL = ("--figures", "none")
WITH = ("--draw", "--figures", "files")


def timed(pdf: Path, flags: tuple[str, ...], out: Path) -> float:
    """Seconds of one `jocr parse` of `pdf` with `flags`, written under `out` (a failed run raises)."""
    start = time.perf_counter()
    code = cli(["parse", "-q", str(pdf), "-o", str(out), *flags])
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"jocr parse {pdf.name} {' '.join(flags)} exited {code}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pdf", type=Path, action="append", help="a one-page PDF (default: 5 of data/frozen-real)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs of both commands on every page")
    parser.add_argument("--model", default=None, help="model directory (default: the bundled models)")
    args = parser.parse_args(argv)
    pdfs = args.pdf or DEFAULT_PDFS

    model = jocr.pipeline.load_model(args.model)
    jocr.pipeline.load_model = lambda *a, **k: model  # the CLI loads its model through this name

    with tempfile.TemporaryDirectory() as tmp:
        control_out, with_out = Path(tmp, "control"), Path(tmp, "with")
        for _ in range(args.warmup):
            for pdf in pdfs:
                timed(pdf, CONTROL, control_out)
                timed(pdf, WITH, with_out)
        times = {pdf: {"control": [], "with": []} for pdf in pdfs}
        for repeat in range(args.repeats):
            for pdf in pdfs:
                runs = [("control", CONTROL, control_out), ("with", WITH, with_out)]
                for name, flags, out in runs if repeat % 2 == 0 else runs[::-1]:
                    times[pdf][name].append(timed(pdf, flags, out))
        drawn = sorted(p.name for p in with_out.glob("*_layout.png"))
        cut = sorted(p.name for p in with_out.glob("*_fig*.png"))
        assert len(drawn) == len(pdfs), f"--draw wrote {drawn}"
        assert not list(control_out.glob("*.png")), "the control wrote images"

    print("| page | control median s | --draw --figures files median s | added | runs (control / with) |")
    print("|---|---|---|---|---|")
    total = {"control": 0.0, "with": 0.0}
    for pdf, runs in times.items():
        med = {k: statistics.median(v) for k, v in runs.items()}
        for k in total:
            total[k] += med[k]
        shown = " / ".join(", ".join(f"{t:.2f}" for t in runs[k]) for k in ("control", "with"))
        print(f"| {pdf.name} | {med['control']:.2f} | {med['with']:.2f} | "
              f"{100 * (med['with'] / med['control'] - 1):+.1f}% | {shown} |")  # fmt: skip
    added = 100 * (total["with"] / total["control"] - 1)
    sums = f"{total['control']:.2f} | {total['with']:.2f}"
    print(f"| **all ({len(pdfs)} pages)** | {sums} | **{added:+.1f}%** | |")
    summary = {"pages": len(pdfs), "repeats": args.repeats, "warmup": args.warmup, "figures_written": cut,
               "control_s": round(total["control"], 3), "with_s": round(total["with"], 3),
               "added_pct": round(added, 2)}  # fmt: skip
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
