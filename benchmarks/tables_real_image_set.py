"""Builds the real image-table set (data/frozen-real-tables-image): tables cut from PDFs of Debian
documentation packages, each page rendered at 150 dpi and scanned (`jocr.synth.degrade`) or photographed
(`jocr.synth.degrade.photograph`), the table's box carried through the same geometry as
benchmarks/tables_image_set.py does for the synthetic set.

    PYTHONPATH=src python benchmarks/tables_real_image_set.py --docs DIR            # build
    PYTHONPATH=src python benchmarks/tables_real_image_set.py --docs DIR --draft    # truth drafts

`DIR` is a folder holding the packages' `usr/share/doc` trees (`dpkg-deb -x <package>.deb DIR`); each
source names its file below `usr/share/doc`. `sources.jsonl` holds per table: id, package, file, page
(0-based), region (PDF points), lang and the ground-truth HTML. `--draft` prints the table reader's HTML
over each region from the PDF's text layer (the first draft of the truth, which was then checked and
corrected by eye against the rendered crop). The build writes `images/<id>.jpg` (greyscale JPEG) and
`manifest.jsonl` in the image-table set's format (id, image, kind, style, region in pixels, html).
Deterministic: the same PDFs give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from jocr.documents.pages import LoadOptions, open_source

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tables_image_set import DPI, degraded_table  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "data/frozen-real-tables-image"


def sources() -> list[dict]:
    return [json.loads(line) for line in (TARGET / "sources.jsonl").read_text().splitlines() if line.strip()]


def _pdf(docs: Path, row: dict) -> Path:
    path = docs / "usr/share/doc" / row["file"]
    if not path.is_file():
        raise SystemExit(f"{path}: not found (extract package {row['package']} into {docs})")
    return path


def drafts(docs: Path) -> None:
    from jocr.layout.elements import read_table_region

    for row in sources():
        with open_source(str(_pdf(docs, row)), LoadOptions()) as source:
            result = read_table_region(source, row["page"], tuple(row["region"]))
        text = result.markdown or result.note or ""
        print(row["id"], text.encode("utf-8", "replace").decode())  # a font's private glyphs: surrogates


def build(docs: Path) -> list[dict]:
    (TARGET / "images").mkdir(parents=True, exist_ok=True)
    out = []
    for n, row in enumerate(sources()):
        with open_source(str(_pdf(docs, row)), LoadOptions(dpi=DPI)) as source:
            page = source.render(row["page"])
        kind = "scan" if n % 2 == 0 else "photo"  # alternating: each package and language gets both
        rng = random.Random(f"tables-real-image-{row['id']}")
        image, log, region = degraded_table(page, row["region"], kind, rng)
        name = f"images/{row['id']}.jpg"
        image.convert("L").save(TARGET / name, quality=80, optimize=True)
        out.append({"id": row["id"], "image": name, "kind": kind, "style": row["lang"], "region": region,
                    "unit": "px", "html": row["html"], "source": f"{row['package']}:{row['file']}#"
                    f"{row['page'] + 1}", "degrade": log})  # fmt: skip
    (TARGET / "manifest.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", required=True, help="folder with the extracted packages (usr/share/doc)")
    parser.add_argument("--draft", action="store_true", help="print the reader's HTML from the text layer")
    args = parser.parse_args()
    if args.draft:
        drafts(Path(args.docs))
        return
    rows = build(Path(args.docs))
    print(f"{len(rows)} images in {TARGET}")


if __name__ == "__main__":
    main()
