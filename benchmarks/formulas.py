"""Formulas read from born-digital pages (docs/layout.md, "Formulas"): the frozen synthetic formula set and
the olmOCR-Bench math tests.

    # write the frozen set (matplotlib's mathtext typesets each formula into a one-page vector PDF)
    PYTHONPATH=src .venv/bin/python benchmarks/formulas.py write --out data/frozen-test/formulas
    # score the reader on it: normalised exact match, KaTeX render match, edit distance, seconds per crop
    PYTHONPATH=src .venv/bin/python benchmarks/formulas.py score --set data/frozen-test/formulas
    # the same formulas as images (each PDF rendered at --dpi, --degrade: scan-degraded), read from pixels
    # by each model (`jocr parse --task formula`), side by side in one run
    PYTHONPATH=src .venv/bin/python benchmarks/formulas.py images --set data/frozen-test/formulas \
        --model models --model runs/sft-formula/snapshots/step_001500 --dpi 150 [--degrade]
    # testmath.pdf's display formulas cut from the rendered pages at the boxes the text layer gives, read
    # from pixels (the boxes are the layer's; the reading uses none of its glyphs)
    PYTHONPATH=src .venv/bin/python benchmarks/formulas.py real-images --model models --dpi 200
    # the OmniDocBench demo's display formulas cut from its page images at their true boxes, read from pixels
    PYTHONPATH=src .venv/bin/python benchmarks/formulas.py demo-crops --model models
    # the layout detector's equation regions against the text layer's display formulas, on scanned pages
    PYTHONPATH=src .venv/bin/python benchmarks/formulas.py regions
    # olmOCR-Bench layout: each PDF's first page read from its text layer alone, with and without formulas
    PYTHONPATH=src .venv/bin/python benchmarks/formulas.py pages --bench ../shared/data/olmocr-bench-sample \
        --out /tmp/formula-pages   # then: jocr score for each system directory written

The set's formulas are `jocr.synth.formulas` templates (seeded) and a fixed list of harder ones (nested
fractions, roots with an index, accents, primes, operators with limits); the ground truth is exactly the
LaTeX mathtext typeset. Fontsets cycle through Computer Modern (BaKoMa fonts: TeX slot encodings), STIX and
DejaVu Serif, so the reader sees both encoded and Unicode math fonts.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

FONTSETS = ("cm", "stix", "dejavuserif")
HARDER = (
    r"\frac{\frac{a}{b}+1}{c-\frac{1}{d}}",
    r"\sqrt[3]{x^{2}+y^{2}}",
    r"f'(x)=\lim_{h \to 0} \frac{f(x+h)-f(x)}{h}",
    r"\hat{y}=\beta_{0}+\beta_{1} x",
    r"\int_{a}^{b} f(x) \, dx=F(b)-F(a)",
    r"e^{-x^{2}}",
    r"x_{i}^{2}+y_{j}^{3}",
    r"\frac{1}{\sqrt{2 \pi \sigma^{2}}} e^{-\frac{(x-\mu)^{2}}{2 \sigma^{2}}}",
    r"\sum_{k=0}^{\infty} \frac{x^{k}}{k!}=e^{x}",
    r"\alpha+\beta \geq \gamma \cdot \delta",
    r"A \subseteq B \cup C",
    r"\forall x \in X, \exists y \in Y",
    r"\tilde{x}=\frac{x-\bar{x}}{s}",
    r"\prod_{i=1}^{n} p_{i}^{a_{i}}",
    r"\log(1+x) \approx x-\frac{x^{2}}{2}",
    r"\sin(\theta+\phi)=\sin \theta \cos \phi+\cos \theta \sin \phi",
    r"\nabla^{2} u=\frac{\partial^{2} u}{\partial x^{2}}+\frac{\partial^{2} u}{\partial y^{2}}",
    r"\Gamma(n)=(n-1)!",
    r"\max_{x \in S} g(x) \neq 0",
    r"\sqrt{\frac{a}{b}}",
)


def formulas(n: int, seed: int) -> list[str]:
    from jocr.synth.formulas import display_formula, inline_formula

    rng = random.Random(seed)
    out: list[str] = list(HARDER)
    seen = set(out)
    while len(out) < n:
        latex = display_formula(rng) if rng.random() < 0.7 else inline_formula(rng)
        if latex not in seen:
            seen.add(latex)
            out.append(latex)
    return out[:n]


def write_set(out: Path, n: int, seed: int) -> None:
    import matplotlib

    matplotlib.use("pdf")
    import matplotlib.pyplot as plt

    from jocr.checks.math import renders

    matplotlib.rcParams["pdf.fonttype"] = 3
    matplotlib.rcParams["pdf.compression"] = 9
    matplotlib.rcParams["svg.hashsalt"] = "jocr"
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, latex in enumerate(formulas(n, seed)):
        if not renders(latex):
            raise SystemExit(f"KaTeX rejects {latex!r}")
        fontset = FONTSETS[k % len(FONTSETS)]
        matplotlib.rcParams["mathtext.fontset"] = fontset
        fig = plt.figure(figsize=(8, 1.5))
        fig.text(0.02, 0.4, f"${latex}$", fontsize=14)
        name = f"f{k:03d}.pdf"
        fig.savefig(
            out / name,
            bbox_inches="tight",
            pad_inches=0.1,
            metadata={"CreationDate": None, "Creator": None, "Producer": None},
        )
        plt.close(fig)
        rows.append({"id": f"f{k:03d}", "pdf": name, "latex": latex, "fontset": fontset})
    with open(out / "manifest.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} formulas to {out}")


def _manifest(path: Path) -> list[dict]:
    """The frozen set's rows (id, pdf, latex, fontset)."""
    text = (path / "manifest.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def score_set(path: Path, render: bool, show: bool) -> dict:
    import pypdfium2 as pdfium

    from jocr.checks.formula import score_formula
    from jocr.layout.formulas import read_formula_region

    rows = _manifest(path)
    results = []
    per_fontset: dict[str, list[bool]] = {}
    for row in rows:
        doc = pdfium.PdfDocument(str(path / row["pdf"]))
        try:
            start = time.perf_counter()
            result = read_formula_region(doc[0])
            seconds = time.perf_counter() - start
        finally:
            doc.close()
        score = score_formula(row["latex"], result.latex, render=render)
        per_fontset.setdefault(row["fontset"], []).append(score.exact)
        results.append((row, result.latex, score, seconds))
        if show and not score.exact:
            print(
                f"{row['id']} [{row['fontset']}] {row['latex']!r}\n"
                f"    got {result.latex!r} rendered={score.rendered}"
            )
    n = len(results)
    summary = {
        "formulas": n,
        "exact": sum(r[2].exact for r in results) / n,
        "rendered": sum(r[2].rendered for r in results) / n if render else None,
        "edit": statistics.mean(r[2].edit for r in results),
        "seconds_median": statistics.median(r[3] for r in results),
        "seconds_max": max(r[3] for r in results),
        "exact_by_fontset": {k: round(sum(v) / len(v), 4) for k, v in per_fontset.items()},
    }
    return summary


def _read_images(images: list, model_dirs: list[str]) -> dict[str, list[tuple[str, float]]]:
    """Each model's (markdown, seconds) for each image under the formula task, one model loaded at a time."""
    import jocr
    from jocr.pipeline import load_model

    out: dict[str, list[tuple[str, float]]] = {}
    for model_dir in model_dirs:
        loaded = load_model(model_dir)
        jocr.parse(images[0], task="formula", model=loaded)  # warm-up
        rows = []
        for image in images:
            start = time.perf_counter()
            doc = jocr.parse(image, task="formula", model=loaded)
            rows.append((doc.markdown, time.perf_counter() - start))
        out[model_dir] = rows
    return out


def _summary(refs: list[str], rows: list[tuple[str, float]], render: bool, groups: list[str]) -> dict:
    """Exact match, render match, edit distance and seconds over all formulas and per group."""
    from jocr.checks.formula import score_formula

    scores = [score_formula(ref, text, render=render) for ref, (text, _) in zip(refs, rows, strict=True)]
    by_group: dict[str, list[bool]] = {}
    for group, score in zip(groups, scores, strict=True):
        by_group.setdefault(group, []).append(score.exact)
    return {
        "formulas": len(scores),
        "exact": round(sum(s.exact for s in scores) / len(scores), 4),
        "rendered": round(sum(s.rendered for s in scores) / len(scores), 4) if render else None,
        "edit": round(statistics.mean(s.edit for s in scores), 4),
        "exact_by_group": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_group.items())},
        "seconds_median": round(statistics.median(r[1] for r in rows), 3),
    }


def score_images(
    path: Path, model_dirs: list[str], dpi: float, degrade: bool, render: bool, show: bool
) -> dict:
    """The frozen set's formulas as images, read from pixels by each model. Groups: the fixed harder list
    (no template writes them) against the template formulas, and each fontset."""
    import pypdfium2 as pdfium

    rows = _manifest(path)
    images = []
    for row in rows:
        doc = pdfium.PdfDocument(str(path / row["pdf"]))
        try:
            image = doc[0].render(scale=dpi / 72).to_pil().convert("RGB")
        finally:
            doc.close()
        if degrade:
            from jocr.synth.degrade import degrade as apply_degrade

            image, _ = apply_degrade(image, 0.5, random.Random(f"formula-image/{row['id']}"))
        images.append(image)
    refs = [row["latex"] for row in rows]
    groups = [("harder" if row["latex"] in HARDER else "template") for row in rows]
    fonts = [row["fontset"] for row in rows]
    out = {}
    for model_dir, read in _read_images(images, model_dirs).items():
        summary = _summary(refs, read, render, groups)
        summary["exact_by_fontset"] = _summary(refs, read, False, fonts)["exact_by_group"]
        out[model_dir] = summary
        if show:
            for ref, (text, _) in zip(refs, read, strict=True):
                print(f"{model_dir}: {ref!r}\n    got {text.strip()!r}")
    return out


def score_real_images(
    truth: Path, pdf: str, model_dirs: list[str], dpi: float, render: bool, show: bool
) -> dict:
    """testmath.pdf's display formulas read from pixels: each formula the text layer finds on a reference's
    page is cut from the page rendered at `dpi` at its box (with a margin of 3 points) and read by each
    model; each reference is matched to the nearest reading on its page, as `score_real` does."""
    import pypdfium2 as pdfium

    from jocr.checks.formula import edit_distance, score_formula
    from jocr.layout.formulas import page_formulas
    from jocr.lines.textlayer import read_page

    rows = [json.loads(line) for line in truth.read_text(encoding="utf-8").splitlines() if line]
    crops, crop_pages = [], []
    doc = pdfium.PdfDocument(pdf)
    try:
        for page_index in sorted({r["page"] for r in rows}):
            page = doc[page_index]
            image = page.render(scale=dpi / 72).to_pil().convert("RGB")
            for found in page_formulas(page, read_page(page)):
                if found.box is None:
                    continue
                x0, y0, x1, y1 = found.box
                box = [round(v * dpi / 72) for v in (x0 - 3, y0 - 3, x1 + 3, y1 + 3)]
                crops.append(image.crop(tuple(box)))
                crop_pages.append(page_index)
    finally:
        doc.close()
    out = {}
    for model_dir, read in _read_images(crops, model_dirs).items():
        scores = []
        for row in rows:
            candidates = [text for (text, _), p in zip(read, crop_pages, strict=True) if p == row["page"]]
            best = min(candidates, key=lambda c: edit_distance(row["latex"], c), default="")
            scores.append(score_formula(row["latex"], best, render=render))
            if show:
                print(f"{model_dir} p{row['page']}: {row['latex']!r}\n    got {best.strip()!r}")
        out[model_dir] = {
            "formulas": len(scores),
            "crops": len(crops),
            "exact": round(sum(s.exact for s in scores) / len(scores), 4),
            "rendered": round(sum(s.rendered for s in scores) / len(scores), 4) if render else None,
            "edit": round(statistics.mean(s.edit for s in scores), 4),
        }
    return out


def score_demo_crops(folder: Path, model_dirs: list[str], margin: int, render: bool, show: bool) -> dict:
    """The OmniDocBench demo's display formulas (`equation_isolated`), each cut from its page image at its
    true box with `margin` pixels round it, read by each model: what the reader makes of papers' formulas
    when the region is right (the page score also needs the region found)."""
    from PIL import Image

    from jocr.checks.omnidoc_layout import poly_box

    crops, refs, groups = [], [], []
    for page in json.loads((folder / "OmniDocBench_demo.json").read_text(encoding="utf-8")):
        image = Image.open(folder / "images" / page["page_info"]["image_path"]).convert("RGB")
        for det in page["layout_dets"]:
            if det.get("category_type") != "equation_isolated" or not det.get("latex"):
                continue
            x0, y0, x1, y1 = poly_box(det["poly"])
            box = (round(x0) - margin, round(y0) - margin, round(x1) + margin, round(y1) + margin)
            crops.append(
                image.crop(
                    (max(0, box[0]), max(0, box[1]), min(image.width, box[2]), min(image.height, box[3]))
                )
            )
            refs.append(det["latex"])
            groups.append(page["page_info"]["image_path"].split(".pdf")[0][-24:])
    out = {}
    for model_dir, read in _read_images(crops, model_dirs).items():
        out[model_dir] = _summary(refs, read, render, groups)
        if show:
            for ref, (text, _) in zip(refs, read, strict=True):
                print(f"{model_dir}: {ref!r}\n    got {text.strip()!r}")
    return out


REAL_PDF = "/usr/share/doc/texlive-doc/latex/amsmath/testmath.pdf"  # Debian texlive-latex-base-doc, LPPL 1.3c


def score_real(truth: Path, pdf: str, show: bool) -> dict:
    """Display formulas of a real TeX document, found and read end to end: each reference (its page and the
    LaTeX of the document's source, transcribed) is matched to the formula found on its page that is
    nearest by edit distance; a reference with no formula found counts as missed."""
    import pypdfium2 as pdfium

    from jocr.checks.formula import edit_distance, score_formula
    from jocr.layout.formulas import page_formulas
    from jocr.lines.textlayer import read_page

    rows = [json.loads(line) for line in truth.read_text(encoding="utf-8").splitlines() if line]
    found: dict[int, list[str]] = {}
    doc = pdfium.PdfDocument(pdf)
    try:
        for page_index in sorted({r["page"] for r in rows}):
            page = doc[page_index]
            found[page_index] = [f.latex for f in page_formulas(page, read_page(page))]
    finally:
        doc.close()
    scores = []
    for row in rows:
        candidates = found.get(row["page"], [])
        best = min(candidates, key=lambda c: edit_distance(row["latex"], c), default="")
        score = score_formula(row["latex"], best)
        scores.append(score)
        if show and not score.exact:
            print(f"p{row['page']} {row['latex']!r}\n    got {best!r} rendered={score.rendered}")
    n = len(scores)
    return {
        "formulas": n,
        "exact": sum(s.exact for s in scores) / n,
        "rendered": sum(s.rendered for s in scores) / n,
        "edit": statistics.mean(s.edit for s in scores),
        "found_on_pages": sum(len(v) for v in found.values()),
    }


def write_controls(bench: Path, out: Path, names: list[str]) -> None:
    """The same pages by other CPU systems, in the same run (`accuracy_pdf`'s: `textlayer` is PDFium's plain
    text, `tesseract` and `rapidocr` read the rendered page)."""
    import accuracy_pdf

    pdfs = sorted((bench / "pdfs").rglob("*.pdf"))
    makers = {
        "textlayer": accuracy_pdf.textlayer_outputs,
        "tesseract": accuracy_pdf.tesseract_outputs,
        "rapidocr": accuracy_pdf.rapidocr_outputs,
    }
    for name in names:
        start = time.perf_counter()
        texts = makers[name](pdfs)
        for pdf, text in zip(pdfs, texts, strict=True):
            rel = pdf.relative_to(bench / "pdfs").with_suffix("")
            target = out / name / f"{rel}_pg1_repeat1.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        print(f"{name}: {len(pdfs)} pages in {time.perf_counter() - start:.1f} s")


def write_pages(bench: Path, out: Path) -> None:
    """Each PDF's first page as Markdown from its text layer's lines, by the rules over lines: without
    formulas (`layer`), with the display formulas found (`layer_formulas`), and with inline formulas in
    prose lines too (`layer_formulas_inline`)."""
    import pypdfium2 as pdfium

    from jocr.layout.formulas import page_formulas
    from jocr.layout.render import page_markdown
    from jocr.layout.request import layer_tree
    from jocr.lines.textlayer import read_page

    pdfs = sorted((bench / "pdfs").rglob("*.pdf"))
    times = []
    for pdf in pdfs:
        rel = pdf.relative_to(bench / "pdfs").with_suffix("")
        doc = pdfium.PdfDocument(str(pdf))
        try:
            page = doc[0]
            layer = read_page(page)
            plain = page_markdown(layer_tree(layer)) if layer.usable else ""
            start = time.perf_counter()
            found = page_formulas(page, layer)
            times.append(time.perf_counter() - start)
            with_math = page_markdown(layer_tree(layer, formulas=found)) if layer.usable else ""
            both = page_formulas(page, layer, inline=True)
            with_inline = page_markdown(layer_tree(layer, formulas=both)) if layer.usable else ""
        finally:
            doc.close()
        systems = (("layer", plain), ("layer_formulas", with_math), ("layer_formulas_inline", with_inline))
        for system, text in systems:
            target = out / system / f"{rel}_pg1_repeat1.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    print(
        f"{len(pdfs)} pages; formula finding median {statistics.median(times):.3f} s, max {max(times):.3f} s"
    )


# Scanned pages whose PDFs' text layers give the display formulas' boxes (the development copies: data/
# frozen-real-math and heldout, data/frozen-real's math pages); `regions --folder` takes others.
REGION_FOLDERS = ("data/frozen-real-math", "data/frozen-real-math/heldout", "data/frozen-real")
REGION_THRESHOLDS = (0.3, 0.5, 0.6, 0.7, 0.8)


def score_regions(folders: list[str], iou: float = 0.5) -> dict:
    """How many display formulas the layout detector's `equation` regions find on scanned pages, at each
    score threshold: the truth is each page's PDF's display formulas by the text-layer reader
    (`jocr.layout.formulas.page_formulas`), their boxes scaled to the scan's pixels (a scan is the page at
    150 dpi, turned by a degree or two at most); a region finds a formula at IoU >= `iou`."""
    import pypdfium2 as pdfium
    from PIL import Image

    from jocr.bbox import iou as box_iou
    from jocr.layout.formulas import page_formulas
    from jocr.layout.regions import RegionsConfig, detect_regions
    from jocr.lines.textlayer import read_page

    truth_n, pages = 0, 0
    found = {t: 0 for t in REGION_THRESHOLDS}
    false = {t: 0 for t in REGION_THRESHOLDS}
    for folder in map(Path, folders):
        scans = {
            Path(json.loads(x)["pdf"]).stem for x in (folder / "scan.jsonl").read_text().splitlines() if x
        }
        for stem in sorted(scans):
            pdf = next(
                p
                for p in (folder / "pdfs" / "pdf" / f"{stem}.pdf", folder / "pdfs" / f"{stem}.pdf")
                if p.is_file()
            )
            with pdfium.PdfDocument(str(pdf)) as doc:
                page = doc[0]
                width, height = page.get_size()
                truth = [f.box for f in page_formulas(page, read_page(page)) if f.box is not None]
            if not truth:
                continue
            image = Image.open(folder / "pdfs" / "scan" / f"{stem}.jpg").convert("RGB")
            sx, sy = image.size[0] / width, image.size[1] / height
            truth = [(b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy) for b in truth]
            regions = [
                r for r in detect_regions(image, RegionsConfig(min_score=0.3)).found if r.label == "equation"
            ]
            pages, truth_n = pages + 1, truth_n + len(truth)
            for t in REGION_THRESHOLDS:
                kept = [r.box for r in regions if r.score >= t]
                found[t] += sum(any(box_iou(r, box) >= iou for r in kept) for box in truth)
                false[t] += sum(not any(box_iou(r, box) >= iou for box in truth) for r in kept)
    return {"pages": pages, "display_formulas": truth_n, "found_at": found, "false_regions_at": false}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("--out", type=Path, required=True)
    w.add_argument("--n", type=int, default=60)
    w.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("score")
    s.add_argument("--set", type=Path, required=True)
    s.add_argument("--no-render", action="store_true", help="skip the KaTeX render match")
    s.add_argument("--show", action="store_true", help="print every formula not matched exactly")
    r = sub.add_parser("real")
    r.add_argument("--truth", type=Path, default=Path("data/frozen-test/formulas/real-testmath.jsonl"))
    r.add_argument("--pdf", default=REAL_PDF)
    r.add_argument("--show", action="store_true")
    i = sub.add_parser("images")
    i.add_argument("--set", type=Path, default=Path("data/frozen-test/formulas"))
    ri = sub.add_parser("real-images")
    ri.add_argument("--truth", type=Path, default=Path("data/frozen-test/formulas/real-testmath.jsonl"))
    ri.add_argument("--pdf", default=REAL_PDF)
    for q in (i, ri):
        q.add_argument("--model", action="append", required=True, help="a model directory (repeatable)")
        q.add_argument("--dpi", type=float, default=150.0)
        q.add_argument("--render", action="store_true", help="also the KaTeX render match (slow)")
        q.add_argument("--show", action="store_true", help="print every reading")
    i.add_argument("--degrade", action="store_true", help="scan-degrade each image (seeded by formula id)")
    dc = sub.add_parser("demo-crops")
    dc.add_argument(
        "--omnidocbench",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared/data/omnidocbench-demo",
    )
    dc.add_argument("--margin", type=int, default=4, help="pixels round each true box")
    dc.add_argument("--model", action="append", required=True, help="a model directory (repeatable)")
    dc.add_argument("--render", action="store_true", help="also the KaTeX render match (slow)")
    dc.add_argument("--show", action="store_true", help="print every reading")
    g = sub.add_parser("regions")
    g.add_argument("--folder", action="append", help="a set folder with scan.jsonl (repeatable)")
    p = sub.add_parser("pages")
    p.add_argument("--bench", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--control",
        action="append",
        default=[],
        choices=["textlayer", "tesseract", "rapidocr"],
        help="also write this system's outputs (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.command == "write":
        write_set(args.out, args.n, args.seed)
    elif args.command == "real":
        if not Path(args.pdf).is_file():
            raise SystemExit(f"{args.pdf} is not installed (Debian package texlive-latex-base-doc)")
        print(json.dumps(score_real(args.truth, args.pdf, args.show), indent=2))
    elif args.command == "images":
        print(
            json.dumps(
                score_images(args.set, args.model, args.dpi, args.degrade, args.render, args.show), indent=2
            )
        )
    elif args.command == "demo-crops":
        result = score_demo_crops(args.omnidocbench, args.model, args.margin, args.render, args.show)
        print(json.dumps(result, indent=2))
    elif args.command == "regions":
        print(json.dumps(score_regions(args.folder or list(REGION_FOLDERS)), indent=2))
    elif args.command == "real-images":
        if not Path(args.pdf).is_file():
            raise SystemExit(f"{args.pdf} is not installed (Debian package texlive-latex-base-doc)")
        result = score_real_images(args.truth, args.pdf, args.model, args.dpi, args.render, args.show)
        print(json.dumps(result, indent=2))
    elif args.command == "score":
        print(json.dumps(score_set(args.set, not args.no_render, args.show), indent=2))
    else:
        write_pages(args.bench, args.out)
        write_controls(args.bench, args.out, args.control)
    return 0


if __name__ == "__main__":
    sys.exit(main())
