"""OmniDocBench-style end-to-end metrics for page Markdown: text, display formulas, tables and reading order.

Follows the v1.5 end-to-end evaluation of opendatalab/OmniDocBench (`utils/extract.py` `md_tex_filter`,
`utils/match.py`, `utils/match_quick.py`, `utils/data_preprocess.py`), re-implemented without its heavy
dependencies:

- the prediction is split like `md_tex_filter`: images dropped; HTML tables (and Markdown pipe tables, turned
  into HTML) cut out; `$$..$$` and `\\[..\\]` become display formulas, inline `$..$`/`\\(..\\)` are offered as
  formula candidates too while staying in the text; the rest splits into paragraphs on blank lines;
- tables are matched to ground-truth tables by normalised HTML edit distance (optimal assignment); TEDS and
  TEDS-S are taken over ground-truth tables (an unmatched one scores 0); a prediction's unmatched table cells
  become text candidates;
- text blocks and display formulas are matched jointly: ground-truth blocks of the "ignore" categories
  (headers, footers, captions, page numbers...) first claim the predictions within normalised edit distance
  0.25, then the remaining blocks are assigned optimally on normalised edit distance, and a ground-truth block
  left unmatched may absorb adjacent unmatched predictions when that lowers its distance (the quick-match
  merge);
- text is normalised by keeping only word and CJK characters; formulas by `normalized_formula` (font commands,
  \\left/\\right, spacing and environment markers removed, lower case);
- text, formula and table edit distances are summed per page (edits / lengths) and averaged over pages; TEDS
  is averaged over ground-truth tables; reading order is the normalised edit distance between the ground-truth
  order and the predicted order of the matched text blocks, averaged over pages.

`overall` = ((1 - text_edit) * 100 + table_teds * 100 + (1 - formula_edit) * 100) / 3; the leaderboard uses
the formula CDM in the last term, which needs a TeX installation, so the edit-distance score stands in for it.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from jocr.checks.omnidoc_split import (
    NON_WORD,
    Block,
    clean_text,
    inline_letters,
    normalize_formula,
    normalize_table_html,
    split_markdown,
)
from jocr.checks.teds import TedsConfig, teds
from jocr.checks.text import normalized_edit_distance as ned

TEXT_CATEGORIES = (
    "text_block", "title", "code_txt", "code_txt_caption", "reference", "equation_caption", "figure_caption",
    "figure_footnote", "table_caption", "table_footnote", "code_algorithm", "code_algorithm_caption",
    "header",
    "footer", "page_footnote", "page_number", "circuit_caption", "circuit_footnote",
)  # fmt: skip
IGNORE_CATEGORIES = (
    "figure_caption", "figure_footnote", "table_caption", "table_footnote", "code_algorithm",
    "code_algorithm_caption", "header", "footer", "page_footnote", "page_number", "equation_caption",
    "circuit_caption", "circuit_footnote",
)  # fmt: skip

_NO_ORDER = 1e9  # position of a ground-truth block without a reading-order annotation


# ------------------------------------------------------------------------------------------------- assignment
def assign(cost: list[list[float]]) -> list[tuple[int, int]]:
    """Minimum-cost assignment (Hungarian algorithm, O(n^2 m)) for a rectangular matrix: (row, col) pairs."""
    if not cost or not cost[0]:
        return []
    transpose = len(cost) > len(cost[0])
    if transpose:
        cost = [list(col) for col in zip(*cost)]
    n, m = len(cost), len(cost[0])
    inf = float("inf")
    u, v = [0.0] * (n + 1), [0.0] * (m + 1)
    p, way = [0] * (m + 1), [0] * (m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    pairs = [(p[j] - 1, j - 1) for j in range(1, m + 1) if p[j] != 0]
    return sorted((c, r) if transpose else (r, c) for r, c in pairs)


# -------------------------------------------------------------------------------------------------- one page
@dataclass
class PageResult:
    """Per-page matches: (gt block, matched prediction text or "", normalised edit distance) per kind."""

    text: list[tuple[Entry, str]] = field(default_factory=list)  # (match, ground-truth category)
    formula: list[tuple[Entry, str]] = field(default_factory=list)
    table: list[tuple[Block, str]] = field(default_factory=list)
    order: float | None = None


def _merge_truncated(page: dict) -> list[dict]:
    """Layout elements with blocks split by a `truncated` relation joined into one (texts concatenated)."""
    groups: list[set] = []
    for rel in (page.get("extra") or {}).get("relation", []):
        if rel.get("relation_type") != "truncated":
            continue
        pair = {rel["source_anno_id"], rel["target_anno_id"]}
        for group in groups:
            if group & pair:
                group |= pair
                break
        else:
            groups.append(pair)
    dets = page.get("layout_dets", [])
    grouped = {aid for group in groups for aid in group}
    out = [d for d in dets if d.get("anno_id") not in grouped]
    for group in groups:
        members = sorted((d for d in dets if d.get("anno_id") in group), key=lambda d: d.get("order") or 0)
        if members:
            merged = dict(members[0])
            merged["text"] = "".join(str(d.get("text", "")) for d in members)
            out.append(merged)
    return out


_GT_ORDER = TEXT_CATEGORIES[:16] + (
    "equation_isolated",
    "circuit_diagram",
    "circuit_caption",
    "circuit_footnote",
)


def gt_blocks(page: dict) -> list[Block]:
    """Ground-truth blocks of one OmniDocBench page in upstream order: text and formula blocks grouped by
    category then stably sorted by reading order (a missing order counts as 0), then tables. Blocks whose
    text normalises to nothing stay in the list (upstream looks positions up in the unfiltered list; see
    `match_page`)."""
    by_category: dict[str, list[dict]] = {}
    for det in _merge_truncated(page):
        by_category.setdefault(det.get("category_type", ""), []).append(det)

    def order_key(det: dict) -> float:
        try:
            return float(det.get("order") or 0)
        except (TypeError, ValueError):
            return 0.0

    mixed = sorted((d for cat in _GT_ORDER for d in by_category.get(cat, [])), key=order_key)
    blocks = []
    for det in mixed:
        cat = det["category_type"]
        position = order_key(det) or _NO_ORDER
        if cat == "equation_isolated":
            latex = str(det.get("latex") or "")
            blocks.append(
                Block("formula", latex, position, cat, norm=normalize_formula(latex) if latex else "")
            )
        else:
            text = str(det.get("text") or "")
            blocks.append(Block("text", text, position, cat, norm=clean_text(text) if text else ""))
    for det in sorted(by_category.get("table", []), key=order_key):
        if det.get("html"):
            blocks.append(Block("table", str(det["html"]), order_key(det) or _NO_ORDER, "table"))
    return blocks


def _normalise_pred(block: Block) -> Block:
    if block.kind == "text":
        block.norm = clean_text(block.content)
    elif block.kind == "formula":
        block.norm = normalize_formula(block.content)
    return block


def match_page(gt: list[Block], pred: list[Block]) -> PageResult:
    result = PageResult()
    # Tables first: optimal assignment on normalised HTML edit distance.
    gt_tables = [b for b in gt if b.kind == "table"]
    pred_tables = [b for b in pred if b.kind == "table"]
    gt_norm = [normalize_table_html(b.content) for b in gt_tables]
    pred_norm = [normalize_table_html(b.content) for b in pred_tables]
    pairs = assign([[ned(g, p) for p in pred_norm] for g in gt_norm])
    matched_pred = {c for _, c in pairs}
    by_gt = dict(pairs)
    for i, g in enumerate(gt_tables):
        result.table.append((g, pred_tables[by_gt[i]].content if i in by_gt else ""))
    extra_text: list[Block] = []
    if gt_tables:  # upstream turns unmatched predicted tables into text only on pages that have tables
        for j, p in enumerate(pred_tables):
            if j not in matched_pred:
                cells = re.findall(r"<td\b[^>]*>([^<]*)</td>", p.content, re.I)
                extra_text.extend(
                    Block("text", re.sub(r"\$\\cdot\$", "", html_lib.unescape(c)).strip(), p.position)
                    for c in cells
                    if c
                )

    # Upstream matches over lists with empty blocks filtered out but looks positions (and, for predictions,
    # categories) up by the filtered index in the unfiltered lists; `*_all[i]` reproduces that lookup.
    gt_all = [b for b in gt if b.kind != "table"]
    gt_mixed = [b for b in gt_all if b.content and b.norm]
    pred_all = sorted(
        (_normalise_pred(b) for b in [*(b for b in pred if b.kind != "table"), *extra_text]),
        key=lambda b: (b.inline, b.position),
    )
    pred_mixed = [b for b in pred_all if b.content and b.norm]
    entries = _quick_match(gt_mixed, pred_mixed)
    for e in entries:
        cats = [gt_mixed[i].category for i in e.gt]
        main = [c for c in cats if c not in IGNORE_CATEGORIES]
        category = Counter(main or cats).most_common(1)[0][0]
        if category == "equation_isolated" and e.pred and pred_all[e.pred[0]].kind != "formula":
            # A display formula matched to plain text is scored as text (upstream converts the LaTeX to text).
            e.gt_norm = NON_WORD.sub("", inline_letters(" ".join(gt_mixed[i].content for i in e.gt)))
            result.text.append((e, "equation_as_text"))
        elif category == "equation_isolated":
            result.formula.append((e, category))
        else:
            result.text.append((e, category))
    # Reading order (upstream get_order_paired) over the non-ignored text entries: all ground-truth orders
    # sorted, against the ground-truth orders of matched entries listed in predicted order.
    text_entries = [e for e, cat in result.text if cat not in IGNORE_CATEGORIES and cat != "equation_as_text"]
    # Blocks without an annotated order take no part (upstream drops empty positions).
    gt_orders = sorted(
        gt_all[i].position for e in text_entries for i in e.gt if gt_all[i].position < _NO_ORDER
    )
    matched = sorted(
        ((pred_all[e.pred[0]].position, k), [gt_all[i].position for i in e.gt])
        for k, e in enumerate(text_entries)
        if e.pred
    )
    pred_orders = [o for _, orders in matched for o in orders if o < _NO_ORDER]
    if gt_orders or pred_orders:
        result.order = Levenshtein.distance(gt_orders, pred_orders) / max(len(gt_orders), len(pred_orders))
    return result


@lru_cache(maxsize=1 << 16)  # the truncated-run search asks for the same pairs again and again
def _fuzzy_substring_distance(haystack: str, needle: str, max_windows: int = 4000) -> float:
    """Smallest normalised Levenshtein distance between `needle` and an equally long window of `haystack`
    (upstream `sub_gt_fuzzy_matching`); 1 when the needle is longer. Very long haystacks use rapidfuzz's best
    partial-ratio window instead of trying every window."""
    if not needle or len(needle) > len(haystack):
        return 1.0
    n = len(needle)
    if len(haystack) - n + 1 > max_windows:
        from rapidfuzz import fuzz

        start = fuzz.partial_ratio_alignment(needle, haystack).dest_start
        return Levenshtein.distance(haystack[start : start + n], needle) / n
    best = n
    for i in range(len(haystack) - n + 1):
        d = Levenshtein.distance(haystack[i : i + n], needle, score_cutoff=best)
        if d < best:
            best = d
            if best == 0:
                break
    return best / n


def _truncated_runs(gt: list[Block], pred: list[Block], gts: list[int], preds: list[int]) -> list[list[int]]:
    """Runs of consecutive predictions that together form one ground-truth block (upstream
    `deal_with_truncated`, `judge_pred_merge`, `get_final_subset`): for each ground-truth block without a
    prediction within 0.25, the run (starting anywhere) with the lowest distance, grown while each added piece
    looks like part of the block (window distance < 0.6) and joining does not hurt; overlapping runs keep the
    chain of disjoint runs with the lowest mean distance."""
    local = {j: k for k, j in enumerate(preds)}
    masked_pred = {k for k, j in enumerate(preds) if any(ned(gt[i].norm, pred[j].norm) < 0.25 for i in gts)}
    masked_gt = {i for i in gts if any(ned(gt[i].norm, pred[j].norm) < 0.25 for j in preds)}
    norms = [pred[j].norm for j in preds]
    candidates: list[tuple[list[int], float]] = []
    for i in gts:
        if i in masked_gt:
            continue
        target = gt[i].norm
        best: tuple[list[int], float] | None = None
        for k in range(len(preds)):
            if k in masked_pred:
                continue
            step = 1
            while k + step < len(preds) and k + step not in masked_pred:
                pieces = norms[k : k + step + 1]
                cur, merged = " ".join(pieces[:-1]), " ".join(pieces)
                if ned(target, merged) > ned(target, cur):
                    break
                if any(
                    len(x) > len(target) or _fuzzy_substring_distance(target, x) > 0.6 for x in pieces[:-1]
                ):
                    break
                if len(pieces[-1]) > len(target) or _fuzzy_substring_distance(target, pieces[-1]) >= 0.6:
                    break
                step += 1
                if len(merged) > len(target):
                    break
            run = list(range(k, k + step))
            d = ned(target, " ".join(norms[x] for x in run))
            if best is None or d < best[1]:
                best = (run, d)
        if best is not None:
            candidates.append(best)
    # Overlapping runs: keep, per group of overlapping runs, the chain of disjoint runs with the lowest mean.
    candidates.sort(key=lambda c: c[0][0])
    groups: list[list[tuple[list[int], float]]] = []
    for cand in candidates:
        if groups and any(set(cand[0]) & set(other[0]) for other in groups[-1]):
            groups[-1].append(cand)
        else:
            groups.append([cand])
    chosen: list[list[int]] = []
    for group in groups:
        paths: list[list[tuple[list[int], float]]] = [[group[0]]]
        for cand in group[1:]:
            placed = False
            for path in paths:
                same = [p for p in path if p[0] == cand[0]]
                if same:
                    if same[0][1] > cand[1]:
                        path[path.index(same[0])] = cand
                    placed = True
                elif not any(set(p[0]) & set(cand[0]) for p in path):
                    path.append(cand)
                    placed = True
            if not placed:
                paths.append([cand])
        best_path = min(paths, key=lambda path: sum(c[1] for c in path) / len(path))
        chosen.extend(c[0] for c in best_path)
    del local
    return [[preds[k] for k in run] for run in chosen if len(run) > 1]


def _quick_match(gt: list[Block], pred: list[Block]) -> list[Entry]:
    """Match ground-truth text/formula blocks to predictions (OmniDocBench quick_match, simplified)."""
    claimed: dict[int, list[int]] = {}
    taken: set[int] = set()
    # 1. Ignore categories claim predictions within distance 0.25.
    ignore_idx = [i for i, b in enumerate(gt) if b.category in IGNORE_CATEGORIES]
    for i in ignore_idx:
        for j, p in enumerate(pred):
            if j not in taken and ned(gt[i].norm, p.norm) < 0.25:
                claimed.setdefault(i, []).append(j)
                taken.add(j)
    main_idx = [i for i in range(len(gt)) if i not in claimed and i not in ignore_idx]
    free = [j for j in range(len(pred)) if j not in taken]
    # 2. Truncated blocks: runs of consecutive predictions that together form one ground-truth block.
    merged_units = _truncated_runs(gt, pred, main_idx, free)
    in_runs = {j for u in merged_units for j in u}
    units = sorted([[j] for j in free if j not in in_runs] + merged_units, key=lambda u: u[0])
    unit_text = [" ".join(pred[j].norm for j in u) for u in units]
    # 3. Optimal assignment; matches worse than 0.7 are undone.
    cost = [[ned(gt[i].norm, t) for t in unit_text] for i in main_idx]
    unit_of: dict[int, int] = {}
    for r, c in assign(cost):
        if cost[r][c] <= 0.7:
            unit_of[main_idx[r]] = c
    # 4. Unmatched ground-truth blocks found inside a prediction join that prediction's entry.
    sharing: dict[int, list[int]] = {}
    for i, c in unit_of.items():
        sharing.setdefault(c, []).append(i)
    unmatched = [i for i in main_idx if i not in unit_of]
    unit_of_pred = {j: c for c, u in enumerate(units) for j in u}
    for j in free:
        for i in list(unmatched):
            if _fuzzy_substring_distance(pred[j].norm, gt[i].norm) < 0.4:
                c = unit_of_pred[j]
                sharing.setdefault(c, []).append(i)
                unit_of[i] = c
                unmatched.remove(i)
    entries: list[Entry] = []
    for i, js in claimed.items():  # ignore-category claims
        entries.append(Entry([i], js, gt[i].norm, "".join(pred[j].norm for j in js)))
    for c, gis in sorted(sharing.items()):
        gis = sorted(set(gis))
        entries.append(Entry(gis, units[c], "".join(gt[i].norm for i in gis), unit_text[c]))
    # 5. Leftover ground truth counts as missed; upstream still pairs it with leftover predictions (edit 1),
    # which
    #    places it in the predicted reading order.
    left_units = [c for c in range(len(units)) if c not in sharing]
    paired: dict[int, int] = {}
    if unmatched and left_units:
        cost = [[ned(gt[i].norm, unit_text[c]) for c in left_units] for i in unmatched]
        paired = {unmatched[r]: left_units[c] for r, c in assign(cost)}
    entries.extend(
        Entry([i], units[paired[i]] if i in paired else [], gt[i].norm, "", miss=True) for i in unmatched
    )
    return entries


@dataclass
class Entry:
    """One match: ground-truth block indices (several when one prediction holds them all), prediction indices,
    and the normalised strings compared."""

    gt: list[int]
    pred: list[int]
    gt_norm: str
    pred_norm: str
    miss: bool = False  # a ground-truth block counted as not recognised even if paired with a leftover

    @property
    def edit(self) -> float:
        return 1.0 if self.miss or not self.pred else ned(self.gt_norm, self.pred_norm)


# ----------------------------------------------------------------------------------------------- whole
# dataset
@dataclass
class OmniDocScores:
    text_edit: float
    formula_edit: float
    table_teds: float
    table_teds_s: float
    table_edit: float
    reading_order_edit: float
    overall: float
    pages: int
    # Layout boxes matched to the ground truth's (`jocr.checks.omnidoc_layout`), per class; None when no
    # page had a tree (`<stem>.json` beside its Markdown).
    layout: dict[str, dict] | None = None
    layout_pages: int = 0

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def evaluate_pages(pages: list[tuple[dict, str]], teds_config: TedsConfig | None = None) -> OmniDocScores:
    teds_config = teds_config or TedsConfig()
    """Scores for (ground-truth page, predicted Markdown) pairs."""
    text_pages, formula_pages, teds_all, teds_s_all, table_pages, order_pages = [], [], [], [], [], []
    for page, markdown in pages:
        res = match_page(gt_blocks(page), split_markdown(markdown))
        # Edit distances are page-level (edits summed over the page's matches / lengths summed), then averaged
        # over pages, as upstream's `call_Edit_dist` ("ALL_page_avg") does for text, formulas and tables.
        text_pairs = [(e.gt_norm, e.pred_norm) for e, cat in res.text if cat not in IGNORE_CATEGORIES]
        for pairs, out in (
            (text_pairs, text_pages),
            ([(e.gt_norm, e.pred_norm) for e, _ in res.formula], formula_pages),
        ):
            lengths = sum(max(len(a), len(b)) for a, b in pairs)
            if lengths:
                out.append(sum(Levenshtein.distance(a, b) for a, b in pairs) / lengths)
        table_pairs = []
        for g, pred_html in res.table:
            teds_all.append(teds(pred_html, g.content, False, teds_config) if pred_html else 0.0)
            teds_s_all.append(teds(pred_html, g.content, True, teds_config) if pred_html else 0.0)
            table_pairs.append(
                (normalize_table_html(g.content), normalize_table_html(pred_html) if pred_html else "")
            )
        lengths = sum(max(len(a), len(b)) for a, b in table_pairs)
        if lengths:
            table_pages.append(sum(Levenshtein.distance(a, b) for a, b in table_pairs) / lengths)
        if res.order is not None:
            order_pages.append(res.order)
    text_edit, formula_edit, table_teds = _mean(text_pages), _mean(formula_pages), _mean(teds_all)
    overall = ((1 - text_edit) * 100 + table_teds * 100 + (1 - formula_edit) * 100) / 3
    return OmniDocScores(
        text_edit=text_edit,
        formula_edit=formula_edit,
        table_teds=table_teds,
        table_teds_s=_mean(teds_s_all),
        table_edit=_mean(table_pages),
        reading_order_edit=_mean(order_pages),
        overall=overall,
        pages=len(pages),
    )


def evaluate_dir(gt_json: str | Path, predictions: str | Path) -> OmniDocScores:
    """Scores for an OmniDocBench JSON and a folder of `<image stem>.md` predictions (missing = empty).
    Where a page's document tree is there too (`<image stem>.json`: the tree, a page result or a document
    of `jocr parse --format json`), its blocks are matched to the ground truth's layout boxes
    (`jocr.checks.omnidoc_layout`) and `layout` holds precision and recall per class over those pages."""
    from jocr.checks.omnidoc_layout import LayoutCounts, gt_layout, page_tree_json, tree_layout

    with open(gt_json, encoding="utf-8") as f:
        gt_pages = json.load(f)
    pred_dir = Path(predictions)
    pairs = []
    counts = LayoutCounts()
    for page in gt_pages:
        stem = Path(page["page_info"]["image_path"]).stem
        md_path = pred_dir / f"{stem}.md"
        pairs.append((page, md_path.read_text(encoding="utf-8") if md_path.exists() else ""))
        tree_path = pred_dir / f"{stem}.json"
        if tree_path.is_file():
            tree = page_tree_json(json.loads(tree_path.read_text(encoding="utf-8")))
            if tree is None:
                raise ValueError(f"{tree_path} holds no page tree")
            info = page["page_info"]
            counts.add_page(tree_layout(tree, info["width"], info["height"]), gt_layout(page))
    scores = evaluate_pages(pairs)
    if counts.pages:
        scores.layout, scores.layout_pages = counts.as_dict(), counts.pages
    return scores
