"""Write samples/sample.pdf (and sample.md, its ground truth): three small pages the bundled model can read.

The pages are synthetic pages of the `cpu-small` profile (384 x 384 pixels, large DejaVu text) that the
bundled model was trained on, drawn from the held-out test split: a heading with text, a table, and a
formula with a table. They are embedded at 144 dpi, so `jocr parse` (which renders PDFs at 144 dpi) sees
exactly the 384-pixel pages.

    .venv/bin/python samples/make_sample.py
"""

from __future__ import annotations

import time
from pathlib import Path

from jocr.synth import generate_page

# Test-split seeds (never trained on): heading + text, heading + table, formula + table.
SEEDS = (2000000300, 2000000313, 2000000330)
DPI = 144
HERE = Path(__file__).resolve().parent


def main() -> None:
    pages = [generate_page(seed, profile="cpu-small", degrade=False) for seed in SEEDS]
    images = [p.image.convert("RGB") for p in pages]
    fixed = time.gmtime(1767225600)  # 2026-01-01: reproducible bytes
    images[0].save(
        HERE / "sample.pdf",
        "PDF",
        save_all=True,
        append_images=images[1:],
        resolution=DPI,
        title="jocr sample",
        creationDate=fixed,
        modDate=fixed,
    )
    (HERE / "sample.md").write_text("\n\n<--- Page Split --->\n\n".join(p.markdown for p in pages) + "\n")
    print(f"wrote {HERE / 'sample.pdf'} ({len(images)} pages) and {HERE / 'sample.md'}")


if __name__ == "__main__":
    main()
