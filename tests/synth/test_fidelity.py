"""Fidelity: every word of a page's ground truth is on its image, checked by an independent OCR engine.

Clean pages are read with Tesseract (Debian `tesseract-ocr`, listed in .ci/apt-packages.txt) and the plain
words of the ground truth (formulas and markup removed) must be found among the OCR words. A control pairs
each page's OCR with another page's ground truth to show the check can fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter

import pytest

from jocr.synth import generate_page

pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian tesseract-ocr")

_MATH = re.compile(r"\$\$.+?\$\$|\$.+?\$", re.S)
_TAGS = re.compile(r"<[^>]+>")
_MARKERS = re.compile(r"^(#+|-|\d+\.)\s+", re.M)
_EDGE = re.compile(r"^[^\w€£$%]+|[^\w%]+$")


def _words(text: str) -> list[str]:
    out = []
    for token in text.split():
        token = _EDGE.sub("", token)
        if token:
            out.append(token)
    return out


def plain_words(markdown: str) -> list[str]:
    text = _MATH.sub(" ", markdown)
    text = _TAGS.sub(" ", text)
    text = _MARKERS.sub("", text)
    return _words(text)


def ocr_words(image, tmp_path, name: str) -> list[str]:
    path = tmp_path / f"{name}.png"
    image.save(path)
    result = subprocess.run(
        ["tesseract", str(path), "-", "--psm", "11"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "OMP_THREAD_LIMIT": "1"},  # one thread: the test machine's cores are shared
    )
    return _words(result.stdout)


def recall(truth: list[str], found: list[str]) -> float:
    """Share of ground-truth words (with multiplicity) present among the OCR words (1.0 if there are none)."""
    if not truth:
        return 1.0
    available = Counter(found)
    hits = 0
    for word in truth:
        if available[word] > 0:
            available[word] -= 1
            hits += 1
    return hits / len(truth)


def test_ground_truth_words_are_on_the_image(tmp_path):
    pages = [generate_page(seed, "cpu-small") for seed in range(12)]
    pages += [generate_page(3, "page")]
    pages = [p for p in pages if p.meta["language"] == "en"]
    truths = [plain_words(p.markdown) for p in pages]
    ocrs = [ocr_words(p.image, tmp_path, p.meta["name"]) for p in pages]
    recalls = [recall(t, o) for t, o in zip(truths, ocrs)]
    total_words = sum(len(t) for t in truths)
    total_hits = sum(r * len(t) for r, t in zip(recalls, truths))
    # Sparse-text mode (--psm 11) reads table cells as well as paragraphs; reading order is not compared
    # (a bag of words), so this checks that the words are drawn, and the unit tests check the order.
    assert total_hits / total_words >= 0.98, (total_hits / total_words, recalls)
    assert min(recalls) >= 0.9, recalls
    # Control: another page's ground truth is not on this image.
    shifted = [recall(t, o) for t, o in zip(truths, ocrs[1:] + ocrs[:1]) if t]
    assert max(shifted) < 0.6, shifted


def test_furniture_is_drawn_but_not_written(tmp_path):
    """Running headers and footers (the targets of `absent` tests) are on the image, not in the truth."""
    checked = 0
    for seed in range(40):
        page = generate_page(seed, "page")
        if page.meta["language"] != "en":
            continue
        for item in page.meta["furniture"]:
            if item["category"] not in ("header", "footer"):
                continue
            x0, y0, x1, y1 = item["bbox"]
            crop = page.image.crop((max(0, x0 - 8), max(0, y0 - 8), x1 + 8, y1 + 8))
            found = ocr_words(crop, tmp_path, f"{page.meta['name']}_{item['category']}")
            assert recall(_words(item["text"]), found) >= 0.75, (item["text"], found)
            assert item["text"] not in page.markdown
            checked += 1
        if checked >= 3:
            break
    assert checked >= 3
