"""Builds the frozen image-table set (data/frozen-test/tables-image) from the frozen vector table set
(data/frozen-test/tables): each PDF page rendered at 150 dpi and degraded as a scan (`jocr.synth.degrade`)
or photographed (`jocr.synth.degrade.photograph`), the table's box carried through the same geometry.

    PYTHONPATH=src python benchmarks/tables_image_set.py [--count 20]

Writes `images/<id>.jpg` (greyscale JPEG) and `manifest.jsonl`: id, image, kind (scan | photo), style, the
table's region in the image's pixels, the exact HTML, and what the degradation did. Deterministic: the
same sources give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

from jocr.documents.pages import LoadOptions, open_source
from jocr.synth.degrade import _perspective_coefficients, degrade, photograph

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "data/frozen-test/tables"
TARGET = REPO / "data/frozen-test/tables-image"
DPI = 150
PAD = 6  # pixels around the mapped table box (anti-aliased edges, a rule's thickness)


def _corners(region, scale):
    x0, y0, x1, y1 = (v * scale for v in region)
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]


def _scan_corners(points, log, size):
    """The table's corners after `degrade`'s geometric steps (rotation about the centre, then shear)."""
    w, h = size
    out = list(points)
    if "rotate_deg" in log:
        a = math.radians(log["rotate_deg"])  # PIL turns counter-clockwise on screen (y down)
        cx, cy = w / 2, h / 2
        cos, sin = math.cos(a), math.sin(a)
        out = [(cx + (x - cx) * cos + (y - cy) * sin, cy - (x - cx) * sin + (y - cy) * cos) for x, y in out]
    if "shear" in log:
        k = log["shear"]
        out = [(x - k * y + k * h / 2, y) for x, y in out]
    return out


def _photo_corners(points, log, size):
    """The table's corners after `photograph`'s perspective (page corners -> `log["corners"]`)."""
    w, h = size
    page = [(0.0, 0.0), (w, 0.0), (w, h), (0.0, h)]
    a, b, c, d, e, f, g, k = _perspective_coefficients([tuple(p) for p in log["corners"]], page)
    out = []
    for x, y in points:
        z = g * x + k * y + 1
        out.append(((a * x + b * y + c) / z, (d * x + e * y + f) / z))
    return out


def degraded_table(page, region_pt, kind: str, rng: random.Random):
    """(image, degradation log, the table's region in the image's pixels): `page` (rendered at DPI) scanned
    (`degrade`) or photographed (`photograph`) at strength 0.6, and the table's box `region_pt` (PDF
    points) carried through the same geometry, padded by PAD."""
    points = _corners(region_pt, DPI / 72)
    if kind == "scan":
        image, log = degrade(page, 0.6, rng)
        points = _scan_corners(points, log, page.size)
    else:
        image, log = photograph(page, 0.6, rng)
        points = _photo_corners(points, log, page.size)
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    region = [
        max(0, round(min(xs)) - PAD), max(0, round(min(ys)) - PAD),
        min(image.width, round(max(xs)) + PAD), min(image.height, round(max(ys)) + PAD),
    ]  # fmt: skip
    return image, log, region


def build(count: int) -> list[dict]:
    rows = [json.loads(line) for line in (SOURCE / "manifest.jsonl").read_text().splitlines()][:count]
    (TARGET / "images").mkdir(parents=True, exist_ok=True)
    out = []
    for n, row in enumerate(rows):
        with open_source(str(SOURCE / row["pdf"]), LoadOptions(dpi=DPI)) as source:
            page = source.render(0)
        kind = "scan" if (n // 4) % 2 == 0 else "photo"  # each style both scanned and photographed
        rng = random.Random(f"tables-image-{row['id']}")
        image, log, region = degraded_table(page, row["region"], kind, rng)
        name = f"images/{row['id']}.jpg"
        image.convert("L").save(TARGET / name, quality=80, optimize=True)
        out.append({"id": row["id"], "image": name, "kind": kind, "style": row["style"], "region": region,
                    "unit": "px", "html": row["html"], "degrade": log})  # fmt: skip
    (TARGET / "manifest.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20, help="tables taken from the vector set, in order")
    args = parser.parse_args()
    rows = build(args.count)
    print(f"{len(rows)} images in {TARGET}")


if __name__ == "__main__":
    main()
