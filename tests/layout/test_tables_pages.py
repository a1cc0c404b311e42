"""Tables inside pages (jocr.layout.tables_pages): a table block re-read when the reader does better, and
tables joined over a page break."""

import pytest

from jocr.layout.tables import Piece, Rule
from jocr.layout.tables_pages import TablePassConfig, better, improve_tables, merge_continued_tables
from jocr.layout.tree import FROM_ANCHORED, FROM_LINES, PARAGRAPH, TABLE, Block, PageTree, TreeLine

ROWS = [
    ["Item", "Mass", "Year"],
    ["Gene", "1.5 kg", "1990"],
    ["Plan", "20.25 kg", "2001"],
    ["Nurse", "3 kg", "1977"],
]


def booktabs_page():
    """A paragraph, then a booktabs table (rules above, under the header, below) at 14 pt row pitch."""
    pieces = [
        Piece("A paragraph of prose that runs across the whole width of the column.", (10, 20, 400, 30))
    ]
    for r, row in enumerate(ROWS):
        for c, text in enumerate(row):
            y = 50 + r * 14
            pieces.append(Piece(text, (20 + c * 80, y, 20 + c * 80 + 6 * len(text), y + 9)))
    rules = [Rule(15, 47, 260, 47), Rule(15, 62, 260, 62), Rule(15, 104, 260, 104)]
    return pieces, rules


def test_block_of_body_rows_gets_its_header_and_structure():
    pieces, rules = booktabs_page()
    # what the rules over lines give: the body rows only, as a plain grid
    body = (
        "<table>"
        + "".join("<tr>" + "".join(f"<td>{t}</td>" for t in row) + "</tr>" for row in ROWS[1:])
        + "</table>"
    )
    tree = PageTree(width=500, height=700, blocks=[
        Block(type=PARAGRAPH, text="A paragraph", markdown="A paragraph", bbox=(10, 20, 400, 30)),
        Block(type=TABLE, text="", markdown=body, html=body, bbox=(20, 64, 220, 101)),
    ])  # fmt: skip
    replaced = improve_tables(tree, pieces, rules)
    assert len(replaced) == 1 and replaced[0][0] == body
    html = tree.blocks[1].html
    assert html.startswith("<table><tr><th>Item</th><th>Mass</th><th>Year</th></tr>")
    assert "paragraph" not in html


def test_a_reading_that_loses_words_is_not_better():
    pieces, rules = booktabs_page()
    from jocr.layout.tables import read_table

    table = read_table(pieces, rules, (15, 60, 260, 80))  # one body row and the header
    old = "<table><tr><td>Gene</td><td>1.5 kg</td></tr><tr><td>Plan</td><td>20.25 kg</td></tr></table>"
    assert not better(table, old, TablePassConfig())


def _tree(page, html, bbox, before=()):
    blocks = [*before, Block(type=TABLE, text=html, markdown=html, html=html, bbox=bbox)]
    return PageTree(width=600, height=800, blocks=blocks, page=page)


def test_table_over_a_page_break_joins_when_the_header_repeats():
    head = "<tr><th>A</th><th>B</th></tr>"
    first = _tree(1, f"<table>{head}<tr><td>1</td><td>2</td></tr></table>", (50, 600, 400, 760))
    second = _tree(2, f"<table>{head}<tr><td>3</td><td>4</td></tr></table>", (60, 40, 300, 120))
    assert merge_continued_tables([first, second]) == [0, 1]
    assert (
        first.blocks[-1].html
        == f"<table>{head}<tr><td>1</td><td>2</td></tr><tr><td>3</td><td>4</td></tr></table>"
    )
    assert second.blocks[-1].markdown == ""


def test_tables_join_when_columns_line_up_and_not_otherwise():
    first = _tree(1, "<table><tr><td>1</td><td>2</td></tr></table>", (50, 600, 400, 760))
    lined = _tree(2, "<table><tr><td>3</td><td>4</td></tr></table>", (52, 40, 398, 120))
    elsewhere = _tree(2, "<table><tr><td>3</td><td>4</td></tr></table>", (300, 40, 560, 120))
    wider = _tree(2, "<table><tr><td>3</td><td>4</td><td>5</td></tr></table>", (50, 40, 400, 120))
    assert merge_continued_tables([first, elsewhere]) == []
    assert merge_continued_tables([first, wider]) == []
    assert merge_continued_tables([first, lined]) == [0, 1]
    prose = Block(
        type=PARAGRAPH,
        text="Text after the table.",
        markdown="Text after the table.",
        bbox=(50, 770, 400, 780),
    )
    ended = _tree(1, "<table><tr><td>1</td><td>2</td></tr></table>", (50, 600, 400, 760))
    ended.blocks.append(prose)
    assert (
        merge_continued_tables(
            [ended, _tree(2, "<table><tr><td>3</td><td>4</td></tr></table>", (50, 40, 400, 120))]
        )
        == []
    )


def test_a_table_found_on_a_page_image_is_read_again_from_its_crop(monkeypatch):
    """The page's OCR joined the second and third cells of each row into one line (one piece): the
    table found there has two columns. The crop's own OCR gives each word its box, and the three
    columns come apart."""
    from PIL import Image

    from jocr.layout import elements
    from jocr.layout.tables_pages import image_page_tables
    from jocr.layout.tree import TreeLine
    from jocr.lines.types import RAPIDOCR, Line, Word

    def cell_box(r, c):
        return (20 + c * 80, 100 + r * 16, 20 + c * 80 + 6 * len(ROWS[r][c]), 110 + r * 16)

    prose = TreeLine("Prose above the table, a line of it.", (10, 20, 400, 30), "ocr")
    blocks = [Block(PARAGRAPH, text="Prose.", markdown="Prose.", bbox=prose.bbox, lines=[prose])]
    for r, row in enumerate(ROWS):
        joined = (cell_box(r, 1)[0], cell_box(r, 1)[1], cell_box(r, 2)[2], cell_box(r, 2)[3])
        lines = [TreeLine(row[0], cell_box(r, 0), "ocr"), TreeLine(f"{row[1]} {row[2]}", joined, "ocr")]
        blocks.append(Block(PARAGRAPH, text=" ".join(row), markdown=" ".join(row), bbox=lines[0].bbox,
                            lines=lines))  # fmt: skip
    tree = PageTree(width=500, height=700, unit="px", blocks=blocks).numbered()
    crops = []

    def crop_ocr(crop, ocr, orient=True, det_min_side=None):
        assert det_min_side is None  # the page pass: the engine's own least side (2026-12-08)
        crops.append(crop.size)
        ox, oy = 15, 95  # the region (the rows' extent) less half a line height (5 px)

        def moved(box):
            return (box[0] - ox, box[1] - oy, box[2] - ox, box[3] - oy)

        out = []
        for r, row in enumerate(ROWS):
            words = [Word(text, moved(cell_box(r, c)), 0.9) for c, text in enumerate(row)]
            box = (words[0].box[0], words[0].box[1], words[-1].box[2], words[0].box[3])
            out.append(Line(" ".join(row), box, 10.0, 0, 0.9, RAPIDOCR, words))
        return out

    monkeypatch.setattr(elements, "_ocr_lines", crop_ocr)
    assert image_page_tables(tree, Image.new("RGB", (500, 700), "white")) == 1
    (table,) = [b for b in tree.blocks if b.type == TABLE]
    assert crops and "<td>1990</td>" in table.html and "<td>1.5 kg</td>" in table.html
    tree_without = PageTree(width=500, height=700, unit="px", blocks=blocks).numbered()
    assert image_page_tables(tree_without, Image.new("RGB", (500, 700), "white"),
                             TablePassConfig(crop_ocr="none")) == 1  # fmt: skip
    (line_table,) = [b for b in tree_without.blocks if b.type == TABLE]
    assert "<td>1.5 kg 1990</td>" in line_table.html  # the control: the page's lines alone


def _moved(box, dx, dy):
    return (box[0] - dx, box[1] - dy, box[2] - dx, box[3] - dy)


def test_a_crop_reading_with_fewer_rows_than_the_page_gives_way(monkeypatch):
    """The crop's OCR lost the last row (on a photographed page: a row's symbols, the rest of the line
    then read as a wrapped cell of the row above): the crop's table has fewer rows than the page's lines
    gave, and the page's reading stays. The crop read with all its rows replaces it (the control)."""
    from PIL import Image

    from jocr.layout import elements
    from jocr.layout.tables import read_table
    from jocr.layout.tables_pages import crop_table
    from jocr.lines.types import RAPIDOCR, Line, Word

    def cell_box(r, c):
        return (20 + c * 80, 100 + r * 16, 20 + c * 80 + 6 * len(ROWS[r][c]), 110 + r * 16)

    pieces = [Piece(t, cell_box(r, c)) for r, row in enumerate(ROWS) for c, t in enumerate(row)]
    page = read_table(pieces, [])
    page.bbox = (20, 100, 200, 158)
    lose_last = [True]

    def crop_ocr(crop, ocr, orient=True, det_min_side=None):
        ox, oy = 15, 95  # the region less half a line height (5 px)
        out = []
        for r, row in enumerate(ROWS[:-1] if lose_last[0] else ROWS):
            words = [Word(t, _moved(cell_box(r, c), ox, oy), 0.9) for c, t in enumerate(row)]
            box = (words[0].box[0], words[0].box[1], words[-1].box[2], words[0].box[3])
            out.append(Line(" ".join(row), box, 10.0, 0, 0.9, RAPIDOCR, words))
        return out

    monkeypatch.setattr(elements, "_ocr_lines", crop_ocr)
    image = Image.new("RGB", (500, 700), "white")
    assert crop_table(image, 1.0, page, 10.0, TablePassConfig()) is page
    lose_last[0] = False
    again = crop_table(image, 1.0, page, 10.0, TablePassConfig())
    assert again is not page and again.n_rows == len(ROWS) and "<td>1977</td>" in again.html


def test_a_crop_reading_of_contents_stands_with_fewer_rows(monkeypatch):
    """The page's lines kept each page number in its title's line ("Vector arithmetic 8", five rows);
    the crop's words part them, and its four rows read as a table of contents: that reading stands, so
    the pass can leave the region to the rules' list."""
    from PIL import Image

    from jocr.layout import elements
    from jocr.layout.tables import read_table
    from jocr.layout.tables_pages import crop_table, is_table_of_contents
    from jocr.lines.types import RAPIDOCR, Line, Word

    entries = [("2.2", "Vector arithmetic", "8"), ("2.3", "Sequences", "9"), ("2.4", "Logical vectors", "9"),
               ("2.5", "Missing values", "10"), ("2.6", "Character vectors", "11")]  # fmt: skip
    pieces = []
    for r, (number, title, page_number) in enumerate(entries):
        y = 100 + r * 16
        pieces += [Piece(number, (20, y, 38, y + 10)), Piece(f"{title} {page_number}", (60, y, 300, y + 10))]
    page = read_table(pieces, [])
    page.bbox = (20, 100, 300, 174)
    assert page.n_rows == 5 and not is_table_of_contents(page)

    def crop_ocr(crop, ocr, orient=True, det_min_side=None):
        out = []
        for r, cells in enumerate(entries[:4]):  # the last entry's line lost
            y = 5 + r * 16
            boxes = [(5, y, 23, y + 10), (45, y, 45 + 6 * len(cells[1]), y + 10), (270, y, 282, y + 10)]
            words = [Word(t, b, 0.9) for t, b in zip(cells, boxes, strict=True)]
            out.append(Line(" ".join(cells), (5, y, 282, y + 10), 10.0, 0, 0.9, RAPIDOCR, words))
        return out

    monkeypatch.setattr(elements, "_ocr_lines", crop_ocr)
    again = crop_table(Image.new("RGB", (500, 700), "white"), 1.0, page, 10.0, TablePassConfig())
    assert again is not page and again.n_rows == 4 and is_table_of_contents(again)


def test_cjk_text_split_differently_by_two_readings_is_kept():
    """Two OCR passes split a run of CJK characters differently ("华文字库+苹方" vs "华文 字库 + 苹方"):
    compared character by character, the reading keeps the block's words."""
    from jocr.layout.tables import read_table

    cells = [["引擎", "字库"], ["xeCJK", "华文 字库 + 苹方"], ["LuaTeX", "中易 字库"]]
    pieces = [Piece(t, (20 + c * 120, 50 + r * 14, 20 + c * 120 + 8 * len(t), 59 + r * 14))
              for r, row in enumerate(cells) for c, t in enumerate(row)]  # fmt: skip
    table = read_table(pieces, [], None, None)
    old = "<table><tr><td>引擎</td><td>字库</td></tr><tr><td>xeCJK</td><td>华文字库+苹方</td></tr>"
    old += "<tr><td>LuaTeX</td><td>中易字库</td></tr></table>"
    assert better(table, old, TablePassConfig())


def test_a_found_table_replaces_the_fragments_it_covers_together():
    """The rules over lines made a small table block of two rows out of a long table, whose other rows
    stayed paragraphs: the table found over all of them is judged against all of them (it was refused
    for adding too many words to the small block alone)."""
    from PIL import Image

    from jocr.layout.tables_pages import image_page_tables
    from jocr.layout.tree import TreeLine

    rows = [[f"name{r}", f"{r}.5 kg", f"{1990 + r}"] for r in range(12)]

    def line(r, c):
        x0 = 20 + c * 80
        return TreeLine(rows[r][c], (x0, 100 + r * 16, x0 + 6 * len(rows[r][c]), 110 + r * 16))

    small = [line(r, c) for r in (0, 1) for c in range(3)]
    html = "".join(f"<tr>{''.join(f'<td>{t}</td>' for t in rows[r])}</tr>" for r in (0, 1))
    blocks = [Block(TABLE, text="", markdown=f"<table>{html}</table>", html=f"<table>{html}</table>",
                    bbox=(20, 100, 200, 126), lines=small)]  # fmt: skip
    for r in range(2, 12):
        lines = [line(r, c) for c in range(3)]
        blocks.append(Block(PARAGRAPH, text=" ".join(rows[r]), markdown=" ".join(rows[r]),
                            bbox=(20, 100 + r * 16, 200, 110 + r * 16), lines=lines))  # fmt: skip
    tree = PageTree(width=500, height=700, unit="px", blocks=blocks).numbered()
    image = Image.new("RGB", (500, 700), "white")
    assert image_page_tables(tree, image, TablePassConfig(crop_ocr="none")) == 1
    (table,) = tree.blocks
    assert table.type == TABLE and "<td>name11</td>" in table.html and "<td>name0</td>" in table.html


def test_a_table_of_contents_on_a_page_image_is_not_put_in_as_a_table():
    """Entries and their page numbers line up as two columns, which the detector finds as a table; a
    table of contents (`line_rules.is_contents`: titles, page numbers that never go down) stays the
    blocks the rules made of it. The same rows with numbers that are not page numbers go in as a table."""
    from PIL import Image

    from jocr.layout.tables_pages import image_page_tables
    from jocr.layout.tree import TreeLine

    def page(rows):
        blocks = []
        for r, (title, number) in enumerate(rows):
            lines = [TreeLine(title, (20, 100 + r * 16, 20 + 6 * len(title), 110 + r * 16)),
                     TreeLine(number, (400, 100 + r * 16, 400 + 6 * len(number), 110 + r * 16))]  # fmt: skip
            blocks.append(Block(PARAGRAPH, text=f"{title} {number}", markdown=f"{title} {number}",
                                bbox=(20, 100 + r * 16, 420, 110 + r * 16), lines=lines))  # fmt: skip
        return PageTree(width=500, height=700, unit="px", blocks=blocks).numbered()

    titles = ["1 Introduction and preliminaries", "1.1 The R environment", "1.2 Related software",
              "1.3 R and statistics", "2 Simple manipulations", "2.1 Vectors and assignment"]  # fmt: skip
    image = Image.new("RGB", (500, 700), "white")
    contents = page(list(zip(titles, ["2", "2", "2", "3", "7", "7"])))
    assert image_page_tables(contents, image, TablePassConfig(crop_ocr="none")) == 0
    assert all(b.type == PARAGRAPH for b in contents.blocks)
    amounts = page(list(zip(titles, ["12.5", "3.75", "0.25", "120.5", "7.0", "1.5"])))
    assert image_page_tables(amounts, image, TablePassConfig(crop_ocr="none")) == 1


def _contents_page(rows):
    """A page image's tree of contents rows, each cell its own OCR line, 16 px apart."""
    from jocr.layout.tree import TreeLine

    blocks = []
    for r, row in enumerate(rows):
        y = 100 + r * 16
        lines = [TreeLine(text, (20 + 190 * c, y, 20 + 190 * c + 6 * len(text), y + 10))
                 for c, text in enumerate(row)]  # fmt: skip
        blocks.append(Block(PARAGRAPH, text=" ".join(row), markdown=" ".join(row),
                            bbox=(20, y, lines[-1].bbox[2], y + 10), lines=lines))  # fmt: skip
    return PageTree(width=600, height=700, unit="px", blocks=blocks).numbered()


def test_contents_read_down_their_columns_are_no_table():
    """A photographed contents page: its page numbers sit half a line off their titles, so the rows
    read merge two or three entries each and the rows' test (`line_rules.is_contents`) misses it; its
    columns (titles, then page numbers that never go down) show it. So do a contents with one page number
    misread ("6" as "9") and a contents set in two columns. A table of names and counts whose counts go
    up and down is still put in, and so is a column of years."""
    from PIL import Image

    from jocr.layout.line_rules import is_contents
    from jocr.layout.tables_model import Cell, Table
    from jocr.layout.tables_pages import contents_columns, image_page_tables

    rows = [["2.2 2.3 2.4", "Vector arithmetic Generating sequences Logical vectors", "8 9 9"],
            ["2.5 2.6", "Missing values Character vectors", "10 11"]]  # fmt: skip
    merged = Table([Cell(r, c, t) for r, row in enumerate(rows) for c, t in enumerate(row)], 2, 3)
    assert contents_columns(merged) and not is_contents(rows)
    years = Table([Cell(r, c, t) for r, row in enumerate([["Plan", "1990"], ["Gene", "1995"]])
                   for c, t in enumerate(row)], 2, 2)  # fmt: skip
    assert not contents_columns(years)

    image = Image.new("RGB", (600, 700), "white")
    config = TablePassConfig(crop_ocr="none")
    titles = ["Vector arithmetic", "Generating sequences", "Logical vectors", "Missing values",
              "Character vectors", "Index vectors", "Other objects", "Intrinsic attributes"]  # fmt: skip
    misread = _contents_page(list(zip(titles, ["2", "2", "3", "4", "5", "9", "6", "7"], strict=True)))
    assert image_page_tables(misread, image, config) == 0
    assert all(b.type == PARAGRAPH for b in misread.blocks)
    two = _contents_page([(t, str(k + 2), t.upper(), "20") for k, t in enumerate(titles[:4])])
    assert image_page_tables(two, image, config) == 0
    counts = _contents_page(list(zip(titles, ["12", "3", "40", "7", "25", "9", "31", "2"], strict=True)))
    assert image_page_tables(counts, image, config) == 1


def test_page_lines_bridging_a_tables_columns_are_split_by_their_word_boxes():
    """Each row of a two-column table was read by the page's OCR as one line ("'R-intro' An Introduction
    to R"), so its lines alone show no columns and no table is found; with the source lines' word boxes
    the lines split where the second column's runs start, and the table is found and read."""
    from ocr_table_fixtures import bridged_lines, bridged_tree
    from PIL import Image

    from jocr.layout.tables_pages import image_page_tables

    source = bridged_lines()

    def tree():
        return bridged_tree(source)

    image = Image.new("RGB", (500, 700), "white")
    assert image_page_tables(tree(), image, TablePassConfig(crop_ocr="none")) == 0  # the lines alone
    split = tree()
    assert image_page_tables(split, image, TablePassConfig(crop_ocr="none"), lines=source) == 1
    (table,) = split.blocks
    assert "<td>R-intro</td><td>An Introduction</td>" in table.html


def _model_table(lines, source=FROM_ANCHORED):
    """A page holding one table block over `lines` ((text, box) each), all its runs in one row."""
    tree_lines = [TreeLine(text, box, run=k + 1, size=10.0) for k, (text, box) in enumerate(lines)]
    html = "<table><tr><td>" + "</td><td>".join(t for t, _ in lines) + "</td></tr></table>"
    box = (min(b[0] for _, b in lines), min(b[1] for _, b in lines),
           max(b[2] for _, b in lines), max(b[3] for _, b in lines))  # fmt: skip
    block = Block(type=TABLE, text=html, markdown=html, html=html, lines=tree_lines, bbox=box)
    return PageTree(width=500, height=700, source=source, blocks=[block])


def test_a_models_table_where_the_reader_finds_none_gives_way_to_the_rules_over_its_lines():
    # a title wrapped over three lines, written by the model as one row of three cells
    title = [("elsarticle.cls - A better", (60, 40, 200, 52)), ("way to format your", (60, 56, 180, 68)),
             ("document", (60, 72, 120, 84))]  # fmt: skip
    pieces = [Piece(text, box) for text, box in title]
    tree = _model_table(title)
    replaced = improve_tables(tree, pieces, [])
    assert len(replaced) == 1 and replaced[0][0].startswith("<table>") and replaced[0][1] == ""
    assert [b.type for b in tree.blocks] == [PARAGRAPH]
    assert tree.blocks[0].text == "elsarticle.cls - A better way to format your document"
    assert [ln.run for ln in tree.blocks[0].lines] == [1, 2, 3]
    # a table the rules over lines made (no model answer) stays
    tree = _model_table(title, source=FROM_LINES)
    assert improve_tables(tree, pieces, []) == [] and tree.blocks[0].type == TABLE
    # and where the reader finds a table in the region, a table stays, however the model cut it
    pieces, rules = booktabs_page()
    tree = _model_table([(p.text, p.box) for p in pieces[1:]])
    improve_tables(tree, pieces, rules)
    assert [b.type for b in tree.blocks] == [TABLE]


def test_a_detectors_table_region_the_rules_missed_is_read_from_its_crop(monkeypatch):
    """The rules over the page's lines find no table (its rows read as paragraphs); a layout detector
    called the region a table: it is read from its crop (`region_table`) and replaces the paragraphs
    inside it, prose outside it kept. A region over a table already found is not read again."""
    from PIL import Image

    from jocr.layout import elements, tables_detect
    from jocr.layout.tables import Cell, Table
    from jocr.layout.tables_pages import image_page_tables

    def paragraph(text, box):
        line = TreeLine(text, box, "ocr")
        return Block(PARAGRAPH, text=text, markdown=text, bbox=box, lines=[line])

    blocks = [paragraph("Prose above the table, a line of it.", (10, 20, 400, 30))]
    blocks += [paragraph(f"row {r} value {r}", (20, 100 + 16 * r, 200, 110 + 16 * r)) for r in range(3)]
    tree = PageTree(width=500, height=700, unit="px", blocks=blocks).numbered()
    tree.table_regions = [(15, 95, 210, 150)]
    read = []

    def crop_reader(image, box, scale, ocr, keep=None):
        read.append((box, keep))
        cells = [Cell(r, c, f"{'row' if c == 0 else 'value'} {r}") for r in range(3) for c in range(2)]
        return Table(cells=cells, n_rows=3, n_cols=2, method="learned")

    monkeypatch.setattr(tables_detect, "find_tables", lambda *a, **k: [])
    monkeypatch.setattr(elements, "image_region_table", crop_reader)
    assert image_page_tables(tree, Image.new("RGB", (500, 700), "white")) == 1
    assert [b.type for b in tree.blocks] == [PARAGRAPH, TABLE]
    assert tree.blocks[1].bbox == (15, 95, 210, 150) and "<td>value 2</td>" in tree.blocks[1].html
    assert read and read[0][1] == (15, 95, 210, 150)  # the crop padded, its pieces kept to the region
    read.clear()
    assert image_page_tables(tree, Image.new("RGB", (500, 700), "white")) == 0  # found already
    assert not read


def test_a_scanned_pdf_pages_tree_in_points_gets_the_image_table_pass(monkeypatch):
    """A scanned PDF page is read from OCR lines in points: its tables are searched in the page image as
    an image's are; a page read from its text layer is not (its pass reads the layer's pieces)."""
    from PIL import Image

    from jocr.layout import tables_pages

    calls = []
    monkeypatch.setattr(tables_pages, "image_page_tables", lambda tree, image, lines=None: calls.append(tree))
    image = Image.new("RGB", (300, 400), "white")

    def tree(source):
        line = TreeLine("A line.", (10, 20, 100, 30), source)
        block = Block(PARAGRAPH, text="A line.", markdown="A line.", bbox=line.bbox, lines=[line])
        return PageTree(width=150, height=200, unit="pt", blocks=[block]).numbered()

    scanned = tree("ocr")
    tables_pages.page_with_tables(scanned, "A line.", image=image)
    assert calls == [scanned]
    tables_pages.page_with_tables(tree("textlayer"), "A line.", image=image)
    assert calls == [scanned]


def test_a_contents_the_page_lines_read_is_not_read_again_from_its_crop(monkeypatch):
    """Rows of a title and a page number that never goes down: the page's own reading is a contents, so
    no crop is cut (the structure model would grid a crop its rules find no table in)."""
    from PIL import Image

    from jocr.layout import elements
    from jocr.layout.tables import read_table
    from jocr.layout.tables_pages import crop_table, is_table_of_contents

    entries = [
        ("Vector arithmetic", "8"),
        ("Sequences", "9"),
        ("Logical vectors", "9"),
        ("Missing values", "10"),
    ]
    pieces = []
    for r, (title, page_number) in enumerate(entries):
        y = 100 + r * 16
        pieces += [Piece(title, (20, y, 140, y + 10)), Piece(page_number, (280, y, 292, y + 10))]
    page = read_table(pieces, [])
    page.bbox = (20, 100, 292, 158)
    assert is_table_of_contents(page)
    monkeypatch.setattr(elements, "image_region_table", lambda *a, **k: pytest.fail("a crop was read"))
    assert crop_table(Image.new("RGB", (500, 700), "white"), 1.0, page, 10.0, TablePassConfig()) is page


def test_a_detectors_table_region_over_list_items_is_left_to_the_rules(monkeypatch):
    """The rules read entries there (a contents with page numbers): the detector's "table" does not
    overrule them, and no crop is read."""
    from PIL import Image

    from jocr.layout import elements, tables_detect
    from jocr.layout.tables_pages import image_page_tables
    from jocr.layout.tree import LIST_ITEM

    blocks = []
    for r in range(4):
        line = TreeLine(f"{r + 1} Chapter {r + 1} {3 * r + 1}", (20, 100 + 16 * r, 300, 110 + 16 * r), "ocr")
        item = Block(LIST_ITEM, text=line.text, markdown=f"- {line.text}", bbox=line.bbox, lines=[line])
        blocks.append(item)
    tree = PageTree(width=500, height=700, unit="px", blocks=blocks).numbered()
    tree.table_regions = [(15, 95, 310, 170)]
    monkeypatch.setattr(tables_detect, "find_tables", lambda *a, **k: [])
    monkeypatch.setattr(elements, "image_region_table", lambda *a, **k: pytest.fail("a crop was read"))
    assert image_page_tables(tree, Image.new("RGB", (500, 700), "white")) == 0
    assert [b.type for b in tree.blocks] == [LIST_ITEM] * 4


def _table_block(rows, box, pitch=16):
    """A table block of the rules over `rows` (cell texts) set from `box`'s top-left at `pitch`."""
    lines = [
        TreeLine(
            text,
            (box[0] + 90 * c, box[1] + pitch * r, box[0] + 90 * c + 7 * len(text), box[1] + pitch * r + 10),
        )
        for r, row in enumerate(rows)
        for c, text in enumerate(row)
    ]
    html = (
        "<table>" + "".join(f"<tr>{''.join(f'<td>{t}</td>' for t in row)}</tr>" for row in rows) + "</table>"
    )
    return Block(TABLE, text="", markdown=html, html=html, bbox=box, lines=lines)


def test_a_detector_region_over_two_table_blocks_is_read_as_one_table(monkeypatch):
    """The rules parted one table in two blocks (a cell of several lines broke the rows' alignment); a
    detector's table region holding both is read from its crop as one table, which replaces them. A
    region over one block, over a block it holds only in part, or over prose past the blocks is not read
    again."""
    from PIL import Image

    from jocr.layout import elements, tables_detect
    from jocr.layout.tables import Cell, Table
    from jocr.layout.tables_pages import image_page_tables

    top = _table_block([["rating", "buy"], ["rule", "up 15%"]], (20, 100, 300, 126))
    bottom = _table_block([["sector", "hold"], ["rule", "flat"]], (20, 140, 300, 166))
    rows = [["rating", "buy"], ["rule cell line", "up 15%"], ["sector", "hold"], ["rule", "flat"]]
    cells = [Cell(r, c, t) for r, row in enumerate(rows) for c, t in enumerate(row)]
    read = []

    def crop_reader(image, box, scale, ocr, keep=None):
        read.append(keep)
        return Table(cells=list(cells), n_rows=4, n_cols=2, method="learned")

    monkeypatch.setattr(tables_detect, "find_tables", lambda *a, **k: [])
    monkeypatch.setattr(elements, "image_region_table", crop_reader)
    image = Image.new("RGB", (500, 700), "white")
    one = PageTree(width=500, height=700, unit="px", blocks=[top]).numbered()
    one.table_regions = [(10, 95, 310, 170)]
    assert image_page_tables(one, image) == 0 and not read  # one block: found already
    tree = PageTree(width=500, height=700, unit="px", blocks=[top, bottom]).numbered()
    tree.table_regions = [(10, 95, 310, 150)]  # holds the first whole, the second's centre outside
    assert image_page_tables(tree, image) == 0 and not read
    prose = "A paragraph after the table, which the region reaches over."
    below = Block(
        PARAGRAPH,
        text=prose,
        markdown=prose,
        bbox=(20, 180, 300, 190),
        lines=[TreeLine(prose, (20, 180, 300, 190))],
    )
    tree = PageTree(width=500, height=700, unit="px", blocks=[top, bottom, below]).numbered()
    tree.table_regions = [(10, 95, 310, 200)]  # holds prose past the tables: left to the rules
    assert image_page_tables(tree, image) == 0 and not read
    between = Block(PARAGRAPH, text="cell line", markdown="cell line", bbox=(20, 128, 100, 138),
                    lines=[TreeLine("cell line", (20, 128, 100, 138))])  # fmt: skip
    tree = PageTree(width=500, height=700, unit="px", blocks=[top, between, bottom]).numbered()
    tree.table_regions = [(10, 95, 310, 170)]  # a cell's line the rules left between the two parts
    assert image_page_tables(tree, image) == 1 and read == [(10, 95, 310, 170)]
    (table,) = tree.blocks
    assert table.type == TABLE and "<td>up 15%</td>" in table.html and "<td>flat</td>" in table.html


def test_a_ruled_table_inside_a_rules_table_over_two_columns_splits_it(monkeypatch):
    """The rules over lines made one table of a page's two columns (answer choices lined up across the
    gutter), the right column holding a ruled table the pixels' rules find: the found table takes the
    lines in its region, the host's other lines are laid out again by the line rules, and the table
    comes after the text above it in its column."""
    from PIL import Image

    from jocr.layout import tables_detect
    from jocr.layout.tables import Cell, Table
    from jocr.layout.tables_pages import image_page_tables

    left = ["Paige cut a cake into twenty", "pieces. What share is left?"]
    right = ["The table shows the bills", "Bree got for her birthday."]
    lines = [TreeLine(t, (20, 100 + 16 * k, 240, 110 + 16 * k), "ocr", size=10) for k, t in enumerate(left)]
    lines += [
        TreeLine(t, (300, 100 + 16 * k, 520, 110 + 16 * k), "ocr", size=10) for k, t in enumerate(right)
    ]
    grid = [["Value", "Count"], ["$5", "5"], ["$10", "3"]]
    lines += [TreeLine(t, (320 + 90 * c, 150 + 16 * r, 340 + 90 * c, 160 + 16 * r), "ocr", size=10)
              for r, row in enumerate(grid) for c, t in enumerate(row)]  # fmt: skip
    host = Block(TABLE, text="", markdown="<table></table>", html="<table></table>", bbox=(20, 100, 520, 200),
                 lines=lines)  # fmt: skip
    tree = PageTree(width=600, height=800, unit="px", blocks=[host]).numbered()
    found = Table(cells=[Cell(r, c, t) for r, row in enumerate(grid) for c, t in enumerate(row)], n_rows=3,
                  n_cols=2, bbox=(310, 145, 510, 200))  # fmt: skip
    monkeypatch.setattr(tables_detect, "find_tables", lambda *a, **k: [found])
    assert image_page_tables(tree, Image.new("RGB", (600, 800), "white")) == 1
    kinds = [(b.type, b.text) for b in tree.blocks]
    assert kinds[-1][0] == TABLE and "<td>$10</td>" in tree.blocks[-1].html
    rest = " ".join(b.text for b in tree.blocks[:-1])  # the columns' lines, as the line rules lay them out
    assert all(text in rest for text in left + right) and "$10" not in rest
