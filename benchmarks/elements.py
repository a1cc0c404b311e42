"""Tables as an element task and inside pages, beside their controls, in one run (docs/elements.md).

    PYTHONPATH=src python benchmarks/elements.py [--parse] [--omnidocbench ../shared/data/omnidocbench-demo]

Sets and rows:
- frozen table set (data/frozen-test/tables: vector PDFs with exact HTML, the table's box from the
  manifest): TEDS and TEDS-S of `reader` (`jocr parse --task table --region`), of `lines` (the table block
  the rules over lines find in the same box: the line source's own tables), of `lines+tables` (the first
  table of the page's lines tree after the page's table pass), and with --parse of `parse` (the default
  `jocr.parse` of the whole page, its first table);
- olmOCR-Bench sample, its table tests (tests/data/olmocr-bench-sample, the pages that have them): `lines`
  (the page's tree from its text layer alone), `lines+tables` (that tree with the table pass), and with
  --parse `parse-without-tables` (the default parse with the table pass switched off here) and `parse`;
- frozen image-table set (data/frozen-test/tables-image: the first 20 of those tables rendered at
  150 dpi, scanned or photographed, the box carried through): TEDS and TEDS-S of `reader` over the crop
  (OCR words and rules found in the pixels), by kind, with CPU seconds per crop (this process and its
  children: wall seconds on a shared machine say more about the others' load than about the reader);
- real image-table set (data/frozen-real-tables-image: 15 tables of Debian documentation PDFs, pages
  rendered at 150 dpi, scanned or photographed, the box carried through): the same rows, by kind and by
  language (`en`, `zh`);
- with --omnidocbench DIR: the demo's tables cut at their ground-truth boxes (images: OCR words and rules
  found in the pixels), TEDS and TEDS-S of `reader`, seconds per crop.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from jocr.checks.teds import teds
from jocr.documents.pages import LoadOptions, open_source
from jocr.layout.elements import read_table_region
from jocr.layout.line_rules import lines_tree

REPO = Path(__file__).resolve().parents[1]
TABLE_SET = REPO / "data/frozen-test/tables"
IMAGE_SET = REPO / "data/frozen-test/tables-image"
REAL_IMAGE_SET = REPO / "data/frozen-real-tables-image"
OLMOCR = REPO / "tests/data/olmocr-bench-sample"
_EMPTY = "<table></table>"


def first_table(markdown: str) -> str:
    start = markdown.find("<table")
    end = markdown.find("</table>", start)
    return markdown[start : end + 8] if start >= 0 and end >= 0 else _EMPTY


def lines_table(path: Path, region) -> str:
    """The line source's table in `region`: the table block of the page's lines tree most inside it."""
    with open_source(str(path), LoadOptions()) as source:
        layer = source.text_layer(0)
    tree = lines_tree(layer.lines, layer.width, layer.height)
    best, best_area = _EMPTY, 0.0
    for block in tree.blocks:
        if block.type != "table" or block.bbox is None:
            continue
        x0, y0 = max(block.bbox[0], region[0]), max(block.bbox[1], region[1])
        x1, y1 = min(block.bbox[2], region[2]), min(block.bbox[3], region[3])
        area = max(0.0, x1 - x0) * max(0.0, y1 - y0)
        if area > best_area:
            best, best_area = block.html or block.markdown, area
    return best


def lines_pass_table(path: Path) -> str:
    """The first table of the page's lines tree after the page's table pass (`improve_tables`)."""
    from jocr.layout.elements import pdf_geometry
    from jocr.layout.tables_pages import improve_tables

    with open_source(str(path), LoadOptions()) as source:
        layer = source.text_layer(0)
        geometry = pdf_geometry(source, 0)
    tree = lines_tree(layer.lines, layer.width, layer.height)
    if geometry is not None:
        improve_tables(tree, *geometry)
    tables = [b.html or b.markdown for b in tree.blocks if b.type == "table"]
    return tables[0] if tables else _EMPTY


def table_set(parse_model) -> dict:
    rows = [json.loads(line) for line in (TABLE_SET / "manifest.jsonl").read_text().splitlines()]
    scores: dict[str, list[tuple[float, float]]] = {"reader": [], "lines": [], "lines+tables": []}
    seconds = []
    if parse_model is not None:
        scores["parse"] = []
    for row in rows:
        path = TABLE_SET / row["pdf"]
        with open_source(str(path), LoadOptions()) as source:
            t0 = time.perf_counter()
            result = read_table_region(source, 0, tuple(row["region"]))
            seconds.append(time.perf_counter() - t0)
        outputs = {
            "reader": result.markdown or _EMPTY,
            "lines": lines_table(path, row["region"]),
            "lines+tables": lines_pass_table(path),
        }
        if parse_model is not None:
            import jocr

            outputs["parse"] = first_table(jocr.parse(str(path), model=parse_model).markdown)
        for name, html in outputs.items():
            scores[name].append((teds(html, row["html"]), teds(html, row["html"], structure_only=True)))
    return {
        "pages": len(rows),
        "seconds_per_table": round(statistics.mean(seconds), 3),
        **{
            name: {
                "teds": round(statistics.mean(s[0] for s in v), 4),
                "teds_s": round(statistics.mean(s[1] for s in v), 4),
            }  # fmt: skip
            for name, v in scores.items()
        },
    }


def cpu_seconds() -> float:
    """CPU seconds of this process and its waited-for children (Tesseract runs as one)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def image_table_set(ocr: str = "auto", folder: Path = IMAGE_SET) -> dict:
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    by_kind: dict[str, list[tuple[float, float]]] = {}
    cpu, wall = [], []
    for row in rows:
        with open_source(str(folder / row["image"]), LoadOptions()) as source:
            source.render(0)
            c0, t0 = cpu_seconds(), time.perf_counter()
            result = read_table_region(source, 0, tuple(row["region"]), ocr=ocr)
            cpu.append(cpu_seconds() - c0)
            wall.append(time.perf_counter() - t0)
        html = result.markdown or _EMPTY
        score = (teds(html, row["html"]), teds(html, row["html"], structure_only=True))
        for key in ("all", row["kind"], row["style"]):
            by_kind.setdefault(key, []).append(score)
    return {
        "tables": len(rows),
        "ocr": ocr,
        "cpu_s_per_crop": round(statistics.mean(cpu), 3),
        "max_cpu_s": round(max(cpu), 3),
        "wall_s_per_crop": round(statistics.mean(wall), 3),
        **{
            key: {
                "teds": round(statistics.mean(s[0] for s in v), 4),
                "teds_s": round(statistics.mean(s[1] for s in v), 4),
            }
            for key, v in by_kind.items()
        },  # fmt: skip
    }


def olmocr_tables(parse_model) -> dict:
    from jocr.checks.unittests import load_test, run_tests
    from jocr.layout.elements import pdf_geometry
    from jocr.layout.render import page_markdown
    from jocr.layout.tables_pages import improve_tables

    tests = [
        load_test(line) for line in (OLMOCR / "dataset.jsonl").read_text().splitlines() if '"table"' in line
    ]
    pdfs = sorted({t.pdf for t in tests})
    outputs: dict[str, dict[str, str]] = {"lines": {}, "lines+tables": {}}
    for pdf in pdfs:
        with open_source(str(OLMOCR / "pdfs" / pdf), LoadOptions()) as source:
            layer = source.text_layer(0)
            geometry = pdf_geometry(source, 0)
        tree = lines_tree(layer.lines, layer.width, layer.height)
        outputs["lines"][pdf] = page_markdown(tree)
        if geometry is not None:
            improve_tables(tree, *geometry)
        outputs["lines+tables"][pdf] = page_markdown(tree)
    if parse_model is not None:
        import jocr
        import jocr.pipeline.stream as stream

        kept = stream.page_tables
        stream.page_tables = lambda page, job: None  # the control: the same parse without the table pass
        try:
            outputs["parse-without-tables"] = {
                pdf: jocr.parse(str(OLMOCR / "pdfs" / pdf), model=parse_model).markdown for pdf in pdfs
            }
        finally:
            stream.page_tables = kept
        outputs["parse"] = {
            pdf: jocr.parse(str(OLMOCR / "pdfs" / pdf), model=parse_model).markdown for pdf in pdfs
        }
    out = {"tests": len(tests), "pdfs": pdfs}
    for name, by_pdf in outputs.items():
        passed = 0
        for pdf in pdfs:
            mine = [t for t in tests if t.pdf == pdf]
            passed += sum(r.passed for r in run_tests(mine, by_pdf[pdf]))
        out[name] = passed
    return out


def omnidoc_crops(folder: Path, ocr: str = "auto") -> dict:
    data = json.loads((folder / "OmniDocBench_demo.json").read_text())
    scores, structure, seconds, cpu = [], [], [], []
    for page in data:
        image = folder / "images" / page["page_info"]["image_path"]
        for det in page["layout_dets"]:
            if det["category_type"] != "table" or not det.get("html"):
                continue
            poly = det["poly"]
            region = (min(poly[0::2]), min(poly[1::2]), max(poly[0::2]), max(poly[1::2]))
            with open_source(str(image), LoadOptions()) as source:
                t0 = time.perf_counter()
                c0 = cpu_seconds()
                result = read_table_region(source, 0, region, ocr=ocr)
                seconds.append(time.perf_counter() - t0)
                cpu.append(cpu_seconds() - c0)
            html = result.markdown or _EMPTY
            scores.append(teds(html, det["html"]))
            structure.append(teds(html, det["html"], structure_only=True))
    return {
        "tables": len(scores),
        "reader": {"teds": round(statistics.mean(scores), 4), "teds_s": round(statistics.mean(structure), 4)},
        "ocr": ocr,
        "seconds_per_crop": round(statistics.mean(seconds), 3),
        "max_seconds": round(max(seconds), 3),
        "cpu_s_per_crop": round(statistics.mean(cpu), 3),
    }


def omnidoc_pages(folder: Path, ocr_cache: Path | None, out: Path) -> dict:
    """The demo's pages read as `jocr parse` reads an image page without the model (RapidOCR lines
    through the rules over lines: benchmarks/accuracy_sets.py's `lines`), without (the control) and with
    the image table pass (`tables_pages.page_with_tables` given the image), scored by
    `jocr.checks.omnidoc.evaluate_dir`. `ocr_cache`: a folder of `<crc>-<image name>.json` RapidOCR lines
    (accuracy_sets' `_ocr-lines`), read instead of OCR'ing a page again; with it the OCR of the crops the
    table pass reads again is kept under `out/crop-ocr` and read back."""
    import sys

    from PIL import Image

    from jocr.checks.omnidoc import evaluate_dir
    from jocr.layout.render import page_markdown
    from jocr.layout.tables_pages import page_with_tables

    sys.path.insert(0, str(REPO / "benchmarks"))
    import baselines
    import table_pages

    if ocr_cache is not None:  # the table pass's crops read back too (benchmarks/table_pages.py)
        crops = out / "crop-ocr"
        crops.mkdir(parents=True, exist_ok=True)
        table_pages._cached_crop_ocr(crops)

    data = json.loads((folder / "OmniDocBench_demo.json").read_text())
    dirs = {"lines": out / "lines", "lines+image-tables": out / "lines+image-tables"}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    seconds = []
    for page in data:
        name = page["page_info"]["image_path"]
        image = Image.open(folder / "images" / name).convert("RGB")
        cached = sorted(ocr_cache.glob(f"*-{name}.json")) if ocr_cache else []
        rows = json.loads(cached[0].read_text())["lines"] if cached else None
        if rows is None:
            lines = baselines.rapidocr_lines(image, words=True)
        else:
            lines = [(ln[0], tuple(ln[1]), *ln[2:]) for ln in rows]
        tree = baselines.ocr_tree(image, lines)
        source = baselines.ocr_layer(image, lines).lines  # word boxes kept, for the table pass
        stem = Path(name).stem
        control = page_markdown(tree) if tree is not None else ""
        (dirs["lines"] / f"{stem}.md").write_text(control)
        c0 = cpu_seconds()
        passed = table_pages.with_tables(page_with_tables, tree, control, image, source)
        seconds.append(cpu_seconds() - c0)
        (dirs["lines+image-tables"] / f"{stem}.md").write_text(passed)
    results = {}
    for key, d in dirs.items():
        scores = evaluate_dir(folder / "OmniDocBench_demo.json", d).as_dict()
        results[key] = {k: scores[k] for k in scores if k.startswith(("teds", "table", "text_edit", "order"))}
    results["pass_cpu_s_per_page"] = round(statistics.mean(seconds), 3)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parse", action="store_true", help="also the default jocr.parse (slow on a CPU)")
    parser.add_argument("--model", help="model directory for --parse (default: the bundled models/)")
    parser.add_argument("--omnidocbench", help="the OmniDocBench demo folder (JSON + images/)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--only", choices=("pdf", "image", "real-image", "omnidoc-pages", "omnidoc-crops"),
                        help="only this set (pdf: the vector table set, olmOCR table tests)")  # fmt: skip
    parser.add_argument("--ocr-cache", help="RapidOCR lines of the demo's pages (accuracy_sets' _ocr-lines)")
    parser.add_argument("--out", default="/tmp/elements-out", help="where page outputs are written")
    parser.add_argument("--ocr", default="auto", help="the OCR engine of the image-table sets' crops")
    args = parser.parse_args()
    model = None
    if args.parse:
        from jocr.pipeline import load_model

        model = load_model(args.model)
    if args.only == "omnidoc-crops":
        results = {}
    elif args.only == "pdf":
        results = {"table_set": table_set(model), "olmocr_tables": olmocr_tables(model)}
    elif args.only == "image":
        results = {"image_table_set": image_table_set(args.ocr)}
    elif args.only == "real-image":
        results = {"real_image_table_set": image_table_set(args.ocr, REAL_IMAGE_SET)}
    elif args.only == "omnidoc-pages":
        cache = Path(args.ocr_cache) if args.ocr_cache else None
        results = {"omnidoc_pages": omnidoc_pages(Path(args.omnidocbench), cache, Path(args.out))}
    else:
        results = {"table_set": table_set(model), "olmocr_tables": olmocr_tables(model),
                   "image_table_set": image_table_set(args.ocr),
                   "real_image_table_set": image_table_set(args.ocr, REAL_IMAGE_SET)}  # fmt: skip
    if args.omnidocbench and args.only in (None, "omnidoc-crops"):
        results["omnidoc_crops"] = omnidoc_crops(Path(args.omnidocbench), args.ocr)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
