"""The anchor: a page's text layer serialised for the prompt (document anchoring, olmOCR v1, arXiv
2502.18443 section 3.1), built by one function for training and inference.

Format, version 1 (ANCHOR_VERSION). One header line, then one line per text run in the text layer's
order (PDFium's content order, which is the reading order of most born-digital pages):

    page 612x792
    72,60 Corporate social responsibility and the tobacco industry:
    122,77 hope or hype?

- header: `page WxH`, the page size in points as rendered (rounded), so the model knows the aspect.
- each run: `x,y text`, the run's top-left corner on the 0-999 grid of the grounding boxes
  (documents/postprocess.py: pixel = grid / 999 * size), then the run's text. The text never holds a
  newline (the text layer splits runs at line breaks), so no escaping is needed.
- a run longer than `max_line_chars` keeps its head and tail around " ... ", cut at spaces (olmOCR caps
  elements the same way, at 250 characters).

Budget rule: runs are kept in order while the anchor's tokens (header and runs, counted with the model's
own tokenizer) stay within `max_tokens`; the first run that does not fit and every later one are left
out, and a last line `...` says the anchor was cut. The anchor is thus always a prefix of the page's
runs: the model learns that text past the cut must be read from the image. (olmOCR samples the runs at
random, keeping the page's edge elements; a prefix is deterministic, which inference needs, and keeps
the runs in reading order for the drafter that looks continuations up in it.)

The prompt that carries the anchor is built in one place, `jocr.tokenizer.Tokenizer.build_prompt`.
"""

from __future__ import annotations

from dataclasses import dataclass

from jocr.documents.textlayer import TextLayer

ANCHOR_VERSION = 1
GRID_MAX = 999  # the grounding boxes' grid (documents/postprocess.py)
CUT_MARK = "..."


@dataclass
class Anchor:
    """An anchor and how it was cut: `lines` runs of `lines_total` kept, `tokens` its token count."""

    text: str
    lines: int
    lines_total: int
    tokens: int
    version: int = ANCHOR_VERSION

    @property
    def truncated(self) -> bool:
        return self.lines < self.lines_total

    def to_dict(self) -> dict:
        return {
            "version": self.version,
            "lines": self.lines,
            "lines_total": self.lines_total,
            "tokens": self.tokens,
            "truncated": self.truncated,
        }


def cap_text(text: str, max_chars: int) -> str:
    """`text` if short enough, else its head and tail around " ... ", each cut back to a space."""
    if len(text) <= max_chars:
        return text
    half = max(1, (max_chars - 5) // 2)
    head = text[:half].rsplit(" ", 1)[0] or text[:half]
    tail = text[-half:].split(" ", 1)[-1] or text[-half:]
    return f"{head} ... {tail}"


def _grid(value: float, size: float) -> int:
    return min(GRID_MAX, max(0, round(value / size * GRID_MAX))) if size > 0 else 0


def anchor_lines(layer: TextLayer, max_line_chars: int = 200) -> list[str]:
    """The header and one `x,y text` line per run (no budget applied)."""
    lines = [f"page {round(layer.width)}x{round(layer.height)}"]
    for run in layer.lines:
        text = " ".join(run.text.split())  # tabs, odd spaces and stray newlines -> single spaces
        if not text:
            continue
        x0, y0 = run.box[0], run.box[1]
        lines.append(f"{_grid(x0, layer.width)},{_grid(y0, layer.height)} {cap_text(text, max_line_chars)}")
    return lines


def build_anchor(layer: TextLayer, tokenizer, max_tokens: int = 1024, max_line_chars: int = 200) -> Anchor:
    """The version-1 anchor of `layer`, cut to `max_tokens` tokens of `tokenizer` (the budget rule above).

    Callers use it only for a usable layer (`layer.usable`); any layer serialises, though."""
    lines = anchor_lines(layer, max_line_chars)
    total = len(lines) - 1
    # Lines join with "\n" and every line starts a new pre-token for the byte-level BPE, so per-line counts
    # add up to the whole anchor's count; the final encode below checks that.
    counts = tokenizer.encode_batch([line + "\n" for line in lines])
    cut_cost = len(tokenizer.encode(CUT_MARK + "\n"))
    used, kept = 0, 0
    for i, ids in enumerate(counts):
        reserve = cut_cost if i < len(counts) - 1 else 0
        if used + len(ids) + reserve > max_tokens:
            break
        used += len(ids)
        kept = i + 1
    body = lines[:kept] + ([CUT_MARK] if kept < len(lines) else [])
    text = "\n".join(body)
    tokens = len(tokenizer.encode(text))
    while tokens > max_tokens and kept > 0:  # a tokenizer that merges across lines: drop until it fits
        kept -= 1
        text = "\n".join(lines[:kept] + [CUT_MARK])
        tokens = len(tokenizer.encode(text))
    return Anchor(text=text, lines=max(kept - 1, 0), lines_total=total, tokens=tokens)


ANCHOR_MODES = ("auto", "on", "off")


def normalise_anchor_mode(mode: str | bool | None) -> str:
    """ "auto" (default), "on" or "off"; True/False mean on/off. One-line ValueError otherwise."""
    if mode is None:
        return "auto"
    if isinstance(mode, bool):
        return "on" if mode else "off"
    value = str(mode).strip().lower()
    if value not in ANCHOR_MODES:
        raise ValueError(f"anchor must be auto, on or off, not {mode!r}")
    return value


@dataclass
class PageAnchor:
    """The anchoring decision for one page: `anchored` pages carry `anchor` in their prompt; `verdict` is
    the text layer's (None when it was not read) and `note` says in one line why a page was not anchored,
    or what to know about one that was."""

    anchored: bool = False
    anchor: Anchor | None = None
    verdict: str | None = None
    note: str = ""

    def to_dict(self) -> dict:
        out = {"anchored": self.anchored, "verdict": self.verdict, "note": self.note or None}
        if self.anchor is not None:
            out.update(self.anchor.to_dict())
        return out


def page_anchor(
    source, index: int, mode: str, trained_version: int, tokenizer, max_tokens: int
) -> PageAnchor:
    """Decide and build a page's anchor: the one rule the CLI, `jocr.parse`, the server and training share.

    mode "off": never (the text layer is not read). "auto": only for a model trained with anchors of this
    format (`trained_version == ANCHOR_VERSION`, from its config) and a page whose text layer is usable, so
    a model trained on images alone behaves exactly as without this feature. "on": every page with a
    usable layer, even for a model not trained with anchors (noted). A page without a usable layer falls
    back to the image alone, with the layer's verdict and note."""
    mode = normalise_anchor_mode(mode)
    if mode == "off" or (mode == "auto" and trained_version == 0):
        return PageAnchor()
    if trained_version not in (0, ANCHOR_VERSION):
        return PageAnchor(
            note=f"the model reads anchor version {trained_version}; this build writes {ANCHOR_VERSION}"
        )
    layer = source.text_layer(index)
    if layer is None:
        return PageAnchor(note="the input has no text layer (an image)" if mode == "on" else "")
    if not layer.usable:
        return PageAnchor(verdict=layer.verdict, note=layer.note)
    if not layer.lines:
        return PageAnchor(verdict=layer.verdict, note="the text layer holds no runs")
    anchor = build_anchor(layer, tokenizer, max_tokens)
    note = "" if trained_version else "the model was not trained with anchors"
    return PageAnchor(anchored=True, anchor=anchor, verdict=layer.verdict, note=note)
