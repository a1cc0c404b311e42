"""Where one paragraph of the page ends and the next begins, by the text layer's lines (docs/parsing.md,
"Paragraphs the answer ran together"): the rules `jocr.layout.answer_tree` joins paragraphs by and cuts
the answer's paragraphs by, so that the two never undo each other.

The anchored member now and then writes several of the page's paragraphs as one (a page of short
paragraphs, a block of definitions). The text layer shows each break: the next line starts indented (a
first-line indent), further down than a line pitch (a gap between paragraphs), or after a short line that
ends a sentence. A paragraph the answer wrote is cut before such a line, only where the two lines are
consecutive runs on the text layer, set in one font size and face, in one column."""

from __future__ import annotations

import re

from jocr.layout.geometry import Line, list_item
from jocr.layout.line_rules import PARAGRAPH_STEP, SENTENCE_END
from jocr.lines.hyphens import SOFT_HYPHEN
from jocr.lines.references import REFERENCES, referenced_numbers

# A line opening with a list marker or a footnote mark, whose next line hangs indented under its text.
_MARKED = re.compile(r"\s*(?:[0-9]{1,3}[.)]?|[•·◦▪‣∙*†‡§¶–-]|\(?[a-z][.)])\s")
MAX_INDENT = 4.0  # ems: a first line indented further is another column or a display, not a paragraph


def line_size(line: Line) -> float:
    """A line's font size, or, where its box is estimated from an anchor, 0.8 of its height."""
    return line.size if not line.estimated and line.size > 0 else 0.8 * line.height


def short_line(line: Line, geometry: list[Line]) -> bool:
    """Whether `line` ends well before the right edge of its column (the lines of the page starting within
    two ems of it), so a paragraph may end there; where boxes are estimated, whether it is shorter than
    the column's long runs."""
    size = line_size(line)
    column = [ln for ln in geometry if abs(ln.x0 - line.x0) < 2 * size] or [line]
    if not line.estimated:
        right = sorted(ln.x1 for ln in column)[int(0.9 * (len(column) - 1))]
        return line.x1 < right - max(3 * size, 0.12 * (right - line.x0))
    lengths = sorted(len(ln.text) for ln in column)
    return len(line.text) < 0.8 * lengths[int(0.9 * (len(lengths) - 1))]


def ends_paragraph(line: Line, geometry: list[Line]) -> bool:
    """Whether a paragraph ends with `line`: a short line that ends a sentence."""
    return short_line(line, geometry) and bool(SENTENCE_END.search(line.text.rstrip()))


def paragraph_break(a: Line, b: Line, geometry: list[Line], listed: bool = False) -> bool:
    """Whether the text layer shows a new paragraph starting at `b`, the run after `a`: `b` on a line below
    `a` (measured boxes, the same size and weight, not code, in the same column) that is indented (not
    where the paragraph is `listed`, nor after a line opening with a marker or a note's number: a list's
    and a footnote's wrapped lines hang indented), further down than a paragraph's pitch, or
    after a short line ending a sentence; an indented line counts only after a sentence's end. No break
    inside a word broken at `a`'s end, nor before a line going on in lower case (a sentence going on, a
    description list's hanging lines, a line under a display the layer gives elsewhere)."""
    if b.index != a.index + 1 or a.estimated or b.estimated or a.text.rstrip().endswith(SOFT_HYPHEN):
        return False
    if b.text.lstrip()[:1].islower():
        return False  # the sentence goes on (below a display the layer gives elsewhere, say)
    size = line_size(a)
    if abs(a.size - b.size) > 0.1 * max(a.size, 1e-3) or a.mono or b.mono or a.bold != b.bold:
        return False  # another font, or code (its lines are the code rules' to group)
    step = b.y0 - a.y0
    if step <= 0.5 * size or abs(b.x0 - a.x0) > MAX_INDENT * size:
        return False  # the same row, a line above (another column), or another column's start
    if step > PARAGRAPH_STEP * 1.25 * size:
        return True
    ended = bool(SENTENCE_END.search(a.text.rstrip()))
    if ended and not listed and not _MARKED.match(a.text) and b.x0 > a.x0 + 0.5 * size:
        return True
    return b.x0 >= a.x0 - 0.5 * size and ends_paragraph(a, geometry)


def paragraph_parts(piece: str, runs: dict[int, str], start: int, geometry: list[Line]) -> list[str]:
    """A paragraph of an answer (`piece`, in references to `runs`, the window's, whose run 1 is the page's
    run `start`) cut where the text layer shows a new paragraph between two runs it names one after the
    other with nothing but white space between them; the piece whole where it shows none."""
    matches = list(REFERENCES.finditer(piece))
    named = [n for m in matches for n in referenced_numbers(m.group(0)) if n in runs]
    listed = any(list_item(runs[n]) for n in named)
    cuts = []
    for m, n in zip(matches, matches[1:], strict=False):
        if piece[m.end() : n.start()].strip():
            continue
        left, right = referenced_numbers(m.group(0))[-1], referenced_numbers(n.group(0))[0]
        if left not in runs or right not in runs:
            continue
        if paragraph_break(geometry[start + left - 1], geometry[start + right - 1], geometry, listed):
            cuts.append((m.end(), n.start()))
    if not cuts:
        return [piece]
    parts, last = [], 0
    for end, begin in cuts:
        parts.append(piece[last:end])
        last = begin
    parts.append(piece[last:])
    return parts
