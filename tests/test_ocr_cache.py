"""benchmarks/ocr_cache.py: an engine call seen before (the same pixels and arguments) is answered from the
cache with the very lines the engine gave; other pixels or arguments run the engine."""

import sys
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from jocr.lines.types import Line, Word  # noqa: E402
from ocr_cache import cached_read  # noqa: E402


def test_a_reading_seen_before_comes_from_the_cache(tmp_path):
    calls = []

    def engine(image, max_side, min_conf, use_cls, timeout_s=None):
        calls.append(image.getpixel((0, 0)))
        words = [Word("Hello", (1.0, 2.0, 30.0, 12.0), 0.9)]
        return [Line(f"Hello {len(calls)}", (1.0, 2.0, 60.5, 12.0), 10.0, 0, 0.95, "rapidocr", words)]

    read = cached_read(engine, tmp_path)
    white, grey = Image.new("L", (40, 30), 255), Image.new("L", (40, 30), 128)
    first = read(white, 2000, 0.3, False)
    again = cached_read(engine, tmp_path)(white.copy(), 2000, 0.3, False)  # a new process, same pixels
    assert again == first and len(calls) == 1
    assert read(grey, 2000, 0.3, False)[0].text == "Hello 2"  # other pixels
    assert read(white, 2000, 0.3, True)[0].text == "Hello 3"  # other arguments
    assert len(calls) == 3


def test_the_detectors_least_side_is_in_the_key_only_where_it_changes_the_reading(tmp_path):
    """An image whose shorter side (after the longest is scaled to max_side) is at least both limits is not
    scaled by the detector under either, so it keeps the key a call without det_min_side gave it; a smaller
    image reads otherwise and gets its own key."""
    seen = []

    def engine(image, max_side, min_conf, use_cls, timeout_s=None, det_min_side=None):
        seen.append(det_min_side)
        return [Line(f"read {len(seen)}", (0.0, 0.0, 5.0, 5.0), 5.0, 0, 0.9, "rapidocr", None)]

    read = cached_read(engine, tmp_path)
    page, crop = Image.new("L", (1240, 1754), 255), Image.new("L", (900, 300), 255)
    assert read(page, 2000, 0.3, False)[0].text == "read 1"
    assert read(page, 2000, 0.3, False, None, 480)[0].text == "read 1"  # a page: the same reading
    assert read(crop, 2000, 0.3, False)[0].text == "read 2"
    assert read(crop, 2000, 0.3, False, None, 480)[0].text == "read 3"  # a crop: read again, at 480
    assert seen == [None, None, 480]
    wide = Image.new("L", (4000, 800), 255)  # 800 px, but 400 once the longest side is 2,000
    read(wide, 2000, 0.3, False)
    assert read(wide, 2000, 0.3, False, None, 480)[0].text == "read 5"
