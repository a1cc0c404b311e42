"""Scan and photo degradations (jocr.synth.degrade): the same seed gives the same bytes, pinned against the
copies committed with the frozen chart set and against digests taken before their arithmetic was made
cheaper (broadcast coordinates, in-place rounding)."""

from __future__ import annotations

import hashlib
import io
import json
import random
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw

from jocr.synth.degrade import degrade, photograph

CHARTS = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa-charts"

# sha256 of (scan, photo) pixels of `_page()` under `_copies(seed)`, written by the code before the change.
DIGESTS = {
    0: (  # degrade ops: rotate, scan, noise
        "22c85688e24c94863cc84f6c182d82ced78f144a551e171a1f96bf3cc7155a34",
        "8a7b75adebcf9a658f112c043eb51e4158704735c4f7112ea6c8082153a1bc25",
    ),
    3: (  # degrade ops: shear, contrast, jpeg
        "bfc250e4a585b3341cef3e17f0c7d2faf59701af4c217e3f18c39b7145b9f05a",
        "c605b932cd5be0dd7f1ab75ab1adfa8bbaa0d55d57b05ee0558ab81c9d58a39f",
    ),
}


def _page() -> Image.Image:
    image = Image.new("RGB", (300, 420), "white")
    draw = ImageDraw.Draw(image)
    for i in range(20):
        draw.text((10, 10 + 20 * i), f"line {i} of the test page 0123", fill=(0, 0, 0))
    return image


def _copies(image: Image.Image, seed) -> tuple[Image.Image, Image.Image]:
    """The scan and photo copies as `write_docqa_dataset` draws them for a document of seed `seed`."""
    rng = random.Random(f"docqa-copies-{seed}")
    scan, _ = degrade(image, rng.uniform(0.3, 0.7), rng)
    photo, _ = photograph(image, rng.uniform(0.3, 0.8), rng)
    return scan, photo


@pytest.mark.parametrize("seed", sorted(DIGESTS))
def test_copies_keep_their_bytes(seed):
    scan, photo = _copies(_page(), seed)
    got = tuple(hashlib.sha256(im.tobytes()).hexdigest() for im in (scan, photo))
    assert got == DIGESTS[seed]


def test_frozen_chart_copies_are_what_the_recipe_writes_from_the_pdfs():
    records = [json.loads(line) for line in (CHARTS / "docqa_test.jsonl").read_text().splitlines()]
    for record in records[:2]:
        doc = pdfium.PdfDocument(str(CHARTS / record["files"]["pdf"]))
        try:
            image = doc[0].render(scale=150 / 72).to_pil().convert("RGB")
        finally:
            doc.close()
        for name, copy in zip(("scan", "photo"), _copies(image, record["seed"])):
            buffer = io.BytesIO()
            copy.save(buffer, format="JPEG", quality=80)
            assert buffer.getvalue() == (CHARTS / record["files"][name]).read_bytes(), (record["name"], name)
