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
  left unmatched may absorb adjacent unmatched predictions when that lowers its distance (the quick-match merge);
- text is normalised by keeping only word and CJK characters; formulas by `normalized_formula` (font commands,
  \\left/\\right, spacing and environment markers removed, lower case);
- text edit distance is summed per page (edits / lengths) and averaged over pages; formula edit distance is
  averaged over ground-truth formulas; reading order is the normalised edit distance between the ground-truth
  order and the predicted order of the matched text blocks, averaged over pages.

`overall` = ((1 - text_edit) * 100 + table_teds * 100 + (1 - formula_edit) * 100) / 3; the leaderboard uses
the formula CDM in the last term, which needs a TeX installation, so the edit-distance score stands in for it.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from jocr.checks.teds import TedsConfig, teds

TEXT_CATEGORIES = (
    "text_block", "title", "code_txt", "code_txt_caption", "reference", "equation_caption", "figure_caption",
    "figure_footnote", "table_caption", "table_footnote", "code_algorithm", "code_algorithm_caption", "header",
    "footer", "page_footnote", "page_number", "circuit_caption", "circuit_footnote",
)  # fmt: skip
IGNORE_CATEGORIES = (
    "figure_caption", "figure_footnote", "table_caption", "table_footnote", "code_algorithm",
    "code_algorithm_caption", "header", "footer", "page_footnote", "page_number", "equation_caption",
    "circuit_caption", "circuit_footnote",
)  # fmt: skip
FORMULA_FILTERS = (
    "\\mathbf", "\\mathrm", "\\mathnormal", "\\mathit", "\\mathbb", "\\mathcal", "\\mathscr", "\\mathfrak",
    "\\mathsf", "\\mathtt", "\\textbf", "\\text", "\\boldmath", "\\boldsymbol", "\\operatorname", "\\bm",
    "\\symbfit", "\\mathbfcal", "\\symbf", "\\scriptscriptstyle", "\\notag", "\\setlength", "\\coloneqq",
    "\\space", "\\thickspace", "\\thinspace", "\\medspace", "\\nobreakspace", "\\negmedspace", "\\quad", "\\qquad",
    "\\enspace", "\\substackw", " ", "$$", "\\left", "\\right", "\\displaystyle",
)  # fmt: skip

_NO_ORDER = 1e9  # position of a ground-truth block without a reading-order annotation
_IMG = re.compile(r"!\[.*?\]\(.*?\)")
_FENCES = [re.compile(p, re.M) for p in (r"^```markdown\n?", r"^```html\n?", r"^```latex\n?", r"```\n?$")]
_DISPLAY = re.compile(r"\$\$(.*?)\$\$|\\\[(.*?)\\\]|\$(.*?)\$|\\\((.*?)\\\)", re.S)
_HTML_TABLE_OPEN = re.compile(r"<table(?:[^>]*)>")
_CODE = re.compile(r"```(\w+)\n(.*?)```", re.S)
_INLINE = re.compile(r"\$(.*?)\$|\\\((.*?)\\\)")
_LATEX_CMD = re.compile(r"\\[a-zA-Z]+")
_NON_WORD = re.compile(r"[^\w\u4e00-\u9fff]")


@dataclass
class Block:
    """One predicted or ground-truth element. `kind` is text, formula or table; `inline` marks a formula found
    inside text (offered for matching, never penalised when unmatched)."""

    kind: str
    content: str
    position: float
    category: str = ""
    inline: bool = False
    norm: str = ""


# ------------------------------------------------------------------------------------------------ normalisers
def clean_text(text: str) -> str:
    """Word and CJK characters only, after turning inline math into its letters (OmniDocBench `clean_string`)."""
    text = _INLINE.sub(lambda m: _LATEX_CMD.sub("", m.group(1) if m.group(1) is not None else m.group(2)), text)
    for token in ("\\t", "\\n", "\t", "\n", "/t", "/n"):
        text = text.replace(token, "")
    return _NON_WORD.sub("", text)


def normalize_formula(text: str) -> str:
    """OmniDocBench's `normalized_formula`: delimiters, tags, environments, fonts and spacing removed; lower case."""
    text = text.strip().strip("$").strip("\n")
    m = re.search(r"\\\[(.+?)(?<!\\)\\\]", text)
    if m:
        text = m.group(1).strip()
    for pattern in (r"\\tag\{.*?\}", r"\\hspace\{.*?\}", r"\\begin\{.*?\}", r"\\end\{.*?\}", r"\\arraycolsep.*?\}"):
        text = re.sub(pattern, "", text)
    text = text.strip(".")
    for token in FORMULA_FILTERS:
        text = text.replace(token, "")
    return text.lower()


def normalize_table_html(text: str) -> str:
    """Table HTML reduced to structure and text, as OmniDocBench compares tables by edit distance."""
    text = re.sub(r"<th\b", "<td", text, flags=re.I)
    text = re.sub(r"</th>", "</td>", text, flags=re.I)
    text = re.sub(r"</?(thead|tbody|tfoot|span|sup|sub|div|p|b|i|strong|em)\b[^>]*>", "", text, flags=re.I)
    text = html_lib.unescape(text).replace("\n", "")
    text = unicodedata.normalize("NFKC", text).strip()
    m = re.search(r"<table\b[^>]*>(.*)</table>", text, re.S | re.I)
    text = m.group(1) if m else text
    text = re.sub(r'\s(style|height|width|align|class)=".*?"', "", text)
    return re.sub(r"\s+", " ", text)


def _ned(a: str, b: str) -> float:
    if not a and not b:
        return 0.0
    return Levenshtein.distance(a, b) / max(len(a), len(b))


# ------------------------------------------------------------------------------------------- splitting a page
def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _html_tables(text: str) -> list[tuple[int, int]]:
    """Outermost `<table>...</table>` spans (nested tables stay inside their parent)."""
    spans = []
    depth, start = 0, 0
    for m in re.finditer(r"<table(?:[^>]*)>|</table>", text):
        if m.group(0).startswith("</"):
            if depth > 0:
                depth -= 1
                if depth == 0:
                    spans.append((start, m.end()))
        else:
            if depth == 0:
                start = m.start()
            depth += 1
    return spans


def markdown_table_to_html(lines: list[str]) -> str:
    rows = []
    for line in lines:
        body = line.strip().strip("|")
        if body and all(ch in "-: |" for ch in body):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append("<tr>" + "".join(f"<td>{html_lib.escape(c)}</td>" for c in cells) + "</tr>")
    return "<table>" + "".join(rows) + "</table>"


def split_markdown(markdown: str) -> list[Block]:
    """Prediction blocks in page order (see module docstring)."""
    content = _IMG.sub("", markdown)
    for pattern in _FENCES:
        content = pattern.sub("", content)
    content = re.sub(r"_{4,}", "____", content)
    content = re.sub(r" {4,}", "    ", content)
    for tag in ("<html>", "</html>", "<body>", "</body>"):
        content = content.replace(tag, "")
    blocks: list[Block] = []
    for start, end in _html_tables(content):
        blocks.append(Block("table", content[start:end], start))
        content = _blank(content, start, end)
    for m in list(_DISPLAY.finditer(content)):
        body = next(g for g in m.groups() if g is not None)
        single = " ".join(m.group(0).strip().split("\n"))
        if m.group(1) is not None or m.group(2) is not None:
            blocks.append(Block("formula", single, m.start()))
            content = _blank(content, m.start(), m.end())
        elif body.strip():
            blocks.append(Block("formula", f"\\[{body}\\]", m.start(), inline=True))
    # Markdown pipe tables: runs of at least two lines that start and end with a pipe.
    lines = content.split("\n")
    offset, run = 0, []
    offsets = []
    for line in lines:
        offsets.append(offset)
        offset += len(line) + 1
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].strip().startswith("|") and lines[j].strip().endswith("|"):
            j += 1
        if j - i >= 2:
            run = lines[i:j]
            blocks.append(Block("table", markdown_table_to_html(run), offsets[i]))
            for k in range(i, j):
                lines[k] = " " * len(lines[k])
            i = j
        else:
            i += 1
    content = "\n".join(lines)
    for m in list(_CODE.finditer(content)):
        blocks.append(Block("text", m.group(2).strip(), m.start(), category="code"))
        content = _blank(content, m.start(), m.end())
    parts = content.split("\n\n")
    if len(parts) == 1:
        parts = content.split("\n")
    pos = 0
    for part in parts:
        start = pos
        pos += len(part) + 2
        text = "\n".join(s.strip() for s in part.strip().split("\n") if s.strip())
        if not text:
            continue
        if text.startswith("<table") and text.endswith("</table>"):
            blocks.append(Block("table", text, start))
        elif text.startswith("$") and text.endswith("$"):
            if text.replace("$", "").strip():
                blocks.append(Block("formula", text.strip(), start))
        else:
            text = re.sub(r"^#+\s*", "", text)
            blocks.append(Block("text", text, start))
    blocks.sort(key=lambda b: (b.inline, b.position))
    return blocks


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
    """Layout elements with blocks split by a `truncated` relation joined into one (text concatenated in order)."""
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


def gt_blocks(page: dict) -> list[Block]:
    """Ground-truth blocks of one OmniDocBench page (ignored and non-text layout elements left out)."""
    blocks = []
    for det in _merge_truncated(page):
        if str(det.get("ignore", False)).lower() == "true":
            continue
        cat = det.get("category_type", "")
        order = det.get("order")
        try:
            position = float(order) if order not in (None, "", 0) else _NO_ORDER
        except (TypeError, ValueError):
            position = _NO_ORDER
        if cat in TEXT_CATEGORIES and det.get("text"):
            blocks.append(Block("text", str(det["text"]), position, cat, norm=clean_text(str(det["text"]))))
        elif cat == "equation_isolated" and det.get("latex"):
            latex = str(det["latex"])
            blocks.append(Block("formula", latex, position, cat, norm=normalize_formula(latex)))
        elif cat == "table" and det.get("html"):
            blocks.append(Block("table", str(det["html"]), position, cat))
    return [b for b in blocks if b.kind == "table" or b.norm]


def _normalise_pred(block: Block) -> Block:
    if block.kind == "text":
        block.norm = clean_text(block.content)
    elif block.kind == "formula":
        block.norm = normalize_formula(block.content)
    return block


def match_page(gt: list[Block], pred: list[Block], teds_config: TedsConfig = TedsConfig()) -> PageResult:
    result = PageResult()
    # Tables first: optimal assignment on normalised HTML edit distance.
    gt_tables = [b for b in gt if b.kind == "table"]
    pred_tables = [b for b in pred if b.kind == "table"]
    gt_norm = [normalize_table_html(b.content) for b in gt_tables]
    pred_norm = [normalize_table_html(b.content) for b in pred_tables]
    pairs = assign([[_ned(g, p) for p in pred_norm] for g in gt_norm])
    matched_pred = {c for _, c in pairs}
    by_gt = dict(pairs)
    for i, g in enumerate(gt_tables):
        result.table.append((g, pred_tables[by_gt[i]].content if i in by_gt else ""))
    extra_text: list[Block] = []
    for j, p in enumerate(pred_tables):
        if j not in matched_pred:  # an unmatched predicted table's cells become text candidates
            cells = re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", p.content, re.S | re.I)
            extra_text.extend(Block("text", re.sub(r"<[^>]+>", "", c).strip(), p.position) for c in cells)

    gt_mixed = [b for b in gt if b.kind != "table"]
    pred_mixed = [_normalise_pred(b) for b in pred if b.kind != "table"] + [_normalise_pred(b) for b in extra_text]
    pred_mixed = [b for b in pred_mixed if b.norm]
    entries = _quick_match(gt_mixed, pred_mixed)
    for e in entries:
        cats = [gt_mixed[i].category for i in e.gt]
        main = [c for c in cats if c not in IGNORE_CATEGORIES]
        category = Counter(main or cats).most_common(1)[0][0]
        e_kind = "formula" if category == "equation_isolated" else "text"
        (result.formula if e_kind == "formula" else result.text).append((e, category))
    # Reading order (upstream get_order_paired) over the non-ignored text entries: all ground-truth orders
    # sorted, against the ground-truth orders of matched entries listed in predicted order.
    text_entries = [e for e, cat in result.text if cat not in IGNORE_CATEGORIES]
    # Blocks without an annotated order take no part (upstream drops empty positions).
    gt_orders = sorted(gt_mixed[i].position for e in text_entries for i in e.gt if gt_mixed[i].position < _NO_ORDER)
    matched = sorted(
        ((pred_mixed[e.pred[0]].position, k), [gt_mixed[i].position for i in e.gt])
        for k, e in enumerate(text_entries)
        if e.pred
    )
    pred_orders = [o for _, orders in matched for o in orders if o < _NO_ORDER]
    if gt_orders or pred_orders:
        result.order = Levenshtein.distance(gt_orders, pred_orders) / max(len(gt_orders), len(pred_orders))
    return result


def _fuzzy_substring_distance(haystack: str, needle: str) -> float:
    """Best normalised distance of `needle` to an equally long window of `haystack` (1 if it is longer)."""
    if not needle or len(needle) > len(haystack):
        return 1.0
    from rapidfuzz import fuzz

    # partial_ratio finds the best window by Indel similarity; its Levenshtein distance decides, as upstream.
    window = fuzz.partial_ratio_alignment(needle, haystack)
    sub = haystack[window.dest_start : window.dest_start + len(needle)]
    return Levenshtein.distance(sub, needle) / len(needle)


def _quick_match(gt: list[Block], pred: list[Block]) -> list[Entry]:
    """Match ground-truth text/formula blocks to predictions (OmniDocBench quick_match, simplified)."""
    claimed: dict[int, list[int]] = {}
    taken: set[int] = set()
    # 1. Ignore categories claim predictions within distance 0.25.
    ignore_idx = [i for i, b in enumerate(gt) if b.category in IGNORE_CATEGORIES]
    for i in ignore_idx:
        for j, p in enumerate(pred):
            if j not in taken and _ned(gt[i].norm, p.norm) < 0.25:
                claimed.setdefault(i, []).append(j)
                taken.add(j)
    main_idx = [i for i in range(len(gt)) if i not in claimed and i not in ignore_idx]
    free = [j for j in range(len(pred)) if j not in taken]
    # 2. Truncated blocks: a ground-truth block without a close prediction may take a run of consecutive
    #    predictions that each look like pieces of it (upstream `deal_with_truncated` / `judge_pred_merge`).
    units: list[list[int]] = [[j] for j in free]
    close = {i for i in main_idx for j in free if _ned(gt[i].norm, pred[j].norm) < 0.25}
    merged_units: list[list[int]] = []
    used: set[int] = set()
    for i in main_idx:
        if i in close:
            continue
        best: tuple[float, list[int]] | None = None
        for k, j in enumerate(free):
            if j in used or pred[j].inline:
                continue
            run = [j]
            for j2 in free[k + 1 :]:
                if j2 in used or pred[j2].inline or j2 != run[-1] + 1:
                    break
                joined = " ".join(pred[x].norm for x in run + [j2])
                if _ned(gt[i].norm, joined) > _ned(gt[i].norm, " ".join(pred[x].norm for x in run)):
                    break
                if len(pred[j2].norm) > len(gt[i].norm) or _fuzzy_substring_distance(gt[i].norm, pred[j2].norm) >= 0.6:
                    break
                run.append(j2)
                if len(joined) > len(gt[i].norm):
                    break
            if len(run) > 1:
                d = _ned(gt[i].norm, " ".join(pred[x].norm for x in run))
                if best is None or d < best[0]:
                    best = (d, run)
        if best is not None:
            merged_units.append(best[1])
            used.update(best[1])
    if merged_units:
        units = [u for u in units if u[0] not in used] + merged_units
    unit_text = [" ".join(pred[j].norm for j in u) for u in units]
    # 3. Optimal assignment; matches worse than 0.7 are undone.
    cost = [[_ned(gt[i].norm, t) for t in unit_text] for i in main_idx]
    unit_of: dict[int, int] = {}
    for r, c in assign(cost):
        if cost[r][c] <= 0.7:
            unit_of[main_idx[r]] = c
    # 4. Unmatched ground-truth blocks found inside a prediction join that prediction's entry.
    sharing: dict[int, list[int]] = {}
    for i, c in unit_of.items():
        sharing.setdefault(c, []).append(i)
    unmatched = [i for i in main_idx if i not in unit_of]
    for c, text in enumerate(unit_text):
        for i in list(unmatched):
            if _fuzzy_substring_distance(text, gt[i].norm) < 0.4:
                sharing.setdefault(c, []).append(i)
                unit_of[i] = c
                unmatched.remove(i)
    entries: list[Entry] = []
    for i, js in claimed.items():  # ignore-category claims
        entries.append(Entry([i], js, gt[i].norm, "".join(pred[j].norm for j in js)))
    for c, gis in sorted(sharing.items()):
        gis = sorted(set(gis))
        entries.append(Entry(gis, units[c], "".join(gt[i].norm for i in gis), unit_text[c]))
    # 5. Leftover ground truth counts as missed; upstream still pairs it with leftover predictions (edit 1), which
    #    places it in the predicted reading order.
    left_units = [c for c in range(len(units)) if c not in sharing]
    paired: dict[int, int] = {}
    if unmatched and left_units:
        cost = [[_ned(gt[i].norm, unit_text[c]) for c in left_units] for i in unmatched]
        paired = {unmatched[r]: left_units[c] for r, c in assign(cost)}
    entries.extend(Entry([i], units[paired[i]] if i in paired else [], gt[i].norm, "", miss=True) for i in unmatched)
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
        return 1.0 if self.miss or not self.pred else _ned(self.gt_norm, self.pred_norm)


# ----------------------------------------------------------------------------------------------- whole dataset
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

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def evaluate_pages(pages: list[tuple[dict, str]], teds_config: TedsConfig = TedsConfig()) -> OmniDocScores:
    """Scores for (ground-truth page, predicted Markdown) pairs."""
    text_pages, formula_eds, teds_all, teds_s_all, table_eds, order_pages = [], [], [], [], [], []
    for page, markdown in pages:
        res = match_page(gt_blocks(page), split_markdown(markdown), teds_config)
        edits = lengths = 0
        for e, category in res.text:
            if category in IGNORE_CATEGORIES:
                continue
            edits += Levenshtein.distance(e.gt_norm, e.pred_norm)
            lengths += max(len(e.gt_norm), len(e.pred_norm))
        if lengths:
            text_pages.append(edits / lengths)
        formula_eds.extend(e.edit for e, _ in res.formula)
        for g, pred_html in res.table:
            teds_all.append(teds(pred_html, g.content, False, teds_config) if pred_html else 0.0)
            teds_s_all.append(teds(pred_html, g.content, True, teds_config) if pred_html else 0.0)
            table_eds.append(_ned(normalize_table_html(g.content), normalize_table_html(pred_html)) if pred_html else 1.0)
        if res.order is not None:
            order_pages.append(res.order)
    text_edit, formula_edit, table_teds = _mean(text_pages), _mean(formula_eds), _mean(teds_all)
    overall = ((1 - text_edit) * 100 + table_teds * 100 + (1 - formula_edit) * 100) / 3
    return OmniDocScores(
        text_edit=text_edit,
        formula_edit=formula_edit,
        table_teds=table_teds,
        table_teds_s=_mean(teds_s_all),
        table_edit=_mean(table_eds),
        reading_order_edit=_mean(order_pages),
        overall=overall,
        pages=len(pages),
    )


def evaluate_dir(gt_json: str | Path, predictions: str | Path) -> OmniDocScores:
    """Scores for an OmniDocBench JSON and a folder of `<image stem>.md` predictions (a missing file is empty)."""
    with open(gt_json, encoding="utf-8") as f:
        gt_pages = json.load(f)
    pred_dir = Path(predictions)
    pairs = []
    for page in gt_pages:
        stem = Path(page["page_info"]["image_path"]).stem
        md_path = pred_dir / f"{stem}.md"
        pairs.append((page, md_path.read_text(encoding="utf-8") if md_path.exists() else ""))
    return evaluate_pages(pairs)
