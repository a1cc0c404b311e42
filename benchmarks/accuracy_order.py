"""Reading order of pages read from lines, on real pages with hand-checked Markdown: the frozen reading-order
set (`data/frozen-order`) and the hand-checked pages of the frozen real set (`data/frozen-real/gt`).

    python benchmarks/accuracy_order.py ocr   --cache DIR     # RapidOCR's lines of every scan and photo, once
    python benchmarks/accuracy_order.py score --cache DIR     # the table below, from the cached lines

Each page's hand-checked Markdown becomes an OmniDocBench-style ground truth (`gt_page`: its blocks, split on
blank lines as `jocr.checks.omnidoc_split.split_markdown` splits a prediction, numbered in page order), and
each system's Markdown is scored with `jocr.checks.omnidoc.evaluate_pages`: the reading-order edit distance
(the order of the matched text blocks against the page's) and the text edit distance, averaged over pages,
the numbers the OmniDocBench demo reports. Systems, per variant:

- `plain`: the source's lines joined one a line in their own order (the text layer's stream order for `pdf`,
  RapidOCR's order for `scan` and `photo`: what the engine gives alone);
- `rules`: the same lines through the rules over lines (`jocr.layout.line_rules.lines_tree`), as `jocr parse`
  reads a page without a model.

RapidOCR's lines are cached under `--cache` in the format `benchmarks/accuracy.py` keeps in
`--out/_ocr-lines` (so `--cache OUT/_ocr-lines` shares them); `score` reads only the cache (a page whose
lines are missing is reported and left out).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = {"frozen-order": ROOT / "data" / "frozen-order", "frozen-real": ROOT / "data" / "frozen-real"}
VARIANTS = ("pdf", "scan", "photo")


def pages() -> list[tuple[str, str, Path]]:
    """(set, page id, hand-checked Markdown) for every page with one."""
    out = []
    for name, root in SETS.items():
        for md in sorted((root / "gt").glob("*.md")):
            out.append((name, md.stem, md))
    return out


def gt_page(markdown: str) -> dict:
    """An OmniDocBench-style ground-truth page from hand-checked Markdown: one layout element per block, in
    page order (headings as titles, display formulas as isolated equations, HTML tables as tables)."""
    from jocr.checks.omnidoc_split import split_markdown

    dets = []
    for k, block in enumerate(sorted(split_markdown(markdown), key=lambda b: b.position)):
        det = {"anno_id": k, "order": k + 1}
        if block.kind == "table":
            det.update(category_type="table", html=block.content)
        elif block.kind == "formula":
            det.update(category_type="equation_isolated", latex=block.content)
        else:
            title = block.content.lstrip().startswith("#")
            det.update(category_type="title" if title else "text_block", text=block.content.lstrip("# "))
        dets.append(det)
    return {"layout_dets": dets, "page_info": {}}


def cache_path(cache: Path, image: Path) -> Path:
    key = str(image.resolve())
    return cache / f"{zlib.crc32(key.encode()):08x}-{image.name}.json"


def cached_lines(cache: Path, image: Path) -> list | None:
    path = cache_path(cache, image)
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    return [(t, tuple(b)) for t, b in record["lines"]]


def ocr(cache: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from PIL import Image

    import baselines

    cache.mkdir(parents=True, exist_ok=True)
    order_ids = [s["id"] for s in json.loads((SETS["frozen-order"] / "sources.json").read_text())["pages"]]
    wanted = [("frozen-order", i) for i in order_ids] + [(n, s) for n, s, _ in pages() if n != "frozen-order"]
    for variant in ("scan", "photo"):  # scans first: the photos' lines come last
        for name, stem in wanted:
            image_path = SETS[name] / "pdfs" / variant / f"{stem}.jpg"
            dest = cache_path(cache, image_path)
            if dest.is_file() or not image_path.is_file():
                continue
            start = time.perf_counter()
            with Image.open(image_path) as image:
                lines = baselines.rapidocr_lines(image)
            seconds = time.perf_counter() - start
            record = {"path": str(image_path.resolve()), "lines": lines, "seconds": seconds}
            dest.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
            print(f"{variant}/{stem}: {len(lines)} lines, {seconds:.0f} s", flush=True)


def outputs(name: str, stem: str, variant: str, cache: Path) -> dict[str, str] | None:
    """{system: Markdown} for one page variant; None when its lines are not there."""
    from jocr.layout.line_rules import lines_tree
    from jocr.layout.render import page_markdown

    root = SETS[name] / "pdfs" / variant
    if variant == "pdf":
        import pypdfium2 as pdfium

        from jocr.lines.textlayer import read_page

        pdf = root / f"{stem}.pdf"
        layer = None
        if pdf.is_file():
            with pdfium.PdfDocument(str(pdf)) as doc:
                layer = read_page(doc[0])
        if layer is None or not layer.lines:
            return None
        lines, width, height, unit, source = layer.lines, layer.width, layer.height, "pt", layer.source
    else:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import baselines

        image_path = root / f"{stem}.jpg"
        found = cached_lines(cache, image_path) if image_path.is_file() else None
        if found is None:
            return None
        from PIL import Image

        with Image.open(image_path) as image:
            layer = baselines.ocr_layer(image, found)
        lines, width, height, unit, source = layer.lines, layer.width, layer.height, "px", layer.source
    plain = "\n".join(ln.text for ln in lines)
    tree = lines_tree(lines, width, height, unit=unit, source=source)
    return {"plain": plain, "rules": page_markdown(tree)}


def score(cache: Path, per_page: bool) -> None:
    from jocr.checks.omnidoc import evaluate_pages

    pairs: dict[tuple[str, str, str], list[tuple[dict, str]]] = {}
    missing = []
    for name, stem, md in pages():
        truth = gt_page(md.read_text(encoding="utf-8"))
        for variant in VARIANTS:
            found = outputs(name, stem, variant, cache)
            if found is None:
                missing.append(f"{name}/{variant}/{stem}")
                continue
            for system, markdown in found.items():
                pairs.setdefault((name, variant, system), []).append((truth, markdown))
                if per_page:
                    s = evaluate_pages([(truth, markdown)])
                    print(f"  {name} {variant} {stem} {system}: order {s.reading_order_edit:.3f} "
                          f"text {s.text_edit:.3f}")  # fmt: skip
    print("| set | variant | system | pages | reading-order edit | text edit |")
    print("|---|---|---|---|---|---|")
    rows = [(key, items) for key, items in sorted(pairs.items())]
    for group in ("plain", "rules"):
        items = [p for (_, v, sy), ps in pairs.items() if sy == group and v != "pdf" for p in ps]
        if items:
            rows.append((("all", "scan+photo", group), items))
    for (name, variant, system), items in rows:
        s = evaluate_pages(items)
        order, text = s.reading_order_edit, s.text_edit
        print(f"| {name} | {variant} | {system} | {len(items)} | {order:.3f} | {text:.3f} |")
    if missing:
        print(f"no lines for {len(missing)} page variants: {', '.join(missing)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("ocr", "score"))
    ap.add_argument("--cache", type=Path, required=True, help="folder of RapidOCR's cached lines")
    ap.add_argument("--per-page", action="store_true", help="print each page's numbers too")
    args = ap.parse_args(argv)
    if args.step == "ocr":
        ocr(args.cache)
    else:
        score(args.cache, args.per_page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
