"""The table reader's data (`jocr.layout.tables`): text pieces and ruling lines in, cells and a table out,
and the table's HTML. Coordinates are the page's (points or pixels, top-left origin)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from jocr.bbox import BBox as Box
from jocr.bbox import BoxEdges

RULES = "rules"  # structure from ruling lines (a grid, or rules between every row)
ALIGNMENT = "alignment"  # structure from the pieces' alignment (no rules, or rules across only)
NO_TABLE = "none"


@dataclass
class Piece(BoxEdges):
    """A run of words on one baseline with no column gap inside it (one cell's text on one line)."""

    text: str
    box: Box
    bold: bool = False

    @property
    def height(self) -> float:
        return max(self.box[3] - self.box[1], 1e-3)


@dataclass
class Rule:
    """A ruling segment: horizontal (y0 == y1 after `normalised`) or vertical (x0 == x1)."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def horizontal(self) -> bool:
        return (self.x1 - self.x0) >= (self.y1 - self.y0)


@dataclass
class Cell:
    row: int
    col: int
    text: str = ""
    rowspan: int = 1
    colspan: int = 1
    header: bool = False


@dataclass
class Table:
    """A read table: its cells (top-left slots in row-major order), its size, how its structure was found
    (`method`), and a one-line note when no table was found."""

    cells: list[Cell] = field(default_factory=list)
    n_rows: int = 0
    n_cols: int = 0
    method: str = NO_TABLE
    note: str = ""
    bbox: Box | None = None

    @property
    def empty(self) -> bool:
        return not self.cells

    @property
    def html(self) -> str:
        return table_html(self)

    @property
    def text(self) -> str:
        return "\n".join(" | ".join(c.text for c in cells) for cells in self.by_row().values())

    def by_row(self) -> dict[int, list[Cell]]:
        """Each row's cells left to right, rows top to bottom (rows without a cell of their own left out)."""
        rows: dict[int, list[Cell]] = {}
        for cell in sorted(self.cells, key=lambda c: (c.row, c.col)):
            rows.setdefault(cell.row, []).append(cell)
        return rows


def table_html(table: Table) -> str:
    """`<table>` with `<tr>`s, `<th>` for header cells, rowspan/colspan where above 1; "" for no table."""
    if table.empty:
        return ""
    rows = table.by_row()
    out = ["<table>"]
    for r in range(table.n_rows):
        out.append("<tr>")
        for cell in rows.get(r, []):
            tag = "th" if cell.header else "td"
            spans = (f' rowspan="{cell.rowspan}"' if cell.rowspan > 1 else "") + (
                f' colspan="{cell.colspan}"' if cell.colspan > 1 else ""
            )
            out.append(f"<{tag}{spans}>{html.escape(cell.text, quote=False)}</{tag}>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def pieces_of(cell: Cell) -> list[Piece]:
    """The pieces a cell was read from (kept on the cell while the reader works)."""
    return getattr(cell, "_pieces", [])
