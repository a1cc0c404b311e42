"""Layout of a page against OmniDocBench's layout boxes: the blocks of our document tree (`jocr.layout.tree`,
its JSON form) matched to the ground truth's `layout_dets` one to one at IoU >= `MIN_IOU`, precision and
recall per class.

Both sides are mapped to one set of classes (`TREE_CLASS`, `GT_CLASS`; docs/layout.md, "OmniDocBench
classes"): our tree has one caption type where OmniDocBench tells figure, table and code captions apart, one
title/heading pair where it has `title` for both, and list items that it annotates as `text_block`s.
Ground-truth `abandon` boxes and the classes our tree never writes (`equation_caption`: a formula's number)
are counted in the ground truth's totals so that recall says what is missed, but a class the tree cannot
produce is listed apart (`TREE_NEVER`).

Matching, per class: pairs of a predicted and a ground-truth box of that class with IoU >= `MIN_IOU`, taken
greedily by IoU (highest first), each box in one pair at most. `any` is the same matching with classes
ignored (how many regions were found at all, whatever their type). Boxes are in the ground truth's pixels:
the tree's boxes are scaled by (ground-truth width / tree width, ground-truth height / tree height).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jocr.bbox import BBox as Box
from jocr.bbox import iou

MIN_IOU = 0.5

# Our tree's block types -> the common classes.
TREE_CLASS = {
    "title": "title",
    "heading": "title",
    "paragraph": "text",
    "list_item": "text",
    "code": "text",
    "table": "table",
    "formula": "formula",
    "figure": "figure",
    "caption": "caption",
    "footnote": "footnote",
    "header": "header",
    "footer": "footer",
    "page_number": "page_number",
}
# OmniDocBench's layout categories -> the common classes.
GT_CLASS = {
    "title": "title",
    "text_block": "text",
    "reference": "text",
    "code_txt": "text",
    "code_algorithm": "text",
    "table": "table",
    "equation_isolated": "formula",
    "figure": "figure",
    "figure_caption": "caption",
    "table_caption": "caption",
    "code_txt_caption": "caption",
    "code_algorithm_caption": "caption",
    "figure_footnote": "footnote",
    "table_footnote": "footnote",
    "page_footnote": "footnote",
    "header": "header",
    "footer": "footer",
    "page_number": "page_number",
    "equation_caption": "equation_caption",
    "abandon": "abandon",
}
TREE_NEVER = ("equation_caption", "abandon")  # ground-truth classes no tree block maps to
CLASSES = (
    "title", "text", "table", "formula", "figure", "caption", "footnote", "header", "footer", "page_number",
    *TREE_NEVER,
)  # fmt: skip


def poly_box(poly: list) -> Box:
    """An OmniDocBench polygon (x0, y0, x1, y1, ... in the page's pixels) as its bounding box."""
    xs, ys = [float(v) for v in poly[0::2]], [float(v) for v in poly[1::2]]
    return (min(xs), min(ys), max(xs), max(ys))


def gt_layout(page: dict) -> list[tuple[str, Box]]:
    """(class, box) of each ground-truth layout box: its polygon's bounding box in the page's pixels."""
    out = []
    for det in page.get("layout_dets", []):
        cls = GT_CLASS.get(det.get("category_type", ""))
        poly = det.get("poly") or []
        if cls is None or len(poly) < 8:
            continue
        out.append((cls, poly_box(poly)))
    return out


def tree_layout(tree: dict, width: float, height: float) -> list[tuple[str, Box]]:
    """(class, box) of each block of a page tree's JSON (`PageTree.to_dict()`) with a box, scaled to a
    `width` x `height` page; blocks of a type without a class are left out."""
    sx = width / float(tree["width"]) if tree.get("width") else 1.0
    sy = height / float(tree["height"]) if tree.get("height") else 1.0
    out = []
    for block in tree.get("blocks", []):
        cls, box = TREE_CLASS.get(block.get("type", "")), block.get("bbox")
        if cls is None or not box:
            continue
        out.append((cls, (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)))
    return out


def match(pred: list[Box], gt: list[Box], min_iou: float = MIN_IOU) -> list[tuple[int, int]]:
    """One-to-one (pred, gt) pairs with IoU >= `min_iou`, greedily by IoU, highest first."""
    pairs = sorted(
        ((iou(p, g), i, j) for i, p in enumerate(pred) for j, g in enumerate(gt)),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    used_p, used_g, out = set(), set(), []
    for value, i, j in pairs:
        if value < min_iou:
            break
        if i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
            out.append((i, j))
    return out


@dataclass
class LayoutCounts:
    """Per class: predicted boxes, ground-truth boxes, matched pairs (summed over pages)."""

    pred: dict[str, int] = field(default_factory=dict)
    gt: dict[str, int] = field(default_factory=dict)
    matched: dict[str, int] = field(default_factory=dict)
    pages: int = 0

    def add_page(self, pred: list[tuple[str, Box]], gt: list[tuple[str, Box]]) -> None:
        self.pages += 1
        for cls in {c for c, _ in pred} | {c for c, _ in gt}:
            p = [b for c, b in pred if c == cls]
            g = [b for c, b in gt if c == cls]
            self._count(cls, len(p), len(g), len(match(p, g)))
        self._count("any", len(pred), len(gt), len(match([b for _, b in pred], [b for _, b in gt])))

    def _count(self, cls: str, n_pred: int, n_gt: int, n_matched: int) -> None:
        self.pred[cls] = self.pred.get(cls, 0) + n_pred
        self.gt[cls] = self.gt.get(cls, 0) + n_gt
        self.matched[cls] = self.matched.get(cls, 0) + n_matched

    def precision(self, cls: str) -> float | None:
        return self.matched.get(cls, 0) / self.pred[cls] if self.pred.get(cls) else None

    def recall(self, cls: str) -> float | None:
        return self.matched.get(cls, 0) / self.gt[cls] if self.gt.get(cls) else None

    def as_dict(self) -> dict[str, dict]:
        """class -> {pred, gt, matched, precision, recall} for every class seen, and `any`."""
        order = [c for c in (*CLASSES, "any") if c in self.pred or c in self.gt]
        out = {}
        for cls in order:
            p, r = self.precision(cls), self.recall(cls)
            out[cls] = {
                "pred": self.pred.get(cls, 0),
                "gt": self.gt.get(cls, 0),
                "matched": self.matched.get(cls, 0),
                "precision": None if p is None else round(p, 4),
                "recall": None if r is None else round(r, 4),
            }
        return out


def page_tree_json(data: dict) -> dict | None:
    """A page tree's JSON from a file that holds one: the tree itself (`PageTree.to_dict()`), a page result
    (`{"tree": ...}`) or a document (`{"pages": [{"tree": ...}]}`, its first page)."""
    if "blocks" in data:
        return data
    if isinstance(data.get("tree"), dict):
        return data["tree"]
    pages = data.get("pages")
    if isinstance(pages, list) and pages and isinstance(pages[0], dict):
        return page_tree_json(pages[0])
    return None


def layout_table(counts: dict[str, dict]) -> list[str]:
    """Markdown table lines of `LayoutCounts.as_dict()`."""
    lines = ["| class | pred | GT | matched | precision | recall |", "|---|---|---|---|---|---|"]
    for cls, c in counts.items():
        p = "" if c["precision"] is None else f"{c['precision']:.3f}"
        r = "" if c["recall"] is None else f"{c['recall']:.3f}"
        note = " (never predicted)" if cls in TREE_NEVER else ""
        lines.append(f"| {cls}{note} | {c['pred']} | {c['gt']} | {c['matched']} | {p} | {r} |")
    return lines
