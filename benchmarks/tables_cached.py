"""The table reader over image-table crops whose OCR lines are cached: two versions of the reader's rules
compared on the same OCR (OCR of a crop costs seconds and varies with the engine's threads; the rules
cost milliseconds).

    PYTHONPATH=src python benchmarks/tables_cached.py data/frozen-real-tables-image --cache DIR [--ocr auto]

The folder holds `manifest.jsonl` in the image-table sets' format (id, image, kind, style, region in
pixels, html). Each crop is cut and OCR'd as `jocr.layout.elements.read_table_region` does, its lines
pickled under `--cache` the first time and read back after; the rules are found in the crop's pixels
each time. Prints TEDS and TEDS-S per table and by kind and style. `-v` prints the HTML read and wanted.
Run it with another checkout's `src` on PYTHONPATH to score that version's rules on the same lines.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
from pathlib import Path

from jocr.checks.teds import teds
from jocr.documents.pages import LoadOptions, open_source
from jocr.layout import elements

_EMPTY = "<table></table>"


def crop_table(folder: Path, row: dict, cache: Path, ocr: str) -> str:
    with open_source(str(folder / row["image"]), LoadOptions()) as source:
        image = source.render(0)
        scale = elements.page_scale(source, 0, image)
    crop_box = tuple(round(v * scale) for v in row["region"])
    crop = image.crop(crop_box)
    key = cache / f"{folder.name}-{row['id']}-{ocr}.pkl"
    if key.exists():
        lines = pickle.loads(key.read_bytes())
    else:
        lines = elements._ocr_lines(crop, ocr, orient=False)
        key.write_bytes(pickle.dumps(lines))
    if lines is None:
        raise SystemExit(f"no OCR engine for --ocr {ocr}")
    table = elements.crop_table_of_lines(crop, crop_box, scale, lines)
    return _EMPTY if table.empty else table.html


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a folder with manifest.jsonl and its images")
    parser.add_argument("--cache", required=True, help="where the crops' OCR lines are pickled")
    parser.add_argument("--ocr", default="auto", help="the OCR engine (jocr --ocr)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the HTML read and wanted")
    args = parser.parse_args()
    folder, cache = Path(args.folder), Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines() if line.strip()]
    groups: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        html = crop_table(folder, row, cache, args.ocr)
        score = (teds(html, row["html"]), teds(html, row["html"], structure_only=True))
        for key in ("all", row.get("kind", ""), row.get("style", "")):
            groups.setdefault(key, []).append(score)
        print(
            f"{row['id']:28s} {row.get('kind', ''):6s} {row.get('style', ''):9s} "
            f"{score[0]:.3f} {score[1]:.3f}"
        )
        if args.verbose:
            print("  read  ", html, "\n  wanted", row["html"])
    for key, scores in groups.items():
        print(f"{key:10s} n={len(scores):2d} TEDS {statistics.mean(s[0] for s in scores):.4f} "
              f"TEDS-S {statistics.mean(s[1] for s in scores):.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
