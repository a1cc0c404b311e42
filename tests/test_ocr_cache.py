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
