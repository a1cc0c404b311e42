"""The rules over lines on OCR line sets (boxes in pixels, a line's size its box's height): sizes that vary
with the glyphs, columns split by a line that crosses the gutter, a column of short lines beside prose,
Chinese lines joined without spaces."""

from __future__ import annotations

from jocr.layout.geometry import source_lines
from jocr.layout.line_rules import lines_tree, snapped_ocr_sizes
from jocr.layout.render import page_markdown
from jocr.lines.types import RAPIDOCR, Line


def ocr_line(x: float, y: float, text: str, height: float = 30, char: float = 14) -> Line:
    """A line as an OCR engine reports it: its box from the text's length, its size the box's height."""
    box = (x, y, x + char * len(text), y + height)
    return Line(text, box, height, 0, 0.95, RAPIDOCR)


def column(x: float, y: float, texts: list[str], pitch: float = 45, heights=(30, 36, 28)) -> list[Line]:
    return [ocr_line(x, y + k * pitch, t, heights[k % len(heights)]) for k, t in enumerate(texts)]


def markdown(lines: list[Line], width: float = 1700, height: float = 2200) -> str:
    return page_markdown(lines_tree(lines, width, height, unit="px", source=RAPIDOCR))


WRAPPED = [
    "The committee met on the first Monday of",
    "every month to review the work of the year",
    "and to plan the next steps of the project.",
]


def test_line_heights_that_vary_with_descenders_are_one_size():
    lines = source_lines(column(100, 300, WRAPPED, heights=(30, 37, 27)), RAPIDOCR)
    assert {ln.size for ln in snapped_ocr_sizes(lines)} == {30}
    # ... so a wrapped paragraph stays one paragraph, none of its lines a heading
    md = markdown(column(100, 300, WRAPPED, heights=(30, 37, 27)) + column(100, 500, WRAPPED))
    assert md == " ".join(WRAPPED) + "\n\n" + " ".join(WRAPPED)
    # a line twice the height is still a heading
    md = markdown([ocr_line(100, 200, "Annual Report", 64, 30)] + column(100, 300, WRAPPED))
    assert md.startswith("# Annual Report\n\n") or md.startswith("## Annual Report\n\n")


LEFT = [f"left column line {i} of the text is here" for i in range(12)]
RIGHT = [f"right column line {i} of the text is here" for i in range(12)]


def test_a_line_over_the_gutter_does_not_merge_the_columns():
    page = column(100, 300, LEFT) + column(800, 300, RIGHT)
    page.append(ocr_line(500, 260, "J. Example et al. / Journal 12 (2005)", 30, 16))  # crosses x 700-800
    md = markdown(page)
    assert "<table>" not in md
    assert md.index("left column line 11") < md.index("right column line 0")


def test_a_column_of_short_lines_beside_prose_is_a_column():
    numbers = [f"{10 * i} {i}.5 x{i} y{i}" for i in range(12)]  # a column of short lines, 700+ px wide
    page = column(100, 300, LEFT) + [ocr_line(800, 300 + 45 * k, t, 30, 60) for k, t in enumerate(numbers)]
    md = markdown(page)
    assert md.index("left column line 11") < md.index(numbers[0])
    # a narrow column of numbers beside prose is not cut off as a page column
    narrow = column(100, 300, LEFT) + [ocr_line(800, 300 + 45 * k, f"{k}.5", 30, 14) for k in range(12)]
    assert markdown(narrow).index("left column line 11") > markdown(narrow).index("0.5")


def test_chinese_lines_join_without_spaces():
    page = column(100, 300, ["这是第一行文字，内容还没有结束", "这是第二行文字。"], heights=(30,))
    assert markdown(page) == "这是第一行文字，内容还没有结束这是第二行文字。"


def _prose_columns(rows: int) -> list:
    """Two columns of prose lines side by side, `rows` lines each: rows of two long cells."""
    page = []
    for k in range(rows):
        y = 300 + 45 * k
        page.append(ocr_line(100, y, f"left column sentence number {k} goes on", 30, 14))
        page.append(ocr_line(100 + 14 * 38 + 40, y, f"right column sentence number {k} goes on", 30, 14))
    return page


def test_rows_of_prose_cells_are_columns_not_a_table():
    # Two columns whose gutter lines run over (no gutter to cut at): rows of two long cells each.
    page = _prose_columns(8)
    page.append(
        ocr_line(100, 300 + 45 * 8, "a line that runs over the gutter from left to the right side", 30, 20)
    )
    md = markdown(page)
    assert "<table>" not in md
    assert md.index("left column sentence number 7") < md.index("right column sentence number 0")
    # short cells stay a table
    rows = [ocr_line(100 + 300 * c, 300 + 45 * r, f"{r}.{c}", 30, 14) for r in range(5) for c in range(3)]
    assert "<table>" in markdown(rows)


def test_two_rows_of_prose_cells_are_columns_too():
    md = markdown(_prose_columns(2))
    assert "<table>" not in md
    assert md.index("left column sentence number 1") < md.index("right column sentence number 0")


def test_numbered_lines_and_code_beside_line_numbers_are_no_table():
    items = ["Install the package first", "Run the tests of the package", "Read the results in the log"]
    # a manuscript's line numbers in the margin, then numbered items
    page = [ocr_line(60, 300 + 45 * k, str(57 + k), 30, 14) for k in range(3)]
    page += [ocr_line(200, 300 + 45 * k, f"{k + 1}. {t}", 30, 14) for k, t in enumerate(items)]
    md = markdown(page)
    assert "<table>" not in md and "1. Install the package first" in md
    # a listing with its line numbers
    code = ["\\bool_if:NTF \\l_tmpa_bool", "{ \\int_set:Nn \\l_tmpa_int { 1 } }", "}"]
    page = [ocr_line(60, 300 + 45 * k, str(247 + k), 30, 14) for k in range(3)]
    page += [ocr_line(200, 300 + 45 * k, t, 30, 14) for k, t in enumerate(code)]
    md = markdown(page)
    assert "<table>" not in md and "int_set:Nn" in md
    # numbers beside numbers stay a table
    page = [ocr_line(60, 300 + 45 * k, str(1 + k), 30, 14) for k in range(3)]
    page += [ocr_line(400, 300 + 45 * k, f"{12 + k}.5", 30, 14) for k in range(3)]
    assert "<table>" in markdown(page)


def test_tree_of_lines_from_plain_data_is_the_tree_of_the_lines():
    from jocr.layout.line_rules import tree_of_lines
    from jocr.lines.types import OK, PageLines

    lines = column(100, 300, WRAPPED)
    data = PageLines(1700, 2200, lines, OK, "", RAPIDOCR).to_dict()
    tree = tree_of_lines(data, "px", page=3)
    assert tree.unit == "px" and tree.page == 3
    assert page_markdown(tree) == markdown(lines)
    assert all(ln.source == "ocr" for b in tree.blocks for ln in b.lines)  # the tree names no engine


def test_a_running_header_with_its_page_number_goes_however_tall_its_ocr_boxes():
    # A manual page mostly screenshot: its small interface text sets the median OCR line height (18 px),
    # so the running header's boxes (26 px) look "larger than the body"; the page number in the group says
    # it is a running header, not a title in the margin.
    header = [ocr_line(107, 70, "Debian Edu Manual", 26, 20), ocr_line(1105, 70, "39 / 95", 26, 12)]
    screen = [ocr_line(140, 250 + 40 * k, f"option {k} of the menu", 18, 10) for k in range(20)]
    md = markdown(header + screen, 1241, 1754)
    assert "Debian Edu Manual" not in md and "39 / 95" not in md
    assert md.startswith("option 0 of the menu")
    # a title in the top margin, with no page number beside it, is still a title
    title = [ocr_line(300, 70, "Annual Report of the Society", 40, 24)]
    assert "Annual Report of the Society" in markdown(title + screen, 1241, 1754)


def test_furniture_bands_follow_the_photographed_sheet():
    # A photo: the sheet spans rows 180-2050 of a 2200 px image, its running header at 11% of the image
    # height (below every band measured from the image's edge, inside them measured from the sheet's).
    header = [ocr_line(200, 250, "Chapter 2: Installing the system", 30, 14)]
    header.append(ocr_line(1400, 250, "7", 30, 14))
    body = column(200, 370, WRAPPED * 6)
    lines = header + body
    assert "Chapter 2" in markdown(lines)
    tree = lines_tree(lines, 1700, 2200, unit="px", source=RAPIDOCR, paper=(180, 2050))
    md = page_markdown(tree)
    assert "Chapter 2" not in md and md.startswith(WRAPPED[0])


def test_a_slide_title_in_the_top_band_is_kept_when_its_ocr_box_is_under_the_snapping_spread():
    # A photographed slide (846 x 657 px): its title, in the top 8% over a gap, is 54 px tall, the body's
    # OCR boxes 36-53 px (blur and perspective), the median of all lines 43. Snapped to one size with the
    # body (54 is within 1.3 times 43), it read as a running header and was dropped; by its own height it
    # is set larger than the body, a title in the margin.
    title = ocr_line(92, 42, "Installing TeX Live on Linux", 54, 16)
    body = [
        ocr_line(119, 203, "Archives and mirrors", 43, 14),
        ocr_line(142, 250, "- The installer is at the mirror below", 50, 14),
        ocr_line(162, 290, "systems/texlive/tlnet/install-tl.tar.gz", 49, 14),
        ocr_line(142, 330, "- There are many mirrors; see the list", 45, 14),
        ocr_line(160, 370, "http://ctan.org/mirrors", 41, 14),
        ocr_line(140, 410, "- A near mirror is the faster one", 53, 14),
        ocr_line(159, 450, "to download from.", 36, 14),
    ]
    footer = [
        ocr_line(64, 591, "Author and Author (University)", 31, 8),
        ocr_line(301, 581, "The document preparer", 33, 8),
        ocr_line(546, 575, "27 September 2011", 26, 8),
        ocr_line(744, 573, "9/188", 20, 8),
    ]
    md = markdown([title] + body + footer, 846, 657)
    assert md.index("Installing TeX Live on Linux") < md.index("Archives and mirrors")
    # on an upright page a running header as tall as the body stays furniture (on a landscape page one
    # line alone at the top is a slide's title whatever its height: tests/layout/test_furniture.py)
    header = ocr_line(92, 42, "Chapter 2: Installing the system", 45, 14)
    assert "Chapter 2" not in markdown([header] + body + footer, 846, 1100)
