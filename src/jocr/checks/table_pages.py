"""Tables of a whole page scored against the page's true tables, as OmniDocBench's end-to-end table score
does (`jocr.checks.omnidoc.match_page`): the page's predicted tables are matched one to one to the true
ones by the normalised HTML edit distance (optimal assignment), each true table scores the TEDS of its
match (0 when none is left for it), and what is left over is counted: true tables with no match are
missed, predicted tables with no match are false tables (on a page without tables every predicted table
is one)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from jocr.checks.omnidoc import assign
from jocr.checks.omnidoc_split import normalize_table_html
from jocr.checks.teds import teds
from jocr.checks.text import normalized_edit_distance as ned

_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)


@dataclass
class PageTables:
    """One page's table score: per true table its (TEDS, TEDS-S), 0 when it was missed."""

    scores: list[tuple[float, float]] = field(default_factory=list)
    found: int = 0  # true tables matched to a predicted one
    missed: int = 0
    false: int = 0  # predicted tables matched to no true one


def html_tables(markdown: str) -> list[str]:
    """The HTML tables of a page's Markdown, in order."""
    return _TABLE.findall(markdown or "")


def score_page(truth: list[str], markdown: str) -> PageTables:
    """The page's tables (`html_tables(markdown)`) against its true tables' HTML (module docstring)."""
    predicted = html_tables(markdown)
    cost = [[ned(normalize_table_html(t), normalize_table_html(p)) for p in predicted] for t in truth]
    pairs = dict(assign(cost)) if truth and predicted else {}
    out = PageTables()
    for i, true_html in enumerate(truth):
        if i in pairs:
            html = predicted[pairs[i]]
            out.scores.append((teds(html, true_html), teds(html, true_html, structure_only=True)))
            out.found += 1
        else:
            out.scores.append((0.0, 0.0))
            out.missed += 1
    out.false = len(predicted) - len(pairs)
    return out
