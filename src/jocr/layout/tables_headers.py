"""Header rows of a read table (`jocr.layout.tables`): which rows are `<th>`, and in a header of several
rows without rules, the labels that span columns or rows."""

from __future__ import annotations

import statistics

from jocr.layout.tables_model import Table, pieces_of


def mark_headers(table: Table, bands, inner_y: list[float], ruled_rows: bool) -> None:
    """Header rows: above the first inner rule when rules do not separate every row (booktabs) and, when
    that is more than one row, fewer rows than below it (a rule between groups of rows of a list, three
    rows above and three below, is no header's), else the first row and the rows its spanning cells reach
    into; bold first rows as well."""
    if table.n_rows < 2:
        return
    header_rows = 0
    tops = [min(p.box[1] for p in band) for band in bands]
    if inner_y and not ruled_rows:
        first = inner_y[0]
        header_rows = sum(1 for t in tops if t < first)
        if header_rows >= table.n_rows or header_rows > 1 and 2 * header_rows >= table.n_rows:
            header_rows = 0
    elif ruled_rows:
        header_rows = 1
        for cell in table.cells:
            if cell.row == 0:
                header_rows = max(header_rows, cell.rowspan)
    if header_rows == 0:
        bold = [all(p.bold for p in band) for band in bands]
        while header_rows < len(bold) - 1 and bold[header_rows]:
            header_rows += 1
    if header_rows == 0 and any(c.colspan > 1 for c in table.cells if c.row == 0) and table.n_rows > 2:
        header_rows = 2 if all(c.colspan == 1 for c in table.cells if c.row == 1) else 1
    if header_rows >= table.n_rows:
        return
    for cell in table.cells:
        if cell.row < header_rows:
            cell.header = True
    if not ruled_rows and header_rows >= 2:
        _centred_spans(table, header_rows)
        _header_rowspans(table, header_rows)


def _centred_spans(table: Table, header_rows: int) -> None:
    """A header label alone in its row, centred over several labelled columns of the header row below
    ("Year Ended" over three dates), spans them."""
    for r in range(header_rows - 1):
        row = sorted((c for c in table.cells if c.row == r), key=lambda c: c.col)
        below = sorted(
            (c for c in table.cells if c.row == r + 1 and c.text and pieces_of(c)), key=lambda c: c.col
        )
        for cell in row:
            pieces = pieces_of(cell)
            if not cell.text or not pieces or cell.colspan != 1:
                continue
            x0, x1 = min(p.box[0] for p in pieces), max(p.box[2] for p in pieces)
            centre, tol = (x0 + x1) / 2, statistics.median(p.height for p in pieces)
            best = None
            for i in range(len(below)):
                for j in range(i + 1, len(below)):
                    a, b = below[i], below[j]
                    left = min(p.box[0] for p in pieces_of(a))
                    right = max(p.box[2] for p in pieces_of(b))
                    if abs((left + right) / 2 - centre) > tol or not (
                        a.col <= cell.col <= b.col + b.colspan - 1
                    ):
                        continue
                    span = (a.col, b.col + b.colspan - 1)
                    others = [c for c in row if c is not cell and span[0] <= c.col <= span[1]]
                    if any(c.text for c in others):
                        continue
                    if best is None or span[1] - span[0] > best[1] - best[0]:
                        best = span
            if best is None:
                continue
            drop = {id(c) for c in row if c is not cell and best[0] <= c.col <= best[1]}
            table.cells = [c for c in table.cells if id(c) not in drop]
            cell.col, cell.colspan = best[0], best[1] - best[0] + 1


def _header_rowspans(table: Table, header_rows: int) -> None:
    """In a header of several rows without rules between them, a column's one label with empty slots
    above it is a cell spanning those rows (a label set beside a spanning group title)."""
    by_slot = {(c.row, c.col): c for c in table.cells}
    for col in range(table.n_cols):
        column = [by_slot.get((r, col)) for r in range(header_rows)]
        if any(c is None or c.colspan != 1 for c in column):
            continue
        filled = [c for c in column if c.text]
        if len(filled) != 1 or filled[0] is column[0]:
            continue
        top = column[0]
        top.text, top.rowspan = filled[0].text, header_rows
        drop = {id(c) for c in column[1:]}
        table.cells = [c for c in table.cells if id(c) not in drop]
