"""olmOCR-Bench unit tests for a synthetic page, derived from its blocks (not from its image).

Per page (counts scale with the profile): `present` tests on rare words, numbers and sentence fragments;
`absent` tests on running headers, footers and page numbers (the page number only within the last 20
characters, as olmOCR-Bench does); `order` tests between sentences and between blocks in reading order;
`table` tests on cell neighbours and headings; `math` tests on every display formula and some inline ones;
and one `baseline` test (CJK allowed on Chinese pages). Every test is then run on the page's own ground
truth with `jocr.checks` and dropped if it fails there (`validate_tests`).
"""

from __future__ import annotations

import random
import re
from typing import Any

from jocr.synth.blocks import Formula, Heading, ListBlock, Paragraph, Run, Table
from jocr.synth.page import Composition
from jocr.synth.vocab import RARE_WORDS

_RARE = set(RARE_WORDS)
_HAS_DIGIT = re.compile(r"\d")
# Characters that olmOCR's normalisation treats as Markdown emphasis; snippets avoid them.
_EMPHASIS = re.compile(r"[*_]")


def max_diffs_for(text: str) -> int:
    """Edit budget for a snippet: exact when short, a little slack when long (as olmOCR-Bench uses)."""
    if len(text) < 30:
        return 0
    return 1 if len(text) < 60 else 2


def _text_runs(block) -> list[tuple[str, bool]]:
    """(text, cjk) of each text run of a block that carries running text."""
    if isinstance(block, Heading):
        return [(block.text, block.cjk)]
    runs: list[Run] = []
    if isinstance(block, Paragraph):
        runs = block.runs
    elif isinstance(block, ListBlock):
        runs = [run for item in block.items for run in item]
    return [(value, getattr(block, "cjk", False)) for kind, value in runs if kind == "text"]


def _windows(text: str, cjk: bool, rng: random.Random) -> list[tuple[str, int]]:
    """Candidate snippets of a text run with a priority (2: rare word, 1: number, 0: plain fragment)."""
    out: list[tuple[str, int]] = []
    if cjk:
        for _ in range(2):
            if len(text) < 6:
                break
            length = rng.randint(6, min(14, len(text)))
            start = rng.randint(0, len(text) - length)
            out.append(
                (text[start : start + length], 1 if _HAS_DIGIT.search(text[start : start + length]) else 0)
            )
        return out
    words = text.split()
    for i, word in enumerate(words):
        bare = word.strip(".,:;()")
        if bare in _RARE:
            lo, hi = max(0, i - rng.randint(0, 2)), min(len(words), i + 1 + rng.randint(0, 2))
            out.append((" ".join(words[lo:hi]).rstrip(".,:;"), 2))
        elif _HAS_DIGIT.search(bare) and len(bare) >= 3:
            lo, hi = max(0, i - rng.randint(1, 2)), min(len(words), i + 1 + rng.randint(0, 1))
            out.append((" ".join(words[lo:hi]).rstrip(".,:;"), 1))
    if len(words) >= 5:
        length = rng.randint(4, min(10, len(words)))
        start = rng.randint(0, len(words) - length)
        out.append((" ".join(words[start : start + length]), 0))
    return out


def _first_words(text: str, cjk: bool, n: int = 6) -> str:
    if cjk:
        return text[: n * 2]
    return " ".join(text.split()[:n])


def _unique_in(snippet: str, markdown: str) -> bool:
    return markdown.count(snippet) == 1


def _present_tests(comp: Composition, rng: random.Random, budget: int) -> list[dict[str, Any]]:
    candidates: list[tuple[str, int]] = []
    for placed in comp.blocks:
        for text, cjk in _text_runs(placed.block):
            candidates.extend(_windows(text, cjk, rng))
    candidates = [(s, p) for s, p in candidates if len(s.strip()) >= 3 and not _EMPHASIS.search(s)]
    rng.shuffle(candidates)
    # Take rare words, numbers and plain fragments in turn, so no kind crowds out the others.
    groups = [[s for s, p in candidates if p == priority] for priority in (2, 1, 0)]
    seen: set[str] = set()
    tests: list[dict[str, Any]] = []
    while len(tests) < budget and any(groups):
        for group in groups:
            while group and len(tests) < budget:
                snippet = group.pop()
                if snippet not in seen:
                    seen.add(snippet)
                    tests.append({"type": "present", "text": snippet, "max_diffs": max_diffs_for(snippet)})
                    break
    return tests


def _absent_tests(comp: Composition) -> list[dict[str, Any]]:
    tests: list[dict[str, Any]] = []
    for placed in comp.furniture:
        test: dict[str, Any] = {"type": "absent", "text": placed.item.text, "max_diffs": 0}
        if placed.item.kind == "page_number":
            test["last_n"] = (
                20  # a page number is only wrong at the end of the text (olmOCR-Bench convention)
            )
        tests.append(test)
    return tests


def _order_tests(comp: Composition, rng: random.Random, budget: int) -> list[dict[str, Any]]:
    markdown = comp.markdown
    anchors: list[str] = []  # snippets in reading order
    for placed in comp.blocks:
        block = placed.block
        if isinstance(block, Heading):
            anchors.append(block.text)
        elif isinstance(block, Paragraph) and block.runs and block.runs[0][0] == "text":
            text = block.runs[0][1]
            splitter = "。" if block.cjk else ". "
            sentences = [s for s in text.split(splitter) if s.strip()]
            for sentence in sentences[:3]:
                anchors.append(_first_words(sentence, block.cjk))
        elif isinstance(block, ListBlock) and block.items[0][0][0] == "text":
            anchors.append(_first_words(block.items[0][0][1], block.cjk, 5))
    anchors = [a for a in anchors if len(a) >= 8 and not _EMPHASIS.search(a) and _unique_in(a, markdown)]
    pairs = [(i, j) for i in range(len(anchors)) for j in range(i + 1, len(anchors))]
    rng.shuffle(pairs)
    tests = []
    for i, j in pairs[:budget]:
        before, after = anchors[i], anchors[j]
        diffs = min(max_diffs_for(before), max_diffs_for(after))
        tests.append({"type": "order", "before": before, "after": after, "max_diffs": diffs})
    return tests


def _table_tests(table: Table, rng: random.Random, budget: int) -> list[dict[str, Any]]:
    grid = table.grid()
    n_rows, n_cols = len(grid), len(grid[0])
    texts = [table.cell_at(r, c).text for r in range(n_rows) for c in range(n_cols)]
    header_rows = {r for r in range(n_rows) if all(table.cell_at(r, c).header for c in range(n_cols))}
    tests: list[dict[str, Any]] = []
    slots = [(r, c) for r in range(n_rows) for c in range(n_cols) if r not in header_rows]
    rng.shuffle(slots)
    for r, c in slots:
        if len(tests) >= budget:
            break
        cell = table.cell_at(r, c)
        if cell.rowspan > 1 or cell.colspan > 1 or texts.count(cell.text) > 1:
            continue
        relations: dict[str, str] = {}
        if r > 0 and grid[r - 1][c] != grid[r][c]:
            relations["up"] = table.cell_at(r - 1, c).text
        if r + 1 < n_rows and grid[r + 1][c] != grid[r][c]:
            relations["down"] = table.cell_at(r + 1, c).text
        if c > 0:
            relations["left"] = table.cell_at(r, c - 1).text
        if c + 1 < n_cols:
            relations["right"] = table.cell_at(r, c + 1).text
        if header_rows:
            relations["top_heading"] = table.cell_at(max(header_rows), c).text
        if c > 0:
            relations["left_heading"] = table.cell_at(r, 0).text
        if not relations:
            continue
        names = rng.sample(sorted(relations), k=min(len(relations), rng.choice((1, 1, 2))))
        test: dict[str, Any] = {"type": "table", "cell": cell.text, "max_diffs": 0}
        test.update({name: relations[name] for name in names})
        tests.append(test)
    return tests


def _math_tests(comp: Composition, rng: random.Random) -> list[dict[str, Any]]:
    tests: list[dict[str, Any]] = []
    seen: set[str] = set()
    for placed in comp.blocks:
        block = placed.block
        formulas: list[str] = []
        if isinstance(block, Formula):
            formulas.append(block.latex)
        elif isinstance(block, Paragraph | ListBlock):
            runs = block.runs if isinstance(block, Paragraph) else [r for item in block.items for r in item]
            formulas += [
                value for kind, value in runs if kind == "math" and len(value) > 4 and rng.random() < 0.5
            ]
        for latex in formulas:
            if latex not in seen:
                seen.add(latex)
                tests.append({"type": "math", "math": latex, "max_diffs": 0})
    return tests


def make_tests(comp: Composition, rng: random.Random, pdf: str, stem: str) -> list[dict[str, Any]]:
    """All candidate tests of a page as olmOCR-Bench JSONL records (`pdf` names the page file, page 1)."""
    small = comp.image.width * comp.image.height <= 512 * 512
    present_budget = 3 if small else 8
    order_budget = 1 if small else 5
    table_budget = 3 if small else 6
    tests: list[dict[str, Any]] = []
    tests += _present_tests(comp, rng, present_budget)
    tests += _absent_tests(comp)
    tests += _order_tests(comp, rng, order_budget)
    for placed in comp.blocks:
        if isinstance(placed.block, Table):
            tests += _table_tests(placed.block, rng, table_budget)
    tests += _math_tests(comp, rng)
    baseline: dict[str, Any] = {"type": "baseline", "max_diffs": 0}
    if comp.context.cjk:
        baseline["check_disallowed_characters"] = False
    tests.append(baseline)
    records = []
    for i, test in enumerate(tests):
        record = {"pdf": pdf, "page": 1, "id": f"{stem}_{i:02d}_{test['type']}"}
        record.update(test)
        records.append(record)
    return records


def validate_tests(
    records: list[dict[str, Any]], markdown: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split tests into (kept, dropped): a test must load and pass on the page's own ground truth."""
    from jocr.checks import ValidationError, load_test

    kept, dropped = [], []
    for record in records:
        try:
            result = load_test(record).run(markdown)
        except ValidationError as exc:
            dropped.append({**record, "reason": f"invalid: {exc}"})
            continue
        if result.passed:
            kept.append(record)
        else:
            dropped.append({**record, "reason": result.reason})
    return kept, dropped
