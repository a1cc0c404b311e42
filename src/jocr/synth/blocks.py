"""Content blocks of a synthetic page and their ground-truth Markdown.

Ground-truth conventions (the same ones the model is trained to emit):
- headings `#`/`##`/`###`; paragraphs as one line (the image wraps them); lists `- item` or `1. item`;
- tables as HTML (`<table><tr><th>..</th></tr><tr><td>..</td></tr></table>`, `rowspan`/`colspan` attributes,
  header cells as `<th>`), one line per table;
- inline formulas `$...$`, display formulas `$$...$$` on their own line;
- running headers, footers and page numbers are drawn but never written (olmOCR-Bench `absent` tests).
Blocks are separated by one blank line, in natural reading order.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

# A run of a paragraph or list item: ("text", "words ...") or ("math", "latex").
Run = tuple[str, str]


@dataclass
class Heading:
    text: str
    level: int = 2
    cjk: bool = False
    kind: str = "heading"

    def markdown(self) -> str:
        return f"{'#' * self.level} {self.text}"


@dataclass
class Paragraph:
    runs: list[Run]
    cjk: bool = False
    kind: str = "paragraph"

    def markdown(self) -> str:
        return runs_markdown(self.runs)


@dataclass
class ListBlock:
    items: list[list[Run]]
    ordered: bool = False
    cjk: bool = False
    kind: str = "list"

    def marker(self, index: int) -> str:
        return f"{index + 1}." if self.ordered else "-"

    def markdown(self) -> str:
        return "\n".join(f"{self.marker(i)} {runs_markdown(item)}" for i, item in enumerate(self.items))


@dataclass
class Cell:
    text: str
    header: bool = False
    rowspan: int = 1
    colspan: int = 1


@dataclass
class Table:
    """Rows of cells in HTML order (a cell covered by an earlier row's rowspan is not repeated)."""

    rows: list[list[Cell]]
    cjk: bool = False
    kind: str = "table"
    _grid: list[list[tuple[int, int]]] | None = field(default=None, repr=False)

    def markdown(self) -> str:
        parts = ["<table>"]
        for row in self.rows:
            parts.append("<tr>")
            for cell in row:
                tag = "th" if cell.header else "td"
                attrs = ""
                if cell.rowspan > 1:
                    attrs += f' rowspan="{cell.rowspan}"'
                if cell.colspan > 1:
                    attrs += f' colspan="{cell.colspan}"'
                parts.append(f"<{tag}{attrs}>{html.escape(cell.text, quote=False)}</{tag}>")
            parts.append("</tr>")
        parts.append("</table>")
        return "".join(parts)

    def grid(self) -> list[list[tuple[int, int]]]:
        """The expanded grid: grid[r][c] = (row index, cell index in that row) of the cell covering (r, c)."""
        if self._grid is not None:
            return self._grid
        n_rows = len(self.rows)
        n_cols = sum(cell.colspan for cell in self.rows[0])
        grid: list[list[tuple[int, int] | None]] = [[None] * n_cols for _ in range(n_rows)]
        for r, row in enumerate(self.rows):
            c = 0
            for i, cell in enumerate(row):
                while c < n_cols and grid[r][c] is not None:
                    c += 1
                if c + cell.colspan > n_cols or r + cell.rowspan > n_rows:
                    raise ValueError("table spans run past the grid")
                for dr in range(cell.rowspan):
                    for dc in range(cell.colspan):
                        if grid[r + dr][c + dc] is not None:
                            raise ValueError("overlapping table spans")
                        grid[r + dr][c + dc] = (r, i)
                c += cell.colspan
        if any(slot is None for row in grid for slot in row):
            raise ValueError("table grid has holes")
        self._grid = grid  # type: ignore[assignment]
        return self._grid  # type: ignore[return-value]

    @property
    def n_cols(self) -> int:
        return len(self.grid()[0])

    def cell_at(self, r: int, c: int) -> Cell:
        row, index = self.grid()[r][c]
        return self.rows[row][index]


@dataclass
class Formula:
    latex: str
    kind: str = "formula"

    def markdown(self) -> str:
        return f"$${self.latex}$$"


@dataclass
class Furniture:
    """Running header, footer or page number: on the image, not in the ground truth."""

    text: str
    kind: str = "header"  # header | footer | page_number
    cjk: bool = False


Block = Heading | Paragraph | ListBlock | Table | Formula


def runs_markdown(runs: list[Run]) -> str:
    """Runs are separated by one space (text runs carry no edge spaces); the renderer draws that space."""
    return " ".join(f"${value}$" if kind == "math" else value for kind, value in runs if value)


def page_markdown(blocks: list[Block]) -> str:
    return "\n\n".join(block.markdown() for block in blocks)
