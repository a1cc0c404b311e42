"""Geometry from pixels (jocr.layout.tables_sources.image_rules) on the frozen image-table set: a scanned
and a photographed booktabs table keep their top and bottom rules; the set's boxes lie inside its images."""

import json
from pathlib import Path

from PIL import Image

from jocr.layout.tables_sources import (
    PAGE_SPLIT,
    SplitConfig,
    _dark,
    _long_runs,
    _long_runs_numpy,
    image_rules,
    line_pieces,
)
from jocr.lines.types import Line, Word

SET = Path(__file__).resolve().parents[2] / "data/frozen-test/tables-image"
REAL_SET = Path(__file__).resolve().parents[2] / "data/frozen-real-tables-image"


def rows() -> list[dict]:
    return [json.loads(line) for line in (SET / "manifest.jsonl").read_text().splitlines()]


def test_ocr_pieces_keep_the_recognisers_spacing():
    """RapidOCR gives boxes for parts of a word ("em" "u") and one per CJK character: a piece's text is
    the line's own spelling, not its word boxes joined by spaces."""
    emu = Line("emu", (0, 0, 30, 10), words=[Word("em", (0, 0, 18, 10)), Word("u", (20, 0, 30, 10))])
    chars = [Word(c, (12 * k, 0, 12 * k + 10, 10)) for k, c in enumerate("中易字库")]
    chars.append(Word("微软", (200, 0, 222, 10)))
    zh = Line("中易字库 微软", (0, 0, 222, 10), words=chars)
    assert [p.text for p in line_pieces([emu, zh])] == ["emu", "中易字库", "微软"]
    odd = Line("abc", (0, 0, 30, 10), words=[Word("x", (0, 0, 10, 10)), Word("y", (12, 0, 30, 10))])
    assert [p.text for p in line_pieces([odd])] == ["x y"]  # letters not in the line's text: as before


def test_ocr_pieces_keep_the_lines_full_width_punctuation():
    """The line's text has its Chinese brackets full-width (the OCR line source's rule), its word boxes
    the recogniser's ASCII ones: the piece is still the line's spelling, not characters parted by spaces."""
    chars = [Word(c, (12 * k, 0, 12 * k + 10, 10)) for k, c in enumerate("营业收入(百万元)")]
    line = Line("营业收入（百万元）", (0, 0, 106, 10), words=chars)
    assert [p.text for p in line_pieces([line])] == ["营业收入（百万元）"]


def _line(y: float, *words: tuple[str, float, float]) -> Line:
    """A line 20 units high at `y` of words (text, x0, x1)."""
    boxes = [Word(t, (x0, y, x1, y + 20)) for t, x0, x1 in words]
    return Line(" ".join(t for t, _, _ in words), (words[0][1], y, words[-1][2], y + 20), words=boxes)


def test_a_line_bridging_two_columns_is_split_where_the_other_rows_column_starts():
    """An OCR line that runs over a table's column gap (`'R-intro' "An Introduction"`, its gap a word
    space or two) is split where the second column's cells of the rows around it start; the same gap in a
    line of prose, lined up with nothing, is kept."""
    rows = [
        _line(0, ("R-FAQ", 0, 60)),
        _line(0, ("R", 100, 110), ("FAQ", 118, 150)),  # a row the OCR read as two lines
        _line(40, ("R-intro", 0, 88), ("An", 100, 120), ("Introduction", 128, 215)),
        _line(80, ("R-data", 0, 62), ("R", 101, 111), ("Data", 119, 160)),
        _line(120, ("R-lang", 0, 64), ("The", 99, 130), ("Language", 138, 220)),
    ]
    texts = [p.text for p in line_pieces(rows, PAGE_SPLIT)]
    assert texts == ["R-FAQ", "R FAQ", "R-intro", "An Introduction", "R-data", "R Data", "R-lang",
                     "The Language"]  # fmt: skip
    prose = [
        _line(0, ("It", 0, 20), ("ends.", 28, 70), ("Then", 85, 130), ("more", 138, 180)),
        _line(25, ("words", 0, 50), ("go", 58, 75), ("on", 83, 100), ("here", 108, 150)),
        _line(50, ("and", 0, 30), ("here", 38, 80), ("too", 88, 120), ("again", 128, 180)),
    ]
    assert [p.text for p in line_pieces(prose, PAGE_SPLIT)] == [ln.text for ln in prose]
    # a crop (the default): every gap of half a line height splits, lined up or not
    assert [p.text for p in line_pieces(prose[:1])] == ["It ends.", "Then more"]


def test_a_short_run_flush_right_with_the_rows_around_it_is_a_column():
    """Figures set flush right: a run ending where other rows' runs end (right of the gap) is a cell; a
    long run that ends at a paragraph's margin is not."""
    rows = [
        _line(0, ("Gnat", 0, 40), ("13.65", 120, 170)),
        _line(30, ("Gnu", 0, 35), ("92.5", 130, 170)),
        _line(60, ("Emu", 0, 35), ("per", 45, 70), ("1.0", 142, 170)),
        _line(90, ("Armadillo", 0, 80), ("8.99", 128, 170)),
    ]
    pieces = line_pieces(rows, SplitConfig(min_gap=None, aligned_gap=0.5))
    assert [p.text for p in pieces] == ["Gnat", "13.65", "Gnu", "92.5", "Emu per", "1.0", "Armadillo", "8.99"]
    long_run = [(f"w{i}", 100 + 40 * i, 130 + 40 * i) for i in range(6)]
    prose = [
        _line(0, ("Ends.", 0, 50), *long_run),
        _line(25, ("words", 0, 60), ("Next", 78, 130), *long_run[1:]),
        _line(50, ("and", 0, 40), ("So", 60, 132), *long_run[1:]),
    ]
    assert len(line_pieces(prose, PAGE_SPLIT)) == 3


def test_set_boxes_lie_inside_their_images():
    found = rows()
    assert len(found) == 20 and {r["kind"] for r in found} == {"scan", "photo"}
    for row in found:
        with Image.open(SET / row["image"]) as image:
            x0, y0, x1, y1 = row["region"]
            assert 0 <= x0 < x1 <= image.width and 0 <= y0 < y1 <= image.height


def test_real_set_matches_its_sources_and_boxes_lie_inside_their_images():
    manifest = [json.loads(line) for line in (REAL_SET / "manifest.jsonl").read_text().splitlines()]
    sources = [json.loads(line) for line in (REAL_SET / "sources.jsonl").read_text().splitlines()]
    assert [r["id"] for r in manifest] == [s["id"] for s in sources]
    assert {r["kind"] for r in manifest} == {"scan", "photo"}
    assert {r["style"] for r in manifest} == {"en", "zh"}
    for row, source in zip(manifest, sources, strict=True):
        assert row["html"] == source["html"] and row["html"].startswith("<table><tr>"), row["id"]
        with Image.open(REAL_SET / row["image"]) as image:
            x0, y0, x1, y1 = row["region"]
            assert 0 <= x0 < x1 <= image.width and 0 <= y0 < y1 <= image.height


def test_booktabs_top_and_bottom_rules_found_in_scans_and_photos():
    booktabs = [r for r in rows() if r["style"] == "booktabs"]
    kinds = set()
    for row in booktabs:
        with Image.open(SET / row["image"]) as image:
            crop = image.crop(row["region"])
        width = crop.width
        across = [r for r in image_rules(crop) if r.horizontal and r.x1 - r.x0 >= 0.8 * width]
        # (a midrule may run under part of the head only: a cmidrule under a spanning label)
        assert len(across) >= 2, row["id"]
        assert across[0].y0 < 0.2 * crop.height and across[-1].y0 > 0.8 * crop.height, row["id"]
        kinds.add(row["kind"])
    assert kinds == {"scan", "photo"}


def test_opencv_and_numpy_runs_agree_on_a_clean_rule():
    image = Image.new("L", (300, 100), 255)
    image.paste(0, (20, 40, 280, 42))
    dark = _dark(__import__("numpy").asarray(image))
    (a,) = _long_runs(dark, 30)
    (b,) = _long_runs_numpy(dark, 30)
    for found in (a, b):  # the rule's ends within a pixel, its two rows
        assert abs(found[0] - 20) <= 1 and abs(found[1] - 280) <= 1 and found[2:] == (40.0, 41.0)
