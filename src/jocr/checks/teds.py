"""TEDS (tree-edit-distance similarity) between HTML tables, and its structure-only variant TEDS-S.

TEDS (Zhong et al., "Image-based table recognition", PubTabNet; as used by OmniDocBench) is
`1 - APTED(T_pred, T_gt) / max(|T_pred|, |T_gt|)` where trees are the `<table>` element with its `<tr>` rows
and `<td>` cells, `|T|` counts the nodes below the root, insertions and deletions cost 1, renaming costs 1
unless both nodes are cells with equal colspan/rowspan, in which case it costs the normalised Levenshtein
distance of their contents (0 for TEDS-S). Tables are normalised first: `<th>` -> `<td>`,
`<thead>`/`<tbody>`/`<tfoot>` unwrapped, every attribute except colspan/rowspan dropped.

APTED is cubic in the worst case; beyond `TedsConfig.max_exact_nodes` nodes an alignment bound is used
instead: rows are aligned on exact equality (Levenshtein opcodes over row signatures), differing stretches of
rows are aligned by a small DP, and cells inside paired rows the same way. Every step is a valid edit script,
so this is an upper bound on the tree edit distance (a lower bound on TEDS). It equals APTED's value for a
single changed cell, inserted or deleted row or cell; with several edits it can be lower than TEDS, because
APTED may also re-parent cells across deleted and inserted rows (tests/checks/test_teds.py measures both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from apted import APTED, Config
from lxml import html as lxml_html
from rapidfuzz.distance import Levenshtein

from jocr.checks.text import normalized_edit_distance


@dataclass(frozen=True)
class TedsConfig:
    """`max_exact_nodes`: larger trees use the row-alignment bound (see module docstring)."""

    max_exact_nodes: int = 150


@dataclass
class Node:
    tag: str
    colspan: int = 1
    rowspan: int = 1
    content: str = ""
    children: list[Node] | None = None

    def __post_init__(self) -> None:
        if self.children is None:
            self.children = []


class _TedsApted(Config):
    def __init__(self, structure_only: bool):
        self.structure_only = structure_only

    def rename(self, a: Node, b: Node) -> float:
        if a.tag != b.tag or a.colspan != b.colspan or a.rowspan != b.rowspan:
            return 1.0
        if a.tag == "td" and not self.structure_only:
            return normalized_edit_distance(a.content, b.content)
        return 0.0

    def children(self, node: Node) -> list[Node]:
        return node.children  # type: ignore[return-value]


def _span(el, name: str) -> int:
    try:
        return max(1, int(el.get(name, "1")))
    except ValueError:
        return 1


_WS = re.compile(r"\s+")


def table_tree(table_html: str) -> Node | None:
    """The normalised tree of the first `<table>` in `table_html` (None if there is no table)."""
    try:
        doc = lxml_html.fromstring(f"<div>{table_html}</div>")
    except (ValueError, lxml_html.etree.ParserError):
        return None
    table = doc if doc.tag == "table" else doc.find(".//table")
    if table is None:
        return None
    root = Node("table")
    for tr in table.iter("tr"):
        if _nearest_table(tr) is not table:
            continue  # rows of a nested table belong to that table's cells
        row = Node("tr")
        for cell in tr:
            if cell.tag not in ("td", "th"):
                continue
            text = _WS.sub(" ", cell.text_content()).strip()
            row.children.append(Node("td", _span(cell, "colspan"), _span(cell, "rowspan"), text))
        root.children.append(row)
    return root


def _nearest_table(el):
    parent = el.getparent()
    while parent is not None and parent.tag != "table":
        parent = parent.getparent()
    return parent


def _size(node: Node) -> int:
    """Nodes below the root (PubTabNet's `len(tree.xpath('.//*'))`)."""
    return sum(1 + _size(c) for c in node.children)


def _aligned_cost(a: list, b: list, keys_a: list, keys_b: list, pair_cost, max_dp: int = 2500) -> float:
    """Cost of turning sequence a into b: equal keys are aligned by rapidfuzz's Levenshtein opcodes (C speed);
    inside each differing stretch the items are aligned by a small edit-distance DP with `pair_cost` as the
    substitution cost (in order when the stretch is too large for the DP); the rest are inserted or
    deleted."""
    total = 0.0
    for op in Levenshtein.opcodes(keys_a, keys_b):
        if op.tag == "equal":
            continue
        left, right = a[op.src_start : op.src_end], b[op.dest_start : op.dest_end]
        if left and right and len(left) * len(right) <= max_dp and len(left) != len(right):
            total += _dp_cost(left, right, pair_cost)
            continue
        paired = min(len(left), len(right))
        total += sum(pair_cost(left[k], right[k]) for k in range(paired))
        total += sum(_weight(x) for x in left[paired:]) + sum(_weight(x) for x in right[paired:])
    return total


def _dp_cost(left: list, right: list, pair_cost) -> float:
    prev = [0.0]
    for x in right:
        prev.append(prev[-1] + _weight(x))
    for x in left:
        cur = [prev[0] + _weight(x)]
        for j, y in enumerate(right, start=1):
            cur.append(min(prev[j] + _weight(x), cur[j - 1] + _weight(y), prev[j - 1] + pair_cost(x, y)))
        prev = cur
    return prev[-1]


def _weight(node: Node) -> int:
    return 1 + _size(node)


def _row_bound(pred: Node, gt: Node, structure_only: bool) -> float:
    """Upper bound on the tree edit distance: rows aligned, then cells aligned inside paired rows."""
    cfg = _TedsApted(structure_only)

    def cell_key(c: Node) -> tuple:
        return (c.colspan, c.rowspan, "" if structure_only else c.content)

    def row_cost(ra: Node, rb: Node) -> float:
        return _aligned_cost(
            ra.children,
            rb.children,
            [cell_key(c) for c in ra.children],
            [cell_key(c) for c in rb.children],
            cfg.rename,
        )

    def row_key(r: Node) -> int:
        return hash(tuple(cell_key(c) for c in r.children))

    return _aligned_cost(
        pred.children,
        gt.children,
        [row_key(r) for r in pred.children],
        [row_key(r) for r in gt.children],
        row_cost,
    )


def teds_trees(
    pred: Node, gt: Node, structure_only: bool = False, config: TedsConfig = TedsConfig()
) -> float:
    n_nodes = max(_size(pred), _size(gt))
    if n_nodes == 0:
        return 1.0
    if n_nodes > config.max_exact_nodes:
        distance = _row_bound(pred, gt, structure_only)
    else:
        distance = APTED(pred, gt, _TedsApted(structure_only)).compute_edit_distance()
    return max(0.0, 1.0 - distance / n_nodes)


@lru_cache(maxsize=1024)
def teds(
    pred_html: str, gt_html: str, structure_only: bool = False, config: TedsConfig = TedsConfig()
) -> float:
    """TEDS (or TEDS-S) in [0, 1] between two HTML tables; 0 when the prediction has no table."""
    gt = table_tree(gt_html)
    pred = table_tree(pred_html)
    if gt is None:
        return 1.0 if pred is None else 0.0
    if pred is None:
        return 0.0
    return teds_trees(pred, gt, structure_only, config)
