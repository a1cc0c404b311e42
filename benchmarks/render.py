"""Pages/s of rendering + preprocessing alone (no model): where the CPU goes before the first token.

    .venv/bin/python benchmarks/render.py                 # olmOCR-Bench sample PDFs + a generated text PDF
    .venv/bin/python benchmarks/render.py --repeats 5 --pdf some.pdf

For each input set it times, per page: PDF rendering at 144 dpi (pypdfium2), the DeepSeek-OCR views
(1024 global + 640 tiles, 2..9 tiles, `VisionConfig()` defaults), and, when the bundled model exists, the
views under its own vision settings. The baseline row prepares the same views the straightforward way
(PIL crop per tile, ToTensor-style float ops on channel-last data) for a side-by-side ratio. Each number is
the median over --repeats passes over all pages.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "documents"))  # the byte-level PDF writer used by the tests

from pdf_fixtures import text_pdf  # noqa: E402

from jocr.config import OCRConfig, VisionConfig  # noqa: E402
from jocr.documents.pages import LoadOptions, expand_inputs, open_source  # noqa: E402
from jocr.documents.preprocess import preprocess_image  # noqa: E402

BENCH_PDFS = Path(__file__).resolve().parents[1] / "tests" / "data" / "olmocr-bench-sample" / "pdfs"


def median_rate(fn, pages: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return pages / statistics.median(times)


def naive_views(image, vision) -> None:
    """Baseline: the reference's per-tile PIL crops and ToTensor-style float ops on a channel-last array."""
    import numpy as np
    import torch

    from jocr.documents.preprocess import cut_tiles, global_view, page_grid

    def tensor(im):
        x = torch.from_numpy(np.array(im)).permute(2, 0, 1).float().div(255)
        return x.sub_(0.5).div_(0.5)

    grid, tiled = page_grid(*image.size, vision)
    if tiled:
        torch.stack([tensor(t) for t in cut_tiles(image, grid, vision.tile_size)])
    tensor(global_view(image, vision.base_size))


def render_all(items, options) -> list:
    images = []
    for item in items:
        with open_source(item, options) as src:
            images.extend(src.render(i) for i in range(src.num_pages))
    return images


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", action="append", help="PDFs or folders to time (default: the bench sample)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dpi", type=float, default=144.0)
    args = parser.parse_args()
    options = LoadOptions(dpi=args.dpi)
    sets: dict[str, list] = {}
    if args.pdf:
        sets["given"] = expand_inputs(args.pdf)
    elif BENCH_PDFS.is_dir():
        sets["olmOCR-Bench sample"] = expand_inputs([BENCH_PDFS])
    sets["generated text (20 Letter pages)"] = [text_pdf([f"Page {i}: lorem ipsum" for i in range(20)])]

    visions = {"deepseek-ocr (1024 + 640 tiles)": VisionConfig()}
    bundled = ROOT / "models" / "config.json"
    if bundled.is_file():
        v = OCRConfig.load(bundled.parent).vision
        visions[f"bundled ({v.base_size}, crop={v.crop_mode})"] = v

    print(f"{'input set':34} {'pages':>5} {'step':52} {'pages/s':>9} {'ms/page':>8}")
    for name, items in sets.items():
        images = render_all(items, options)
        n = len(images)
        rate = median_rate(lambda items=items: render_all(items, options), n, args.repeats)
        print(f"{name:34} {n:5d} {f'render {args.dpi:g} dpi':52} {rate:9.1f} {1000 / rate:8.1f}")
        for vname, vision in visions.items():
            base = median_rate(
                lambda v=vision, ims=images: [naive_views(im, v) for im in ims], n, args.repeats
            )
            rate = median_rate(
                lambda v=vision, ims=images: [preprocess_image(im, v) for im in ims], n, args.repeats
            )
            print(f"{name:34} {n:5d} {'preprocess (baseline) ' + vname:52} {base:9.1f} {1000 / base:8.1f}")
            print(
                f"{name:34} {n:5d} {'preprocess ' + vname:52} {rate:9.1f} {1000 / rate:8.1f}"
                f"  ({rate / base:.2f}x baseline)"
            )

            def both(v=vision, items=items):
                for item in items:
                    with open_source(item, options) as src:
                        for i in range(src.num_pages):
                            preprocess_image(src.render(i), v)

            rate = median_rate(both, n, args.repeats)
            print(f"{name:34} {n:5d} {'render + preprocess ' + vname:52} {rate:9.1f} {1000 / rate:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
