"""Build the frozen real-page set in data/frozen-real/ (see its README.md).

    python scripts/make_frozen_real.py cut        # single-page PDFs from Debian documentation packages
    python scripts/make_frozen_real.py variants   # scanned and photographed copies of those PDFs
    python scripts/make_frozen_real.py tests      # the per-variant JSONL files from tests/pdf.jsonl
    python scripts/make_frozen_real.py variants --root data/frozen-real-math/heldout2   # a math set's copies

`cut` reads data/frozen-real/sources.json (package, file, page) and needs those packages installed (`apt-get
install r-doc-pdf texlive-latex-base-doc texlive-science-doc debian-edu-doc-zh-cn`), or unpacked with
`dpkg-deb -x` into the folder `--system-root` names; it copies each page into a one-page PDF with pypdfium2,
fonts and all. `variants` needs only the PDFs: each page is rendered at 150 dpi and degraded with a seed
derived from its id (CRC-32), so the same PDFs and library versions give the same images. Scans: rotation,
uneven light, specks, blur, noise (jocr.synth.degrade with every scan operation switched on), grey, JPEG
quality 80. Photos: the page on a table, seen in perspective, under a soft shadow and warm uneven light,
slightly out of focus, JPEG quality 80. `tests` copies the hand-written tests of pdf.jsonl (pdf field
`pdf/<id>.pdf`) to scan.jsonl and photo.jsonl with the pdf field and ids of those variants, so all three are
scored by the same tests.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import zlib
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from jocr.synth.degrade import DegradeConfig, degrade

ROOT = Path(__file__).resolve().parents[1] / "data" / "frozen-real"
DPI = 150
JPEG_QUALITY = 80
VARIANTS = ("scan", "photo")


def load_sources(root: Path) -> list[dict]:
    path = root / "sources.json"
    if not path.is_file():
        sys.exit(f"{path}: missing (--root names a set's folder)")
    return json.loads(path.read_text())["pages"]


def cut(root: Path, system_root: Path = Path("/")) -> None:
    """One-page PDFs from the files sources.json names, read under `system_root` (a folder the packages
    were unpacked into with `dpkg-deb -x`, or `/` where they are installed)."""
    import pypdfium2 as pdfium

    out = root / "pdfs" / "pdf"
    out.mkdir(parents=True, exist_ok=True)
    for src in load_sources(root):
        path = system_root / Path(src["file"]).relative_to("/")
        if not path.is_file():
            sys.exit(f"{path}: missing; install the Debian package {src['package']}")
        with pdfium.PdfDocument(str(path)) as doc:
            single = pdfium.PdfDocument.new()
            single.import_pages(doc, [src["page"] - 1])
            single.save(str(out / f"{src['id']}.pdf"))
            single.close()
        print(f"{src['id']}: {path.name} page {src['page']}")


def page_seed(page_id: str, variant: str) -> int:
    return zlib.crc32(f"{page_id}/{variant}".encode())


def render(pdf: Path, dpi: int = DPI) -> Image.Image:
    import pypdfium2 as pdfium

    with pdfium.PdfDocument(str(pdf)) as doc:
        page = doc[0]
        image = page.render(scale=dpi / 72).to_pil().convert("RGB")
        page.close()
    return image


SCAN_CONFIG = DegradeConfig(
    max_rotation_deg=1.5,
    max_noise_sigma=6.0,
    max_blur_radius=1.0,
    op_probability={
        "rotate": 1.0,
        "shear": 0.3,
        "contrast": 0.5,
        "scan": 1.0,
        "blur": 0.7,
        "noise": 1.0,
        "jpeg": 0.0,  # the file itself is written as JPEG below
    },
)


def scan(image: Image.Image, seed: int) -> Image.Image:
    rng = random.Random(seed)
    out, _ = degrade(image, strength=rng.uniform(0.5, 0.8), rng=rng, cfg=SCAN_CONFIG)
    return out.convert("L")


def _perspective_coefficients(src: list[tuple[float, float]], dst: list[tuple[float, float]]) -> list[float]:
    """PIL's PERSPECTIVE coefficients mapping output points `dst` to input points `src`."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(dst, src):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        rhs += [u, v]
    return np.linalg.solve(np.array(rows, dtype=np.float64), np.array(rhs, dtype=np.float64)).tolist()


def photo(image: Image.Image, seed: int) -> Image.Image:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    w, h = image.size
    # The canvas: the page with a margin of table around it, the corners pulled in by up to 6% each way.
    margin = int(0.06 * max(w, h))
    cw, ch = w + 2 * margin, h + 2 * margin

    def jitter(x: float, y: float) -> tuple[float, float]:
        return x + rng.uniform(-0.045, 0.045) * w, y + rng.uniform(-0.035, 0.035) * h

    corners = [
        jitter(margin, margin),
        jitter(margin + w, margin),
        jitter(margin + w, margin + h),
        jitter(margin, margin + h),
    ]
    coeffs = _perspective_coefficients([(0, 0), (w, 0), (w, h), (0, h)], corners)
    page = image.transform((cw, ch), Image.PERSPECTIVE, coeffs, Image.BICUBIC, fillcolor=(0, 0, 0))
    mask = Image.new("L", (w, h), 255).transform(
        (cw, ch), Image.PERSPECTIVE, coeffs, Image.BICUBIC, fillcolor=0
    )
    table = np.empty((ch, cw, 3), dtype=np.float32)
    table[:] = (rng.uniform(70, 120), rng.uniform(55, 95), rng.uniform(40, 75))  # a wooden or dark table
    table += nrng.normal(0, 6, size=(ch, cw, 1))
    m = np.asarray(mask, dtype=np.float32)[..., None] / 255.0
    pixels = np.asarray(page, dtype=np.float32) * m + table * (1 - m)
    # Light: brighter where the lamp is, a warm cast, and a soft shadow (a hand or a phone) over one side.
    ys, xs = np.mgrid[0:ch, 0:cw].astype(np.float32)
    lx, ly = rng.uniform(0.2, 0.8) * cw, rng.uniform(0.1, 0.5) * ch
    dist = np.sqrt((xs - lx) ** 2 + (ys - ly) ** 2) / max(cw, ch)
    light = 1.0 - rng.uniform(0.15, 0.3) * dist
    pixels *= light[..., None]
    pixels *= np.array([1.0, rng.uniform(0.93, 0.97), rng.uniform(0.82, 0.9)], dtype=np.float32)
    shadow = Image.new("L", (cw, ch), 0)
    side = rng.choice(("left", "right", "bottom"))
    depth = rng.uniform(0.12, 0.25)
    if side == "left":
        poly = [(0, 0), (depth * cw, 0), (depth * 0.6 * cw, ch), (0, ch)]
    elif side == "right":
        poly = [(cw, 0), (cw * (1 - depth), 0), (cw * (1 - depth * 0.6), ch), (cw, ch)]
    else:
        poly = [(0, ch), (0, ch * (1 - depth * 0.5)), (cw, ch * (1 - depth)), (cw, ch)]
    ImageDraw.Draw(shadow).polygon(poly, fill=255)
    shadow = shadow.filter(ImageFilter.GaussianBlur(0.04 * max(cw, ch)))
    strength = rng.uniform(0.25, 0.4)
    pixels *= 1.0 - strength * np.asarray(shadow, dtype=np.float32)[..., None] / 255.0
    pixels += nrng.normal(0, 2.0, size=(ch, cw, 1))
    out = Image.fromarray(np.clip(pixels, 0, 255).round().astype(np.uint8), mode="RGB")
    return out.filter(ImageFilter.GaussianBlur(rng.uniform(0.5, 0.9)))


def jpeg_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return buf.getvalue()


def _page_pdf(root: Path, page_id: str) -> Path:
    """A page's PDF: `pdfs/pdf/<id>.pdf` (the real sets), or `pdfs/<id>.pdf` (the real math sets)."""
    nested = root / "pdfs" / "pdf" / f"{page_id}.pdf"
    return nested if nested.is_file() else root / "pdfs" / f"{page_id}.pdf"


def _test_source(root: Path) -> Path:
    """The tests the variants copy: `pdf.jsonl` (the real sets), or `math.jsonl` (the real math sets)."""
    return root / "pdf.jsonl" if (root / "pdf.jsonl").is_file() else root / "math.jsonl"


def variants(root: Path) -> None:
    for src in load_sources(root):
        pdf = _page_pdf(root, src["id"])
        clean = render(pdf)
        for variant, make in (("scan", scan), ("photo", photo)):
            out = root / "pdfs" / variant / f"{src['id']}.jpg"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(jpeg_bytes(make(clean, page_seed(src["id"], variant))))
        print(f"{src['id']}: scan and photo")


def tests(root: Path) -> None:
    """scan.jsonl and photo.jsonl: the tests of pdf.jsonl (math.jsonl) pointed at the variant's image, ids
    suffixed."""
    records = [json.loads(line) for line in _test_source(root).read_text().splitlines() if line.strip()]
    for variant in VARIANTS:
        lines = []
        for rec in records:
            stem = Path(rec["pdf"]).stem
            lines.append(
                json.dumps(
                    {**rec, "pdf": f"{variant}/{stem}.jpg", "id": f"{rec['id']}_{variant}"},
                    ensure_ascii=False,
                )
            )
        (root / f"{variant}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{variant}.jsonl: {len(lines)} tests")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("cut", "variants", "tests"))
    ap.add_argument("--root", type=Path, default=ROOT, help="the set's folder (data/frozen-real, ...)")
    ap.add_argument(
        "--system-root",
        type=Path,
        default=Path("/"),
        help="with cut: where the Debian packages' files are (a `dpkg-deb -x` folder; default /)",
    )
    args = ap.parse_args(argv)
    if args.step == "cut":
        cut(args.root, args.system_root)
    else:
        {"variants": variants, "tests": tests}[args.step](args.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
