"""Layout matching of the OmniDocBench scorer on a hand-made ground truth (jocr.checks.omnidoc_layout)."""

from __future__ import annotations

import json

from jocr.checks.omnidoc import evaluate_dir
from jocr.checks.omnidoc_layout import LayoutCounts, gt_layout, iou, match, page_tree_json, tree_layout


def _det(category: str, x0: float, y0: float, x1: float, y1: float, text: str = "") -> dict:
    return {"category_type": category, "poly": [x0, y0, x1, y0, x1, y1, x0, y1], "text": text, "order": 1}


# A 1000 x 800 page: a title, two paragraphs, a figure and its caption, a page number.
GT_PAGE = {
    "page_info": {"image_path": "p.jpg", "width": 1000, "height": 800},
    "layout_dets": [
        _det("title", 100, 50, 900, 100, "A title"),
        _det("text_block", 100, 150, 900, 300, "First paragraph"),
        _det("text_block", 100, 320, 900, 450, "Second paragraph"),
        _det("figure", 100, 480, 500, 700),
        _det("figure_caption", 100, 710, 500, 740, "Figure 1. A figure"),
        _det("page_number", 480, 760, 520, 790, "7"),
    ],
}


def _tree() -> dict:
    """Our tree of the page at half the scale (500 x 400): title as a heading, the first paragraph right,
    the second one split in two (neither half matches), the caption as a paragraph, the page number right."""

    def block(kind, box):
        return {"type": kind, "bbox": [v / 2 for v in box], "text": "x", "markdown": "x"}

    return {
        "version": "1.0.0", "page": 1, "width": 500, "height": 400, "unit": "px", "source": "lines",
        "blocks": [
            block("heading", (100, 52, 880, 98)),
            block("paragraph", (105, 150, 900, 300)),
            block("paragraph", (100, 320, 900, 380)),
            block("paragraph", (100, 390, 900, 450)),
            block("paragraph", (100, 710, 500, 740)),
            block("page_number", (482, 760, 518, 790)),
        ],
    }  # fmt: skip


def test_iou_and_greedy_one_to_one_matching():
    assert iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == 50 / 150
    assert iou((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0
    # Two predictions over one ground-truth box: only the better one matches.
    assert match([(0, 0, 10, 9), (0, 0, 10, 10)], [(0, 0, 10, 10)]) == [(1, 0)]
    assert match([(0, 0, 10, 10)], [(6, 0, 16, 10)]) == []  # IoU 0.25


def test_per_class_precision_and_recall_on_a_hand_made_page():
    counts = LayoutCounts()
    counts.add_page(tree_layout(_tree(), 1000, 800), gt_layout(GT_PAGE))
    out = counts.as_dict()
    assert out["title"] == {"pred": 1, "gt": 1, "matched": 1, "precision": 1.0, "recall": 1.0}
    # text: 4 predicted (two halves, the caption-as-paragraph, the right one), 2 in the ground truth.
    assert out["text"]["matched"] == 1 and out["text"]["precision"] == 0.25 and out["text"]["recall"] == 0.5
    assert out["caption"] == {"pred": 0, "gt": 1, "matched": 0, "precision": None, "recall": 0.0}
    assert out["figure"]["recall"] == 0.0
    assert out["page_number"]["precision"] == 1.0
    # Classes aside: title, first paragraph, caption box, page number are found (4 of 6 GT, 4 of 6 pred).
    assert out["any"]["matched"] == 4 and out["any"]["recall"] == round(4 / 6, 4)


def test_evaluate_dir_reads_trees_beside_the_markdown(tmp_path):
    (tmp_path / "gt.json").write_text(json.dumps([GT_PAGE]))
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "p.md").write_text("# A title\n\nFirst paragraph\n\nSecond paragraph\n")
    (preds / "p.json").write_text(json.dumps({"pages": [{"tree": _tree()}]}))  # a document's JSON
    scores = evaluate_dir(tmp_path / "gt.json", preds)
    assert scores.layout_pages == 1 and scores.layout["title"]["recall"] == 1.0
    (preds / "p.json").unlink()
    assert evaluate_dir(tmp_path / "gt.json", preds).layout is None


def test_tree_json_forms():
    tree = _tree()
    assert page_tree_json(tree) is tree
    assert page_tree_json({"tree": tree}) is tree
    assert page_tree_json({"pages": [{"tree": tree}]}) is tree
    assert page_tree_json({"pages": []}) is None
