"""The anchor: a page's text layer serialised for the prompt (document anchoring, olmOCR v1, arXiv
2502.18443 section 3.1), built by one function for training and inference.

Format, version 2 (ANCHOR_VERSION). One header line, then one line per text run in the text layer's
order (PDFium's content order, which is the reading order of most born-digital pages):

    page 612x792
    @1 72,60 Corporate social responsibility and the tobacco industry:
    @2 122,77 hope or hype?

- header: `page WxH`, the page size in points as rendered (rounded), so the model knows the aspect; for
  lines read by OCR the engine's name follows (`page 1275x1650 rapidocr`, sizes in pixels of an image),
  so the model knows the runs' characters may be wrong and knows which engine's errors to expect.
- each run: `@i x,y text`: the run's number (1, 2, ... in order within its window), its top-left corner
  on the 0-999 grid of the grounding boxes (layout/postprocess.py: pixel = grid / 999 * size), then the
  run's text. The text never holds a newline (the text layer splits runs at line breaks), so no escaping
  is needed.
- a run longer than `max_line_chars` keeps its head and tail around " ... ", cut at spaces (olmOCR caps
  elements the same way, at 250 characters).

Run references (new in version 2). An anchored model writes `@i` for "run i's text, exactly" wherever its
Markdown holds a whole run (a heading, a line of a paragraph, a table cell), and writes everything else
(Markdown syntax, table tags, formulas, text the layer lacks or garbles) itself. `resolve_references`
puts the runs' text back; `reference_target` turns a page's ground-truth Markdown into that form for
training (whole runs found in the Markdown, in order, at word boundaries), and the two are exact inverses
on the runs it replaces. This is a copy mechanism in the output text (pointer networks, Vinyals et al.
2015, arXiv 1506.03134), so a 9M-parameter decoder gets every character of a born-digital page right
without copying it token by token: a run costs 2-4 output tokens instead of one per 2-3 characters, and
the model spends its capacity on what the image alone tells: which runs to keep, their order and their
block types. Version 1 (the same lines without `@i`, the model copying the text) is not read any more.

Budget rule (`build_windows`): runs are taken in order into a window while its tokens (header, runs and
cut marks, counted with the model's own tokenizer) stay within `max_tokens`; the next run starts the next
window, up to MAX_WINDOWS windows, and runs past the last are left out. A window says where runs come
before or after it with a `...` line, and numbers its own runs from 1 (`@1` is its first run), so each
window reads like a page; each is its own request and the outputs are joined in order. The first window
alone (`build_anchor`) is the prefix of the page's runs that fits. (olmOCR samples the runs at random,
keeping the page's edge elements; consecutive runs are deterministic, which inference needs, and keep
the runs in reading order for the drafter that looks continuations up in them.)

The prompt that carries the anchor is built in one place, `jocr.tokenizer.Tokenizer.build_prompt`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from jocr.errors import one_line
from jocr.lines.references import REFERENCES, anchor_runs, referenced_numbers, with_references
from jocr.lines.types import TEXTLAYER, Line, PageLines, Word
from jocr.types import GRID_MAX  # the grounding boxes' grid: anchors use the same

ANCHOR_VERSION = 2
CUT_MARK = "..."
# A page's runs go into at most this many windows (one request each): 16 windows of the bundled model's
# 1,400-token budget hold ~600 runs, several times a dense page.
MAX_WINDOWS = 16


@dataclass
class Anchor:
    """An anchor and how it was cut: `lines` runs of `lines_total` kept, `tokens` its token count."""

    text: str
    lines: int
    lines_total: int
    tokens: int
    first: int = 1  # the number of its first run (a window of a long page starts later)
    version: int = ANCHOR_VERSION

    @property
    def truncated(self) -> bool:
        return self.lines < self.lines_total


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


def anchor_lines(layer: PageLines, max_line_chars: int = 200) -> list[str]:
    """The header and one `@i x,y text` line per run (no budget applied)."""
    header = f"page {round(layer.width)}x{round(layer.height)}"
    lines = [header if layer.source == TEXTLAYER else f"{header} {layer.source}"]
    for run in layer.lines:
        text = " ".join(run.text.split())  # tabs, odd spaces and stray newlines -> single spaces
        if not text:
            continue
        x, y = _grid(run.box[0], layer.width), _grid(run.box[1], layer.height)
        lines.append(f"@{len(lines)} {x},{y} {cap_text(text, max_line_chars)}")
    return lines


def _is_word_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


def _find_whole(markdown: str, text: str, start: int, taken: list[tuple[int, int]]) -> int:
    """The first index >= start where `text` occurs in `markdown` as whole words, outside `taken` spans,
    at a place where `@i` reads back as a reference (after a reference or neither an ASCII word character
    nor `@` before it; no ASCII digit after it); -1 when there is none."""
    at = markdown.find(text, start)
    while at >= 0:
        end = at + len(text)
        before = markdown[at - 1] if at > 0 else " "
        after = markdown[end] if end < len(markdown) else " "
        after_reference = any(b == at for _, b in taken)
        bad_before = not after_reference and (_is_word_char(before) or before == "@")
        bad_after = after in "0123456789" or (_is_word_char(text[-1]) and _is_word_char(after))
        if not (bad_before or bad_after) and not any(a < end and at < b for a, b in taken):
            return at
        at = markdown.find(text, at + 1)
    return -1


def reference_target(markdown: str, anchor_text: str) -> str:
    """A page's Markdown written the way an anchored model writes it: each run of the anchor found whole in
    the Markdown becomes `@i` (runs taken in order, each searched first after the previous match, then
    from the top: columns and floats can leave the layer's order). `resolve_references` of the result is
    `markdown` again. Markdown that already holds `@<digits>` at a word start is returned unchanged, since
    its references could not be told from the page's own text."""
    return _reference_form(markdown, anchor_runs(anchor_text))


def _reference_form(markdown: str, runs: dict[int, str]) -> str:
    if REFERENCES.search(markdown):
        return markdown
    taken: list[tuple[int, int, int]] = []  # (start, end, run)
    cursor = 0
    for number, text in runs.items():
        if " ... " in text and len(text) > 8:  # a capped run is not the page's text
            continue
        spans = [(a, b) for a, b, _ in taken]
        at = _find_whole(markdown, text, cursor, spans)
        if at < 0:
            at = _find_whole(markdown, text, 0, spans)
        if at < 0:
            continue
        taken.append((at, at + len(text), number))
        cursor = at + len(text)
    return with_references(markdown, taken)


def build_windows(
    layer: PageLines,
    tokenizer,
    max_tokens: int = 1024,
    max_line_chars: int = 200,
    max_windows: int = MAX_WINDOWS,
) -> list[Anchor]:
    """The page's runs in consecutive windows (the budget rule above), each an anchor of at most
    `max_tokens` tokens of `tokenizer`: at most `max_windows` of them; runs past the last are left out.

    Callers use it only for a usable layer (`layer.usable`); any layer serialises, though."""
    lines = anchor_lines(layer, max_line_chars)
    header, runs = lines[0], lines[1:]
    # Lines join with "\n" and every line starts a new pre-token for the byte-level BPE, so per-line counts
    # add up to a window's count; the encode in `_window` checks that. Costs are counted with the page-wide
    # numbers, never shorter than a window's own.
    costs = [len(ids) for ids in tokenizer.encode_batch([line + "\n" for line in lines])]
    cut_cost = len(tokenizer.encode(CUT_MARK + "\n"))
    windows: list[Anchor] = []
    first = 0  # index into runs
    while len(windows) < max(1, max_windows):
        used = costs[0] + (cut_cost if first else 0)
        end = first
        while end < len(runs):
            reserve = cut_cost if end < len(runs) - 1 else 0
            if used + costs[end + 1] + reserve > max_tokens:
                break
            used += costs[end + 1]
            end += 1
        window = _window(header, runs, first, end, len(runs), tokenizer, max_tokens)
        if window.lines == 0 and windows:  # a run longer than a window: it and the rest are left out
            break
        windows.append(window)
        if window.lines == 0 or first + window.lines >= len(runs):
            break
        first += window.lines
    return windows


def _window(header: str, runs: list[str], first: int, end: int, total: int, tokenizer, max_tokens: int):
    """The anchor of runs[first:end], numbered from 1 in the window, with a cut mark where runs come before
    or after it."""
    while True:
        before, after = [CUT_MARK] if first else [], [CUT_MARK] if end < total else []
        local = [f"@{k}{line[line.index(' ') :]}" for k, line in enumerate(runs[first:end], 1)]
        text = "\n".join([header, *before, *local, *after])
        tokens = len(tokenizer.encode(text))
        if end == first and tokens > max_tokens:  # not even the header fits: the cut mark alone
            text = CUT_MARK
            tokens = len(tokenizer.encode(text))
        if tokens <= max_tokens or end == first:  # a tokenizer that merges across lines: drop until it fits
            return Anchor(text=text, lines=end - first, lines_total=total, tokens=tokens, first=first + 1)
        end -= 1


def run_window(
    layer: PageLines, tokenizer, first: int, count: int, max_tokens: int = 1024, max_line_chars: int = 200
) -> Anchor:
    """The window of the page's runs `first` (0-based) to `first + count`, in the form of `build_windows`'
    windows (numbered from 1, cut marks where runs come before or after it), within `max_tokens`."""
    lines = anchor_lines(layer, max_line_chars)
    header, runs = lines[0], lines[1:]
    first = max(0, min(first, len(runs)))
    return _window(
        header, runs, first, min(len(runs), first + max(0, count)), len(runs), tokenizer, max_tokens
    )


def build_anchor(layer: PageLines, tokenizer, max_tokens: int = 1024, max_line_chars: int = 200) -> Anchor:
    """The first window of `layer` (`build_windows`): the prefix of its runs that fits `max_tokens`."""
    return build_windows(layer, tokenizer, max_tokens, max_line_chars, max_windows=1)[0]


def region_anchor(layer: PageLines, box, tokenizer, max_tokens: int = 1024) -> str | None:
    """The anchor of a region of a page (an element crop: a figure for the caption task): the first window
    (`build_anchor`) of the lines inside `box` (`PageLines.crop`, page units), their positions on the crop's
    own grid and the header the crop's size; None when the layer is not usable or no run lies inside."""
    if not layer.usable:
        return None
    region = layer.crop(tuple(box))
    if not region.lines:
        return None
    return build_anchor(region, tokenizer, max_tokens).text


def page_runs(windows: list[Anchor]) -> dict[int, str]:
    """Page-wide run number -> run text, from a page's windows (each numbers its runs from 1)."""
    return {w.first + k - 1: text for w in windows for k, text in anchor_runs(w.text).items()}


def window_target(markdown: str, windows: list[Anchor], index: int, reference_form=None) -> str:
    """What the model writes when it reads window `index` of a page whose Markdown is `markdown`: the page
    in reference form (`reference_target` over all its runs), cut to the references of that window's runs
    with the text around them, renumbered as the window numbers its runs (from 1). Text between
    references goes with the next reference of its block (the paragraph or table it is in), else the
    previous one; a block without references goes with the reference before it (or the first after it).
    The windows' parts, resolved and joined in order by blank lines, give the page back, except where a
    block spans two windows, which splits it. `reference_form(markdown, runs)` puts the references in
    (default: whole runs found exactly, as `reference_target`; OCR'd runs need one that tolerates OCR's
    errors)."""
    target = (reference_form or _reference_form)(markdown, page_runs(windows))
    if len(windows) == 1:
        return target
    owner = {}  # page-wide run number -> window index
    for w, window in enumerate(windows):
        for number in range(window.first, window.first + window.lines):
            owner[number] = w
    refs = []  # (start, end, window) of each reference, also of each in a row such as `@3@4`
    for match in REFERENCES.finditer(target):
        for one in re.finditer(r"@([0-9]+)", match.group(0)):
            start = match.start() + one.start()
            refs.append((start, start + len(one.group(0)), owner.get(int(one.group(1)), -1)))
    if not refs:
        return target if index == 0 else ""
    pieces: list[str] = []
    for block_start, block in _blocks(target):
        block_end = block_start + len(block)
        inside = [r for r in refs if block_start <= r[0] < block_end]
        if not inside:
            before = [r for r in refs if r[0] < block_start]
            if (before[-1] if before else refs[0])[2] == index:
                pieces.append(block)
            continue
        text, last_end = [], block_start
        for _start, ref_end, w in inside:
            if w == index:
                text.append(target[last_end:ref_end])
            last_end = ref_end
        if inside[-1][2] == index:
            text.append(target[last_end:block_end])
        piece = "".join(text).strip()
        if piece:
            pieces.append(piece)
    offset = windows[index].first - 1

    def renumber(match: re.Match) -> str:
        return "".join(f"@{n - offset}" for n in referenced_numbers(match.group(0)))

    return REFERENCES.sub(renumber, "\n\n".join(pieces))


def _blocks(markdown: str) -> list[tuple[int, str]]:
    """(start, text) of each block of `markdown`: the parts between blank lines."""
    out, start = [], 0
    for match in re.finditer(r"\n\s*\n", markdown):
        out.append((start, markdown[start : match.start()]))
        start = match.end()
    out.append((start, markdown[start:]))
    return [(s, b) for s, b in out if b.strip()]


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
    """The anchoring decision for one page: an `anchored` page is read once per window (`windows`, the
    anchors of `build_windows`; one window for most pages); `verdict` is the text layer's (None when it
    was not read) and `note` says in one line why a page was not anchored, or what to know about one that
    was."""

    anchored: bool = False
    windows: list[Anchor] = field(default_factory=list)
    verdict: str | None = None
    note: str = ""
    # The line source the anchor came from: "textlayer", "rapidocr" or "tesseract" (None: not anchored).
    source: str | None = None
    # The page's text is its line source alone (`line_source_answers`): no model request. OCR'd pages
    # under "auto" for a model not trained on OCR anchors (`page_anchor`).
    alone: bool = False
    # The lines the page is read with: a page read from its lines `alone` (any line source: the rules over
    # lines group them into its tree, `jocr.layout.line_rules`), or an anchored page's text layer in the
    # anchor's order (the boxes and font sizes of its document tree); None otherwise.
    page_lines: PageLines | None = None
    # The display formulas the page layout found on the page (`jocr.layout.formulas.FormulaRegion`, or
    # their plain-data form after `from_state`), set by the page pipeline.
    formulas: list = field(default_factory=list)
    # Degrees (clockwise quarters) OCR turned the page by to read it: its lines are in that upright frame,
    # so the page's image is turned too before anything else reads it (`upright`).
    turn: int = 0

    def upright(self, image):
        """The page image in its lines' frame: turned as OCR turned it (`jocr.lines.ocr.upright_image`)."""
        if not self.turn or image is None:
            return image
        from jocr.lines.ocr import upright_image

        return upright_image(image, self.turn)

    @property
    def texts(self) -> list[str]:
        """The windows' anchor texts, one request each (or, for a page read from its lines `alone`, the
        anchors its text resolves against); [] when the page is read from the image alone."""
        return [w.text for w in self.windows] if self.anchored else []

    @property
    def tree_lines(self) -> list[Line] | None:
        """An anchored page's text-layer lines, which its document tree takes its boxes from (None for a
        page read from its lines alone, whose tree is built from them by the rules over lines)."""
        return None if self.alone or self.page_lines is None else self.page_lines.lines

    @property
    def request_anchors(self) -> list[str | None]:
        """The anchor of each of the page's requests: the windows' texts, or [None] (one request, the image
        alone)."""
        return [] if self.alone else self.texts or [None]

    def state(self) -> dict:
        """Everything, windows and all, as plain data (`from_state` rebuilds it): a page's decision handed
        from the process that read its text layer to the one that reads the page (`jocr batch`)."""
        return asdict(self)

    @classmethod
    def from_state(cls, state: dict) -> PageAnchor:
        windows = [Anchor(**w) for w in state["windows"]]
        return cls(
            anchored=state["anchored"],
            windows=windows,
            verdict=state["verdict"],
            note=state["note"],
            source=state.get("source"),
            alone=state.get("alone", False),
            page_lines=_page_lines_from_state(state.get("page_lines")),
            formulas=list(state.get("formulas") or []),
            turn=state.get("turn", 0),
        )

    def to_dict(self) -> dict:
        out = {"anchored": self.anchored, "verdict": self.verdict, "note": self.note or None}
        if self.source is not None:
            out["source"] = self.source
        if self.alone:
            out["alone"] = True
        if self.turn:
            out["turn"] = self.turn
        if self.windows:
            lines = sum(w.lines for w in self.windows)
            total = self.windows[0].lines_total
            out.update(
                version=self.windows[0].version,
                windows=len(self.windows),
                lines=lines,
                lines_total=total,
                tokens=sum(w.tokens for w in self.windows),
                truncated=lines < total,
            )
        return out


def reads_lines(mode: str, trained_version: int) -> bool:
    """Whether `page_anchor` reads a page's lines at all under anchor `mode` for a model trained with
    anchor format `trained_version`: not under "off", nor under "auto" for a model trained on images
    alone."""
    mode = normalise_anchor_mode(mode)
    return not (mode == "off" or (mode == "auto" and trained_version == 0))


def page_anchor(
    source,
    index: int,
    mode: str,
    trained_version: int,
    tokenizer,
    max_tokens: int,
    max_windows: int = MAX_WINDOWS,
    image=None,
    ocr: str = "auto",
    ocr_config=None,
    layer: PageLines | None = None,
    ocr_anchors: bool = False,
) -> PageAnchor:
    """Decide and build a page's anchor: the one rule the CLI, `jocr.parse`, the server and training share.

    mode "off": never (no line source is read). "auto": only for a model trained with anchors of this
    format (`trained_version == ANCHOR_VERSION`, from its config), so a model trained on images alone
    behaves exactly as without this feature. "on": even for a model not trained with anchors (noted).
    The lines come from `jocr.lines.source.page_lines`: the text layer when usable, else OCR over `image`
    (the page as rendered; `ocr` "auto", "rapidocr", "tesseract" or "none", `ocr_config` a
    `jocr.lines.ocr.OCRLinesConfig`); a page without usable lines falls back to the image alone, with the
    verdict and note. Under "auto", an OCR'd page is read from its lines `alone` unless the model was
    trained on OCR anchors (`ocr_anchors`, `jocr.config.AnchorConfig.ocr`): a model trained on text-layer
    anchors only read real scanned pages worse than their lines alone (docs/results/2026-12-03-ocr.md).
    "on" always asks the model.
    The anchor is `build_windows`' windows of `max_tokens` each. `layer`: the page's text layer when it
    was read already (the one pass over a PDF page, `jocr.pipeline.page_read`); None reads it from
    `source`."""
    from jocr.lines.source import page_lines

    mode = normalise_anchor_mode(mode)
    if not reads_lines(mode, trained_version):
        return PageAnchor()
    if trained_version not in (0, ANCHOR_VERSION):
        return PageAnchor(
            note=f"the model reads anchor version {trained_version}; this build writes {ANCHOR_VERSION}"
        )
    lines = page_lines(source, index, image, ocr, ocr_config, layer=layer)
    if lines is None:
        return PageAnchor(note="the input has no text layer (an image)" if mode == "on" else "")
    if not lines.usable:  # `verdict` stays the text layer's: None for an image OCR found nothing in
        verdict = lines.verdict if lines.source == TEXTLAYER else None
        return PageAnchor(verdict=verdict, note=lines.note, source=lines.source)
    if not lines.lines:
        return PageAnchor(verdict=lines.verdict, note="the page holds no text runs", source=lines.source)
    windows = build_windows(lines, tokenizer, max_tokens, max_windows=max_windows)
    ocred = lines.source != TEXTLAYER
    alone = ocred and mode == "auto" and not ocr_anchors
    notes = [lines.note] if ocred and lines.note else []
    if not trained_version and not alone:
        notes.append("the model was not trained with anchors")
    elif ocred and not alone and not ocr_anchors:
        notes.append(f"the model was trained on text-layer anchors, not {lines.source}'s")
    kept = sum(w.lines for w in windows)
    if kept < len(lines.lines) and len(windows) == max_windows:
        notes.append(f"text runs past {kept} left out ({max_windows} windows of {max_tokens} tokens)")
    return PageAnchor(
        anchored=True,
        windows=windows,
        verdict=lines.verdict,
        note="; ".join(notes),
        source=lines.source,
        alone=alone,
        # An anchored page's tree takes its boxes from its lines: a text layer's, or OCR's where the model
        # was trained on OCR anchors (never OCR boxes it was not trained on).
        page_lines=lines if alone or not ocred or ocr_anchors else None,
        turn=int(lines.stats.get("turn") or 0) if ocred else 0,
    )


_RUN_POSITION = re.compile(r"^@(\d+) (\d+),(\d+) ", re.MULTILINE)


def line_source_answers(windows: list[Anchor]) -> list[str]:
    """What a page read from its lines alone "answers" in each window: every run referenced in order
    (`@1`, `@2`, ...), a blank line (a new paragraph) where the next run starts above the previous one (a
    new column) or lower than 1.6 times the window's median step between consecutive runs. Resolved by
    `jocr.layout.request.page_text` like a model's answer (furniture dropped, broken words joined)."""
    answers = []
    for window in windows:
        runs = [(int(n), int(y)) for n, _x, y in _RUN_POSITION.findall(window.text)]
        steps = sorted(b[1] - a[1] for a, b in zip(runs, runs[1:]) if b[1] > a[1])
        step = steps[(len(steps) - 1) // 2] if steps else 0  # the lower median: a line step
        parts = []
        for k, (number, y) in enumerate(runs):
            if k:
                gap = y - runs[k - 1][1]
                parts.append("\n\n" if gap < 0 or (step and gap > 1.6 * step) else "\n")
            parts.append(f"@{number}")
        answers.append("".join(parts))
    return answers


def page_anchor_or_note(
    source,
    index: int,
    mode: str,
    trained_version: int,
    tokenizer,
    max_tokens: int,
    image=None,
    ocr: str = "auto",
    ocr_config=None,
    layer: PageLines | None = None,
    ocr_anchors: bool = False,
) -> PageAnchor:
    """`page_anchor`, where a line source that cannot be read, for whatever reason, sends the page down the
    image-only path with a note: it never fails the page."""
    try:
        return page_anchor(
            source,
            index,
            mode,
            trained_version,
            tokenizer,
            max_tokens,
            image=image,
            ocr=ocr,
            ocr_config=ocr_config,
            layer=layer,
            ocr_anchors=ocr_anchors,
        )
    except Exception as exc:
        return PageAnchor(note=f"text layer not used ({one_line(exc)})")


def _page_lines_from_state(state: dict | None) -> PageLines | None:
    """`PageLines` from its `dataclasses.asdict` form (`PageAnchor.state`)."""
    if state is None:
        return None
    return PageLines(**{**state, "lines": [_line_from_state(d) for d in state.get("lines") or ()]})


def _line_from_state(state: dict) -> Line:
    """A `Line` from its `dataclasses.asdict` form (`PageAnchor.state`)."""
    words = state.get("words")
    return Line(
        **{
            **state,
            "box": tuple(state["box"]),
            "words": None if words is None else [Word(**{**w, "box": tuple(w["box"])}) for w in words],
        }
    )
