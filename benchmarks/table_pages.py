"""Tables on whole page images, end to end (data/frozen-real-table-pages, a development set): each page read
as `jocr parse` reads an image page without the model (RapidOCR lines through the rules over lines:
benchmarks/baselines.py's `ocr_tree`), without (the control, `lines`) and with the image table pass
(`tables_pages.page_with_tables` given the image, `lines+image-tables`), its tables scored against all
the page's true tables (`jocr.checks.table_pages.score_page`: TEDS of the matched tables, tables found,
missed and false, as the OmniDocBench page score matches them).

    PYTHONPATH=src python benchmarks/table_pages.py --cache DIR [-v]          # score
    PYTHONPATH=src python benchmarks/table_pages.py --build --docs DIR         # write the table-free pages
    PYTHONPATH=src python benchmarks/table_pages.py --cache DIR --folder data/frozen-real-prose-pages
    PYTHONPATH=src python benchmarks/table_pages.py --cache DIR --parse models \
        --folder data/frozen-real-table-pages2

`--cache DIR`: the pages' RapidOCR lines with their word boxes (`<id>.json`; the pass is given them, as
`jocr parse` gives it the page's OCR lines) and the OCR lines of the crops the table pass reads
(`crop-<hash>.pkl`, keyed by the crop's pixels) are kept there and read back, so two versions of the rules
are compared on the same OCR. `--build` renders and degrades the pages without tables that `pages.jsonl`
names by package file (the table pages are the real image-table set's images, `--docs` as for
benchmarks/tables_real_image_set.py) and writes `manifest.jsonl`; `--folder` names another page set
(data/frozen-real-prose-pages: pages without tables, where only false tables count; data/frozen-real-
table-pages2: held out). `--parse MODEL` also scores the whole `jocr parse` of each page image with that
model (the layout detector's table regions and every rule of the page pass; its RapidOCR readings kept in
`DIR/ocr` by benchmarks/ocr_cache.py), as `parse`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import random
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "data/frozen-real-table-pages"
sys.path.insert(0, str(REPO / "benchmarks"))


def build(docs: Path, target: Path = TARGET) -> list[dict]:
    from jocr.documents.pages import LoadOptions, open_source
    from tables_image_set import DPI, degraded_table

    (target / "images").mkdir(parents=True, exist_ok=True)
    out = []
    for line in (target / "pages.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "file" in row:
            path = docs / "usr/share/doc" / row["file"]
            if not path.is_file():
                raise SystemExit(f"{path}: not found (extract package {row['package']} into {docs})")
            with open_source(str(path), LoadOptions(dpi=DPI)) as source:
                page = source.render(row["page"])
            rng = random.Random(f"table-pages-{row['id']}")
            image, _, _ = degraded_table(page, (0, 0, 1, 1), row["kind"], rng)
            row["image"] = f"images/{row['id']}.jpg"
            image.convert("L").save(target / row["image"], quality=80, optimize=True)
            row["source"] = f"{row['package']}:{row['file']}#{row['page'] + 1}"
        out.append({k: row[k] for k in ("id", "image", "kind", "lang", "source", "tables", "html")})
    (target / "manifest.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out))
    return out


def _cached_crop_ocr(cache: Path) -> None:
    """The crop reader's OCR (`jocr.layout.elements._ocr_lines`) read back from `cache` when the same
    pixels were read before."""
    from jocr.layout import elements

    read = elements._ocr_lines

    def cached(image, ocr, orient=True, det_min_side=None):
        # the detector's least side, where a version passes one (RapidOCR's own before any did)
        settings = f"{image.size}{ocr}{orient}" + ("" if det_min_side is None else f"det{det_min_side}")
        key = hashlib.sha1(image.convert("RGB").tobytes() + settings.encode()).hexdigest()
        path = cache / f"crop-{key[:20]}.pkl"
        if path.exists():
            return pickle.loads(path.read_bytes())
        lines = read(image, ocr, orient) if det_min_side is None else read(image, ocr, orient, det_min_side)
        path.write_bytes(pickle.dumps(lines))
        return lines

    elements._ocr_lines = cached


def page_lines(image, cache: Path, page_id: str):
    import baselines

    path = cache / f"{page_id}.json"
    if path.exists():
        return [(line[0], tuple(line[1]), *line[2:]) for line in json.loads(path.read_text())]
    lines = baselines.rapidocr_lines(image, words=True)
    path.write_text(json.dumps(lines, ensure_ascii=False))
    return lines


def with_tables(page_with_tables, tree, markdown: str, image, lines) -> str:
    """The table pass over a page image given its OCR lines (word boxes kept), or without them for a
    version of `page_with_tables` that takes none (an older `src`, read as the baseline)."""
    import inspect

    if "lines" in inspect.signature(page_with_tables).parameters:
        return page_with_tables(tree, markdown, image=image, lines=lines)
    return page_with_tables(tree, markdown, image=image)


def score(folder: Path, cache: Path, verbose: bool = False, parse_model: str | None = None) -> dict:
    from PIL import Image

    import baselines
    from jocr.checks.table_pages import score_page
    from jocr.layout.render import page_markdown
    from jocr.layout.tables_pages import page_with_tables

    loaded = _parse_model(parse_model, cache) if parse_model else None
    _cached_crop_ocr(cache)
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines() if line.strip()]
    totals: dict[str, dict] = {}
    for row in rows:
        image = Image.open(folder / row["image"]).convert("RGB")
        lines = page_lines(image, cache, row["id"])
        tree = baselines.ocr_tree(image, lines)
        control = page_markdown(tree) if tree is not None else ""
        passed = with_tables(page_with_tables, tree, control, image, baselines.ocr_layer(image, lines).lines)
        outputs = {"lines": control, "lines+image-tables": passed}
        if loaded is not None:
            import jocr

            outputs["parse"] = jocr.parse(str(folder / row["image"]), model=loaded).markdown
        for name, markdown in outputs.items():
            result = score_page(row["html"], markdown)
            total = totals.setdefault(name, {"scores": [], "found": 0, "missed": 0, "false": 0})
            total["scores"].extend(result.scores)
            total["found"] += result.found
            total["missed"] += result.missed
            total["false"] += result.false
            if name != "lines":
                teds = " ".join(f"{s[0]:.3f}" for s in result.scores) or "-"
                print(f"{name:18s} {row['id']:24s} {row['kind']:5s} found {result.found} missed "
                      f"{result.missed} false {result.false}  TEDS {teds}")  # fmt: skip
                if verbose:
                    for html in row["html"]:
                        print("  wanted", html)
                    from jocr.checks.table_pages import html_tables

                    for html in html_tables(markdown):
                        print("  read  ", html)
    out = {"pages": len(rows), "tables": sum(len(r["html"]) for r in rows)}
    for name, total in totals.items():
        scores = total.pop("scores")
        teds = (
            {  # a set without tables (pages of prose) counts false tables only
                "teds": round(statistics.mean(s[0] for s in scores), 4),
                "teds_s": round(statistics.mean(s[1] for s in scores), 4),
            }
            if scores
            else {}
        )
        out[name] = {**teds, **total}
    return out


def _parse_model(model: str, cache: Path):
    """The model `jocr parse` reads with, loaded once; RapidOCR's readings of whole pages (and of the crops
    read inside the parse) kept in `cache/ocr`."""
    from jocr.pipeline import load_model
    from ocr_cache import use_ocr_cache

    use_ocr_cache(cache / "ocr")
    return load_model(model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="write the table-free pages and the manifest")
    parser.add_argument("--docs", help="folder with the extracted packages (usr/share/doc), for --build")
    parser.add_argument("--cache", help="where the pages' and crops' OCR lines are kept")
    parser.add_argument("--folder", default=str(TARGET), help="a page set with manifest.jsonl")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the tables read and wanted")
    parser.add_argument("--parse", metavar="MODEL", help="also score `jocr parse` of each page with MODEL")
    args = parser.parse_args()
    if args.build:
        if not args.docs:
            raise SystemExit("--build needs --docs DIR")
        print(f"{len(build(Path(args.docs), Path(args.folder)))} pages in {args.folder}")
        return
    if not args.cache:
        raise SystemExit("--cache DIR is needed (OCR lines are kept there)")
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    print(json.dumps(score(Path(args.folder), cache, args.verbose, args.parse), indent=1))


if __name__ == "__main__":
    main()
