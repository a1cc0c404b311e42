"""Accuracy on real PDFs in the olmOCR-Bench layout (pdfs/ + *.jsonl): jocr models with and without the
anchor, the plain text layer, Tesseract and RapidOCR side by side, per test type, with pages/s.

    .venv/bin/python benchmarks/accuracy.py --bench ../shared/data/olmocr-bench-sample \
        --model default=models --baseline textlayer --baseline tesseract --baseline rapidocr

Each system writes `<out>/<system>/<pdf-stem>_pg1_repeat1.md` and is scored by `jocr score` (the official
runner's rules: a missing page fails, a baseline test per PDF, the overall score is the mean of per-JSONL
pass rates). A model gives two rows: `NAME` (`--anchor off`: the image alone) and `NAME+anchor` (`--anchor
on`: the page's text layer in the prompt wherever it is usable, even for a model trained without anchors);
the benchmark's own `--anchor on|off` keeps only one of them, and `--anchor auto` gives `NAME+auto`, what
`jocr parse` does by default (a bundle's anchored member on pages with a usable layer, docs/parsing.md).
`textlayer` is the text PDFium extracts (pypdfium2 `get_text_range`, no positions); Tesseract reads the page
rendered exactly as jocr renders it (144 dpi) with one thread; RapidOCR joins its lines top to bottom.
pages/s is wall clock over the whole system's run on this machine (say how loaded it was).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from pathlib import Path

import baselines
from jocr.documents.pages import LoadOptions, open_source


def bench_pdfs(bench: Path) -> list[Path]:
    return sorted((bench / "pdfs").rglob("*.pdf"))


def _out_name(out: Path, bench: Path, pdf: Path) -> Path:
    rel = pdf.relative_to(bench / "pdfs").with_suffix("")
    return out / f"{rel}_pg1_repeat1.md"


def textlayer_outputs(pdfs: list[Path]) -> list[str]:
    import pypdfium2 as pdfium

    outs = []
    for pdf in pdfs:
        with pdfium.PdfDocument(str(pdf)) as doc:
            page = doc[0]
            textpage = page.get_textpage()
            outs.append(textpage.get_text_range())
            textpage.close()
            page.close()
    return outs


def _rendered(pdf: Path):
    with open_source(str(pdf), LoadOptions()) as source:
        return source.render(0)


def tesseract_outputs(pdfs: list[Path]) -> list[str]:
    return [baselines.tesseract_text(_rendered(pdf)) for pdf in pdfs]


def rapidocr_outputs(pdfs: list[Path]) -> list[str]:
    return [baselines.rapidocr_text(_rendered(pdf)) for pdf in pdfs]


def model_outputs(pdfs: list[Path], directory: str, anchor: str, args) -> tuple[list[str], list[dict]]:
    import jocr

    model = jocr.load_model(directory)
    docs = jocr.parse(
        [str(p) for p in pdfs],
        model=model,
        max_tokens=args.max_tokens,
        batch_size=args.batch_size,
        raise_errors=False,
        anchor=anchor,
    )
    outs, info = [], []
    for doc in docs:
        page = doc.pages[0] if doc.pages else None
        outs.append(doc.markdown if doc.error is None else "")
        info.append(page.to_dict()["anchor"] if page is not None else {"anchored": False})
    return outs, info


def score(bench: Path, outputs: Path) -> dict:
    from jocr.cli import main as cli

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli(["score", "--tests", str(bench), "--outputs", str(outputs), "--json"])
    if code != 0:
        raise RuntimeError(f"jocr score failed on {outputs}")
    return json.loads(buf.getvalue())["_summary"]


def run(args) -> int:
    bench = Path(args.bench)
    pdfs = bench_pdfs(bench)
    if not pdfs:
        print(f"no PDFs under {bench}/pdfs", file=sys.stderr)
        return 2
    out_root = Path(args.out)
    systems: list[tuple[str, object]] = []
    for spec in args.model:
        name, directory = spec.split("=", 1) if "=" in spec else (Path(spec).name, spec)
        if args.anchor in ("off", "both"):
            systems.append((name, ("model", directory, "off")))
        if args.anchor in ("on", "both"):
            systems.append((f"{name}+anchor", ("model", directory, "on")))
        if args.anchor == "auto":
            systems.append((f"{name}+auto", ("model", directory, "auto")))
    baselines = {"textlayer": textlayer_outputs, "tesseract": tesseract_outputs, "rapidocr": rapidocr_outputs}
    for name in args.baseline:
        systems.append((name, baselines[name]))
    rows = []
    for name, how in systems:
        start = time.perf_counter()
        info: list[dict] = []
        try:
            if isinstance(how, tuple):
                outs, info = model_outputs(pdfs, how[1], how[2], args)
            else:
                outs = how(pdfs)
        except (ImportError, FileNotFoundError) as exc:
            print(f"{name}: not available ({exc}); skipped", file=sys.stderr)
            continue
        seconds = time.perf_counter() - start
        out_dir = out_root / name
        for pdf, text in zip(pdfs, outs):
            path = _out_name(out_dir, bench, pdf)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        summary = score(bench, out_dir)
        summary["pages_per_s"] = len(pdfs) / seconds
        summary["anchored_pages"] = sum(bool(i.get("anchored")) for i in info)
        rows.append((name, summary))
        print(f"{name}: {len(pdfs)} pages in {seconds:.0f} s", file=sys.stderr)
    types = sorted({t for _, s in rows for t in s["per_type"]})
    groups = sorted({g for _, s in rows for g in s["per_jsonl"]})
    print(
        f"\n{bench.name}: {len(pdfs)} PDFs, {rows[0][1]['tests'] if rows else 0} tests (baselines included)\n"
    )
    heads = ["overall"] + [f"{g} (JSONL)" for g in groups] + types
    print("| system | " + " | ".join(heads) + " | anchored pages | pages/s |")
    print("|---|" + "---|" * len(heads) + "---|---|")
    for name, s in rows:
        cells = [f"{100 * s['overall']:.1f}%"] + [f"{100 * s['per_jsonl'][g]:.1f}%" for g in groups]
        cells += [f"{100 * s['per_type'].get(t, 0):.0f}%" for t in types]
        print(f"| {name} | " + " | ".join(cells) + f" | {s['anchored_pages']} | {s['pages_per_s']:.2f} |")
    out_root.mkdir(parents=True, exist_ok=True)
    (out_root / "results.json").write_text(json.dumps(dict(rows), indent=2) + "\n")
    return 0
