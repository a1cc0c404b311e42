"""Vector synthetic pages: real PDFs with text layers, typeset by Chromium from HTML (docs/synth.md).

    with VectorRenderer() as renderer:
        page = vector_page(seed, renderer)        # page.pdf (bytes), page.markdown, page.tests, page.meta

The anchored model must see in training the anchor a user's PDF gives it (docs/parsing.md), so these pages
are PDFs read back through `jocr.lines.textlayer`, exactly like a user's file, never a text list
written beside the image. Chromium (Debian's `chromium`, driven by playwright) does the typesetting: line
breaking, 1-3 columns, tables with spans, CJK fonts through fontconfig, and its PDF backend (Skia, the one
that prints most web pages people save as PDF) writes the text layer. Formulas are typeset by matplotlib's
mathtext as vector SVG (glyphs as paths: like many real PDFs, formulas carry no text in the layer).

A page: US Letter or A4, margins 0.5-1 in, body 8-12 pt in a serif or sans family, one to three columns,
a title, headings, paragraphs with inline formulas and footnote marks, lists, ruled and unruled tables
(captions above), display formulas, vector figures with captions below, footnotes at the foot, and a
running header, footer and page number, each on some pages only, at varying places and in varying content
order (drawn, never written: the olmOCR-Bench `absent` convention).
Blocks are laid out in one pass; those that do not fit entirely on the page are removed in the browser
before printing, so the ground truth is exactly what the page shows, in reading order.
"""

from __future__ import annotations

import base64
import html
import io
import random
import re
from dataclasses import dataclass, field
from typing import Any

from jocr.synth import vocab
from jocr.synth.blocks import Formula, Heading, ListBlock, Paragraph, Run, Table
from jocr.synth.content import MAKERS, PageContext, make_caption, make_heading
from jocr.synth.profiles import PROFILES
from jocr.synth.testgen import make_tests, validate_tests

VECTOR_VERSION = 2  # 2: furniture optional, placed and ordered at random
CHROMIUM = "/usr/bin/chromium"
PAPERS = {"letter": (612, 792), "a4": (595, 842)}  # points
_SERIF = ("Liberation Serif", "DejaVu Serif")
_SANS = ("Liberation Sans", "DejaVu Sans")
_FIGURE_P = 0.08  # share of blocks that are figures
_FOOTNOTE_P = 0.5  # share of pages with footnotes
_HEADER_P, _FOOTER_P, _PAGE_NUMBER_P = 0.75, 0.5, 0.8  # shares of pages with each piece of furniture
_SUPERSCRIPTS = "¹²³⁴⁵⁶⁷⁸⁹"

# Content parameters (profiles.py "vector": the realistic `page` profile's); sizes and columns are chosen
# here in points, so the profile's pixel sizes do not apply.
VECTOR_PROFILE = PROFILES["vector"]


@dataclass
class Figure:
    """A vector figure (bars or a polyline, no text) with its caption below; only the caption is written."""

    svg: str
    caption: Paragraph
    kind: str = "figure"

    def markdown(self) -> str:
        return self.caption.markdown()


@dataclass
class VectorPage:
    pdf: bytes
    markdown: str
    tests: list[dict[str, Any]]
    meta: dict[str, Any]
    dropped_tests: list[dict[str, Any]] = field(default_factory=list)


class VectorRenderer:
    """One headless Chromium, reused for many pages (its start-up costs more than a page)."""

    def __init__(self, executable: str = CHROMIUM):
        self.executable = executable
        self._pw = self._browser = self._page = None

    def __enter__(self) -> VectorRenderer:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        try:
            self._browser = self._pw.chromium.launch(
                executable_path=self.executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            self._page = self._browser.new_page()
        except Exception:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
        if self._pw is not None:
            self._pw.stop()
        self._pw = self._browser = self._page = None

    def print_page(self, document: str, size: tuple[int, int]) -> tuple[bytes, list[int]]:
        """Lay out `document`, drop the blocks that do not fit (_FIT_SCRIPT), print one page.

        Returns (PDF bytes, ids of the blocks kept)."""
        page = self._page
        page.set_content(document, wait_until="load")
        kept = page.evaluate(_FIT_SCRIPT)
        width, height = f"{size[0] / 72:.4f}in", f"{size[1] / 72:.4f}in"  # playwright takes in/cm/mm/px
        pdf = page.pdf(width=width, height=height, print_background=True, page_ranges="1")
        return pdf, [int(i) for i in kept]


# Keeps blocks (in document order) while every fragment of them lies inside the body box; removes the first
# block that does not and everything after it, and the footnotes whose marks went with them.
_FIT_SCRIPT = """() => {
  const body = document.getElementById('body').getBoundingClientRect();
  const blocks = Array.from(document.querySelectorAll('[data-block]'));
  const inside = (el) => Array.from(el.getClientRects()).every(r =>
      r.left >= body.left - 1 && r.right <= body.right + 1 &&
      r.top >= body.top - 1 && r.bottom <= body.bottom + 1);
  let cut = blocks.length;
  for (let i = 0; i < blocks.length; i++) { if (!inside(blocks[i])) { cut = i; break; } }
  for (let i = blocks.length - 1; i >= cut; i--) blocks[i].remove();
  const marks = new Set(Array.from(document.querySelectorAll('[data-mark]')).map(m => m.dataset.mark));
  document.querySelectorAll('[data-note]').forEach(n => { if (!marks.has(n.dataset.note)) n.remove(); });
  return blocks.slice(0, cut).map(b => Number(b.dataset.block));
}"""


def _math_svg(latex: str, size_pt: float) -> str:
    """LaTeX -> an `<img>` of vector SVG (mathtext, glyphs as paths), sized in points."""
    from matplotlib import mathtext
    from matplotlib.font_manager import FontProperties

    buf = io.BytesIO()
    mathtext.math_to_image(f"${latex}$", buf, prop=FontProperties(size=size_pt), dpi=72, format="svg")
    svg = re.sub(rb"<metadata>.*?</metadata>", b"", buf.getvalue(), flags=re.S)  # drop the dated metadata
    data = base64.b64encode(svg).decode("ascii")
    return f'<img class="math" src="data:image/svg+xml;base64,{data}">'


def _figure_svg(rng: random.Random) -> str:
    width, height = 300, rng.randint(120, 200)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}">']
    parts.append(
        f'<rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" fill="none" stroke="#444"/>'
    )
    n = rng.randint(4, 10)
    if rng.random() < 0.5:
        bar = (width - 40) / n
        for i in range(n):
            h = rng.uniform(0.1, 0.85) * (height - 20)
            shade = rng.choice(("#4a6fa5", "#888", "#b55", "#333"))
            x, y = 20 + i * bar + bar * 0.15, height - 10 - h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar * 0.7:.1f}" height="{h:.1f}" fill="{shade}"/>'
            )
    else:
        points = " ".join(
            f"{20 + i * (width - 40) / (n - 1):.1f},{height - 10 - rng.uniform(0.1, 0.9) * (height - 20):.1f}"
            for i in range(n)
        )
        parts.append(f'<polyline points="{points}" fill="none" stroke="#236" stroke-width="2"/>')
    parts.append(f'<line x1="20" y1="{height - 10}" x2="{width - 10}" y2="{height - 10}" stroke="#000"/>')
    parts.append("</svg>")
    return "".join(parts)


def _runs_html(runs: list[Run], size_pt: float, mark: str = "") -> str:
    out = []
    for kind, value in runs:
        if not value:
            continue
        out.append(_math_svg(value, size_pt) if kind == "math" else html.escape(value, quote=False))
    text = " ".join(out)
    if mark:
        text += f'<span data-mark="{mark}">{mark}</span>'
    return text


def _block_html(i: int, block, size_pt: float, marks: dict[int, str], ruled: bool) -> str:
    attr = f'data-block="{i}"'
    if isinstance(block, Heading):
        return f"<h{block.level} {attr}>{html.escape(block.text, quote=False)}</h{block.level}>"
    if isinstance(block, Paragraph):
        cls = ' class="caption"' if block.kind == "caption" else ""
        return f"<p {attr}{cls}>{_runs_html(block.runs, size_pt, marks.get(i, ''))}</p>"
    if isinstance(block, ListBlock):
        tag = "ol" if block.ordered else "ul"
        items = "".join(f"<li>{_runs_html(item, size_pt)}</li>" for item in block.items)
        return f"<{tag} {attr}>{items}</{tag}>"
    if isinstance(block, Table):
        cls = "ruled" if ruled else "unruled"
        return f'<div {attr} class="tablewrap"><div class="{cls}">{block.markdown()}</div></div>'
    if isinstance(block, Formula):
        return f'<div {attr} class="display">{_math_svg(block.latex, size_pt * 1.15)}</div>'
    if isinstance(block, Figure):
        caption = html.escape(block.caption.markdown(), quote=False)
        return f"<figure {attr}>{block.svg}<figcaption>{caption}</figcaption></figure>"
    raise TypeError(f"no HTML for {type(block).__name__}")


@dataclass
class _Running:
    """A running header, footer or page number: printed at the page's top or bottom edge, never written.
    `first`: whether it comes before the body in the page's content order (so in its text layer)."""

    kind: str
    text: str
    edge: str  # "top" or "bottom"
    align: str  # CSS text-align
    first: bool


def _running_items(rng: random.Random, cjk: bool) -> list[_Running]:
    """The page's furniture. Real PDFs differ in which of it they print, where, and where its text sits in
    the content stream (before the body, after it, or the top items before and the bottom ones after), so
    an anchored model learns to find it by what it is and where it lies, not by being the first runs."""
    order = rng.choices(("first", "last", "split"), weights=(0.4, 0.3, 0.3))[0]
    number_edge = rng.choice(("top", "bottom", "bottom"))
    items = []
    if rng.random() < _HEADER_P:
        text = vocab.zh_title(rng, numbered=False) if cjk else vocab.title(rng, max_words=5, numbered=False)
        # A page number at the top sits at the right, so the header keeps clear of it.
        aligns = ("left", "center") if number_edge == "top" else ("left", "center", "right")
        items.append(("header", text, "top", rng.choice(aligns)))
    if rng.random() < _FOOTER_P:
        items.append(("footer", f"{rng.choice(vocab.NAMES)} {rng.randint(1990, 2025)}", "bottom", "left"))
    if rng.random() < _PAGE_NUMBER_P:
        align = "right" if number_edge == "top" else rng.choice(("right", "center"))
        items.append(("page_number", str(rng.randint(1, 400)), number_edge, align))
    if rng.random() < 0.5:
        rng.shuffle(items)
    return [
        _Running(kind, text, edge, align, order == "first" or (order == "split" and edge == "top"))
        for kind, text, edge, align in items
    ]


@dataclass
class _Layout:
    paper: str
    size: tuple[int, int]
    margin: float  # points
    body_pt: float
    columns: int
    serif: bool
    family: str
    line_height: float
    cjk: bool


def _choose_layout(rng: random.Random, cjk: bool) -> _Layout:
    paper = rng.choice(tuple(PAPERS))
    body_pt = round(rng.uniform(8.0, 12.0), 1)
    columns = rng.choices((1, 2, 3), weights=(0.45, 0.45, 0.1 if body_pt <= 9.5 else 0.0))[0]
    serif = rng.random() < 0.6
    if cjk:
        family = "Noto Serif CJK SC" if serif else "Noto Sans CJK SC"
    else:
        family = rng.choice(_SERIF if serif else _SANS)
    return _Layout(
        paper=paper,
        size=PAPERS[paper],
        margin=round(rng.uniform(36, 72), 1),
        body_pt=body_pt,
        columns=columns,
        serif=serif,
        family=family,
        line_height=round(rng.uniform(1.15, 1.4), 2),
        cjk=cjk,
    )


def _document(
    layout: _Layout,
    blocks: list,
    marks: dict[int, str],
    notes: list[tuple[str, str]],
    furniture: list[_Running],
    ruled: list[bool],
) -> str:
    w, h = layout.size
    m = layout.margin
    fs = layout.body_pt
    note_html = "".join(
        f'<div class="note" data-note="{k}">{k} {html.escape(t, quote=False)}</div>' for k, t in notes
    )
    body = "".join(_block_html(i, b, fs, marks, ruled[i]) for i, b in enumerate(blocks))
    css = f"""
@page {{ size: {w}pt {h}pt; margin: 0; }}
html, body {{ margin: 0; padding: 0; }}
#page {{ position: relative; width: {w}pt; height: {h}pt; overflow: hidden; background: white;
  font-family: '{layout.family}'; font-size: {fs}pt; line-height: {layout.line_height}; color: #111; }}
#body {{ position: absolute; left: {m}pt; right: {m}pt; top: {m}pt; bottom: {m + (fs * 5 if notes else 0)}pt;
  column-count: {layout.columns}; column-gap: {fs * 1.6:.1f}pt; column-fill: auto; overflow: hidden; }}
#notes {{ position: absolute; left: {m}pt; right: {m}pt; bottom: {m}pt; height: {fs * 4.6:.1f}pt;
  font-size: {fs * 0.8:.1f}pt; border-top: 0.5pt solid #333; padding-top: 2pt; overflow: hidden; }}
.furniture {{ position: absolute; left: {m}pt; right: {m}pt; font-size: {fs * 0.8:.1f}pt; color: #333; }}
p {{ margin: 0 0 {fs * 0.5:.1f}pt 0; text-align: {"justify" if layout.columns > 1 else "left"}; }}
h1 {{ font-size: {fs * 1.8:.1f}pt; margin: 0 0 {fs * 0.6:.1f}pt 0; column-span: all; }}
h2 {{ font-size: {fs * 1.35:.1f}pt; margin: {fs * 0.6:.1f}pt 0 {fs * 0.3:.1f}pt 0; break-after: avoid; }}
h3 {{ font-size: {fs * 1.12:.1f}pt; margin: {fs * 0.5:.1f}pt 0 {fs * 0.2:.1f}pt 0; break-after: avoid; }}
ul, ol {{ margin: 0 0 {fs * 0.5:.1f}pt 0; padding-left: {fs * 1.6:.1f}pt; }}
.tablewrap, figure, .display, h2, h3 {{ break-inside: avoid; }}
.tablewrap {{ margin: {fs * 0.3:.1f}pt 0 {fs * 0.7:.1f}pt 0; }}
table {{ border-collapse: collapse; font-size: {fs * 0.9:.1f}pt; max-width: 100%; }}
.ruled td, .ruled th {{ border: 0.5pt solid #222; padding: 1pt 3pt; }}
.unruled table {{ border-top: 1pt solid #000; border-bottom: 1pt solid #000; }}
.unruled td, .unruled th {{ padding: 1pt 5pt; }}
.unruled th {{ border-bottom: 0.5pt solid #000; }}
.display {{ text-align: center; margin: {fs * 0.4:.1f}pt 0; }}
img.math {{ vertical-align: middle; }}
figure {{ margin: {fs * 0.4:.1f}pt 0; text-align: center; }}
figure svg {{ width: 85%; height: auto; }}
figcaption, p.caption {{ font-size: {fs * 0.9:.1f}pt; }}
"""
    before, after = [], []
    for item in furniture:
        offset = m * (0.45 if item.edge == "top" else 0.4)
        div = (
            f'<div class="furniture" style="{item.edge}:{offset:.1f}pt;text-align:{item.align}">'
            f"{html.escape(item.text)}</div>"
        )
        (before if item.first else after).append(div)
    notes_div = f'<div id="notes">{note_html}</div>' if notes else ""
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head><body>'
        f'<div id="page">{"".join(before)}<div id="body">{body}</div>{notes_div}{"".join(after)}</div>'
        "</body></html>"
    )


def _compose(rng: random.Random, ctx: PageContext, max_blocks: int) -> list:
    prof = ctx.profile
    blocks: list = [Heading(make_heading(rng, ctx).text, level=1, cjk=ctx.cjk)]
    kinds = list(prof.kind_weights)
    weights = [prof.kind_weights[k] for k in kinds]
    tables = figures = 0
    while len(blocks) < max_blocks:
        if rng.random() < _FIGURE_P:
            figures += 1
            label = f"图{figures}" if ctx.cjk else f"Figure {figures}."
            title = (
                vocab.zh_title(rng, numbered=False)
                if ctx.cjk
                else vocab.title(rng, max_words=6, numbered=False)
            )
            blocks.append(
                Figure(
                    _figure_svg(rng), Paragraph([("text", f"{label} {title}")], cjk=ctx.cjk, kind="caption")
                )
            )
            continue
        kind = rng.choices(kinds, weights)[0]
        if kind == "formula" and not ctx.math:
            kind = "paragraph"
        block = MAKERS[kind](rng, ctx)
        if isinstance(block, Heading):
            block.level = rng.choice((2, 3))
        if isinstance(block, Table):
            tables += 1
            if rng.random() < prof.caption_p:
                blocks.append(make_caption(rng, ctx, tables))
        blocks.append(block)
    return blocks


def vector_page(
    seed: int, renderer: VectorRenderer, validate: bool = True, name: str | None = None, max_blocks: int = 60
) -> VectorPage:
    """One vector page, its ground truth and unit tests, from `seed` (content is a pure function of it)."""
    rng = random.Random(f"jocr-synth-vector/{seed}")
    prof = VECTOR_PROFILE
    cjk = rng.random() < prof.zh_p
    ctx = PageContext(profile=prof, cjk=cjk, math=rng.random() < prof.math_page_p)
    layout = _choose_layout(rng, cjk)
    blocks = _compose(rng, ctx, max_blocks=max(2, max_blocks))
    ruled = [rng.random() < 0.5 for _ in blocks]
    marks: dict[int, str] = {}
    notes: list[tuple[str, str]] = []
    if rng.random() < _FOOTNOTE_P:
        paragraphs = [i for i, b in enumerate(blocks) if isinstance(b, Paragraph) and b.kind == "paragraph"]
        for n, i in enumerate(sorted(rng.sample(paragraphs, k=min(len(paragraphs), rng.randint(1, 2))))):
            mark = _SUPERSCRIPTS[n]
            marks[i] = mark
            notes.append((mark, vocab.zh_sentence(rng) if cjk else vocab.sentence(rng, max_words=14)))
    furniture = _running_items(rng, cjk)
    document = _document(layout, blocks, marks, notes, furniture, ruled)
    furniture_text = {item.kind: item.text for item in furniture}
    pdf, kept = renderer.print_page(document, layout.size)
    shown = [blocks[i] for i in kept]
    parts = []
    for i in kept:
        block = blocks[i]
        text = block.markdown()
        if i in marks:
            text += marks[i]
        parts.append(text)
    kept_marks = {marks[i] for i in kept if i in marks}
    parts += [f"{k} {t}" for k, t in notes if k in kept_marks]
    markdown = "\n\n".join(parts)
    stem = name or f"vector_{seed:010d}"
    comp = _TestView(shown, markdown, furniture_text, ctx)
    tests = make_tests(comp, random.Random(f"jocr-synth-vector-tests/{seed}"), f"{stem}.pdf", stem)
    dropped: list[dict[str, Any]] = []
    if validate:
        tests, dropped = validate_tests(tests, markdown)
    meta = {
        "vector_version": VECTOR_VERSION,
        "profile": "vector",
        "seed": seed,
        "name": stem,
        "paper": layout.paper,
        "width_pt": layout.size[0],
        "height_pt": layout.size[1],
        "columns": layout.columns,
        "body_pt": layout.body_pt,
        "font": layout.family,
        "language": "zh" if cjk else "en",
        "blocks": [getattr(b, "kind", type(b).__name__.lower()) for b in shown],
        "footnotes": len(kept_marks),
        "furniture": furniture_text,
        "tests_total": len(tests) + len(dropped),
        "tests_dropped": len(dropped),
    }
    return VectorPage(pdf=pdf, markdown=markdown, tests=tests, meta=meta, dropped_tests=dropped)


@dataclass
class _Placed:
    block: Any
    column: int = 0


@dataclass
class _Furniture:
    item: Any


@dataclass
class _Item:
    text: str
    kind: str


class _TestView:
    """What `jocr.synth.testgen.make_tests` reads of a composition: blocks, furniture, Markdown, context."""

    def __init__(self, blocks: list, markdown: str, furniture: dict[str, str], ctx: PageContext):
        # Figures are tested through their captions.
        self.blocks = [_Placed(b.caption if isinstance(b, Figure) else b) for b in blocks]
        self.furniture = [_Furniture(_Item(text, kind)) for kind, text in furniture.items()]
        self.markdown = markdown
        self.context = ctx
        self.image = _Size(1224, 1584)


@dataclass
class _Size:
    width: int
    height: int


def write_vector_dataset(
    outdir, pages: int, seed: int = 0, split: str = "train", progress=None, max_blocks: int = 60
) -> dict[str, Any]:
    """Write `pages` vector pages (seed offsets from `seed` in `split`) in the olmOCR-Bench layout of
    `jocr synth` (pdfs/, gt/, meta/, `vector_<split>.jsonl`, manifest.json); returns the manifest.

    The Markdown and tests are a pure function of the seed and of the layout Chromium computes (which blocks
    fit); the PDF bytes also carry Chromium's version and a creation date, so the manifest records digests of
    the Markdown and tests only."""
    import hashlib
    import json
    from pathlib import Path

    from jocr.synth.dataset import SPLIT_SIZE, global_seed

    if pages < 1:
        raise ValueError("pages must be at least 1")
    if seed + pages > SPLIT_SIZE:
        raise ValueError(
            f"seed offsets {seed}..{seed + pages - 1} run past the split's range [0, {SPLIT_SIZE})"
        )
    root = Path(outdir)
    for sub in ("pdfs", "gt", "meta"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    digests: dict[str, dict[str, str]] = {}
    n_tests = n_dropped = 0
    lines: list[str] = []
    with VectorRenderer() as renderer:
        for offset in range(seed, seed + pages):
            page = vector_page(global_seed(split, offset), renderer, max_blocks=max_blocks)
            name = page.meta["name"]
            markdown = (page.markdown + "\n").encode("utf-8")
            tests = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in page.tests)
            (root / "pdfs" / f"{name}.pdf").write_bytes(page.pdf)
            (root / "gt" / f"{name}_pg1_repeat1.md").write_bytes(markdown)
            meta = {**page.meta, "dropped_tests": page.dropped_tests}
            (root / "meta" / f"{name}.json").write_text(
                json.dumps(meta, ensure_ascii=False, sort_keys=True, indent=1) + "\n", encoding="utf-8"
            )
            lines.append(tests)
            n_tests += len(page.tests)
            n_dropped += len(page.dropped_tests)
            digests[name] = {
                "markdown": hashlib.sha256(markdown).hexdigest()[:16],
                "tests": hashlib.sha256(tests.encode("utf-8")).hexdigest()[:16],
            }
            if progress is not None:
                progress(name)
    (root / f"vector_{split}.jsonl").write_text("".join(lines), encoding="utf-8")
    manifest = {
        "vector_version": VECTOR_VERSION,
        "profile": "vector",
        "split": split,
        "seed_offsets": [seed, seed + pages - 1],
        "pages": pages,
        "max_blocks": max_blocks,
        "page_format": "pdf",
        "tests": n_tests,
        "tests_dropped": n_dropped,
        "digests": digests,
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest
