"""Tables in Markdown output as cell graphs: who is above, below, left and right of whom, and which cells
are headings.

Semantics follow olmOCR-Bench's `table_parsing.py` (allenai/olmocr, main branch): HTML tables are read with
Python's `html.parser` through BeautifulSoup (so malformed markup is repaired the same way), rowspan/colspan
are expanded on an occupancy grid (a rowspan may extend the table below its last row, `rowspan="0"` runs to
the end), each cell's text is stored once at its top-left slot, and a neighbour in a direction is the first
other cell met in that direction along every row/column the cell spans (so a spanning cell can have several).
Markdown pipe tables treat row 0 and column 0 as headings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from bs4 import BeautifulSoup

from jocr.checks.text import normalize_text

Cell = tuple[int, int]  # (row, col) of a cell's top-left slot


@dataclass(frozen=True)
class CellSpec:
    """One cell as written: text, spans, whether it heads (`<th>`, in `<thead>`, or Markdown row/col 0)."""

    text: str
    rowspan: int = 1
    colspan: int = 1
    is_heading: bool = False


@dataclass
class TableGraph:
    """A parsed table. `cells` maps each cell's top-left slot to its raw text; relations map a cell to the
    set of cells adjacent to it in each direction."""

    cells: dict[Cell, str]
    headings: set[Cell]
    up: dict[Cell, set[Cell]]
    down: dict[Cell, set[Cell]]
    left: dict[Cell, set[Cell]]
    right: dict[Cell, set[Cell]]
    n_rows: int
    n_cols: int
    is_rectangular: bool
    _normalized: dict[Cell, str] = field(default_factory=dict, repr=False)

    def normalized(self, cell: Cell) -> str:
        """The cell's text after olmOCR normalisation (memoised: tests compare the same cells many times)."""
        text = self._normalized.get(cell)
        if text is None:
            text = normalize_text(self.cells[cell]) or ""
            self._normalized[cell] = text
        return text

    def _walk_to_headings(self, start: Cell, relation: dict[Cell, set[Cell]]) -> set[Cell]:
        """Heading cells reachable from `start` along `relation`; if there are none, the cells where the walk
        ends.

        Mirrors olmOCR's `_walk_heading_relations`: the start cell itself never counts, so a cell on the
        table's edge has no heading in that direction.
        """
        found_headings: set[Cell] = set()
        ends: set[Cell] = set()
        seen: set[Cell] = set()
        stack = [start]
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            if cur in self.headings:
                found_headings.add(cur)
            nxt = relation.get(cur)
            if not nxt:
                ends.add(cur)
            else:
                stack.extend(nxt)
        found_headings.discard(start)
        ends.discard(start)
        return found_headings if found_headings else ends

    def top_headings(self, cell: Cell) -> set[Cell]:
        return self._walk_to_headings(cell, self.up)

    def left_headings(self, cell: Cell) -> set[Cell]:
        return self._walk_to_headings(cell, self.left)


def _span_value(raw: object) -> int:
    """A rowspan/colspan attribute as a positive int; anything unparsable or non-positive counts as 1."""
    if raw in (None, "", 0):
        return 1
    try:
        value = int(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 1
    return value if value > 0 else 1


def build_table(rows: list[list[CellSpec]]) -> TableGraph | None:
    """Lay the cells out on an occupancy grid and derive the four neighbour relations (None if no cell)."""
    if not rows:
        return None
    cells: dict[Cell, str] = {}
    headings: set[Cell] = set()
    extent: dict[Cell, tuple[int, int]] = {}  # cell -> (rowspan, colspan)
    grid: list[list[Cell | None]] = []
    # pending[c] = (cell, rows still to cover) for a rowspan reaching into the next row at column c
    pending: list[tuple[Cell, int] | None] = []

    for r, specs in enumerate(rows):
        line: list[Cell | None] = []
        col = 0
        k = 0
        while k < len(specs) or col < len(pending):
            if col < len(pending) and pending[col] is not None:
                owner, left = pending[col]  # type: ignore[misc]
                line.append(owner)
                pending[col] = (owner, left - 1) if left > 1 else None
                col += 1
                continue
            if k >= len(specs):
                line.append(None)  # a hole where neither a rowspan nor a written cell lands
                col += 1
                continue
            spec = specs[k]
            k += 1
            rowspan, colspan = max(1, spec.rowspan), max(1, spec.colspan)
            cid = (r, col)
            cells[cid] = spec.text or ""
            if spec.is_heading:
                headings.add(cid)
            extent[cid] = (rowspan, colspan)
            if len(pending) < col + colspan:
                pending.extend([None] * (col + colspan - len(pending)))
            for c in range(col, col + colspan):
                line.append(cid)
                pending[c] = (cid, rowspan - 1) if rowspan > 1 else None
            col += colspan
        grid.append(line)

    # Rowspans that run past the last written row add rows of their own.
    while any(p is not None for p in pending):
        line = []
        for c, p in enumerate(pending):
            if p is None:
                line.append(None)
                continue
            owner, left = p
            line.append(owner)
            pending[c] = (owner, left - 1) if left > 1 else None
        grid.append(line)

    if not cells:
        return None
    used_cols = [c for line in grid for c, v in enumerate(line) if v is not None]
    width = max(used_cols) + 1
    for line in grid:
        if len(line) < width:
            line.extend([None] * (width - len(line)))
        else:
            del line[width:]
    height = len(grid)

    up: dict[Cell, set[Cell]] = {cid: set() for cid in cells}
    down: dict[Cell, set[Cell]] = {cid: set() for cid in cells}
    left: dict[Cell, set[Cell]] = {cid: set() for cid in cells}
    right: dict[Cell, set[Cell]] = {cid: set() for cid in cells}

    def first(cid: Cell, slots: Iterable[Cell | None]) -> Cell | None:
        for other in slots:
            if other is not None and other != cid:
                return other
        return None

    for cid, (rowspan, colspan) in extent.items():
        r0, c0 = cid
        r1, c1 = r0 + rowspan - 1, c0 + colspan - 1
        for r in range(r0, min(r1, height - 1) + 1):
            found = first(cid, (grid[r][c] for c in range(c1 + 1, width)))
            if found is not None:
                right[cid].add(found)
            found = first(cid, (grid[r][c] for c in range(c0 - 1, -1, -1)))
            if found is not None:
                left[cid].add(found)
        for c in range(c0, min(c1, width - 1) + 1):
            found = first(cid, (grid[r][c] for r in range(r1 + 1, height)))
            if found is not None:
                down[cid].add(found)
            found = first(cid, (grid[r][c] for r in range(r0 - 1, -1, -1)))
            if found is not None:
                up[cid].add(found)

    return TableGraph(
        cells=cells,
        headings=headings,
        up=up,
        down=down,
        left=left,
        right=right,
        n_rows=height,
        n_cols=width,
        is_rectangular=all(v is not None for line in grid for v in line),
    )


def _markdown_rows(lines: list[str]) -> list[list[str]]:
    """Cells of a block of pipe lines: the first all-dash line is the separator; formatting lines drop."""
    separator = None
    for i, line in enumerate(lines):
        body = line.replace("|", "").strip()
        if body and all(ch in "- :" for ch in body):
            separator = i
            break
    rows = []
    for i, line in enumerate(lines):
        if i == separator:
            continue
        if line.strip() and all(ch in "- :|" for ch in line):
            continue
        cells = [c.strip() for c in line.split("|")]
        if cells and cells[0] == "":
            cells = cells[1:]
        if cells and cells[-1] == "":
            cells = cells[:-1]
        if cells:
            rows.append(cells)
    return rows


def _markdown_table(lines: list[str]) -> TableGraph | None:
    rows = _markdown_rows(lines)
    if not rows:
        return None
    specs = [
        [CellSpec(text, is_heading=(r == 0 or c == 0)) for c, text in enumerate(row)]
        for r, row in enumerate(rows)
    ]
    return build_table(specs)


@lru_cache(maxsize=256)
def parse_markdown_tables(markdown: str) -> tuple[TableGraph, ...]:
    """Every pipe table: a run of at least two consecutive lines that contain `|`."""
    tables: list[TableGraph] = []
    block: list[str] = []
    for line in markdown.strip().split("\n") + [""]:
        if "|" in line:
            block.append(line)
            continue
        if len(block) >= 2:
            table = _markdown_table(block)
            if table is not None:
                tables.append(table)
        block = []
    return tuple(tables)


def _bs4_cell_text(cell) -> str:
    for br in cell.find_all("br"):
        br.replace_with("\n")
    return cell.get_text(separator="").strip()


@lru_cache(maxsize=256)
def parse_html_tables(markdown: str) -> tuple[TableGraph, ...]:
    """Every `<table>` (nested ones too, each also contributing its rows to the outer table, as in olmOCR)."""
    if "<table" not in markdown.lower():
        return ()
    soup = BeautifulSoup(markdown, "html.parser")
    tables: list[TableGraph] = []
    # A row of a nested table is also a row of every enclosing table (find_all is recursive, as upstream), so
    # each row's cells are read once and reused: deep nesting stays linear in the number of rows it repeats.
    row_cache: dict[int, list[tuple[str, object, object, bool]]] = {}
    for table in soup.find_all("table"):
        trs = table.find_all("tr")
        if not trs:
            continue
        rows: list[list[CellSpec]] = []
        for r, tr in enumerate(trs):
            cells = row_cache.get(id(tr))
            if cells is None:
                in_head = tr.find_parent("thead") is not None
                cells = [
                    (
                        _bs4_cell_text(cell),
                        cell.get("rowspan"),
                        cell.get("colspan"),
                        cell.name == "th" or in_head,
                    )
                    for cell in tr.find_all(["th", "td"], recursive=False)
                ]
                row_cache[id(tr)] = cells
            row = []
            for text, raw_rowspan, raw_colspan, is_heading in cells:
                rowspan = _span_value(raw_rowspan)
                if isinstance(raw_rowspan, str) and raw_rowspan.strip() == "0":
                    rowspan = max(1, len(trs) - r)  # HTML: rowspan=0 spans the rest of the table
                row.append(CellSpec(text, rowspan, _span_value(raw_colspan), is_heading))
            rows.append(row)
        graph = build_table(rows)
        if graph is not None:
            tables.append(graph)
    return tuple(tables)


def parse_tables(markdown: str, include_markdown: bool = True) -> list[TableGraph]:
    """Markdown pipe tables (unless excluded) then HTML tables, in the order olmOCR-Bench checks them."""
    found: list[TableGraph] = list(parse_markdown_tables(markdown)) if include_markdown else []
    found.extend(parse_html_tables(markdown))
    return found
