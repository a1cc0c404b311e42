"""One read of a PDF page and one decision per page, for every way a page is read (`jocr parse`, `jocr.parse`
and the server through `jocr.pipeline.stream`, `jocr batch` through `jocr.bulk.stages`, the exported
models through `jocr.integrations.document_page`).

- `read_pdf_objects(page, wants)`: the one pass over a PDF page (PDFium's lock taken once, one text page
  shared by every reader of characters): its text layer (`jocr.lines.textlayer`), and, where the layer is
  usable, the formula reader's glyphs and rules (`jocr.layout.formula_glyphs`) and the table reader's
  pieces and ruling lines (`jocr.layout.tables_sources`); with `wants.figures`, its drawing objects as
  figure candidates (`jocr.layout.figure_regions`). The result, a `PageRead`, is what every later step of
  the page takes: nothing reopens the PDF.
- `decide_page(...)`: the page's anchoring decision (`jocr.lines.anchor.page_anchor`) from that read, with
  the display formulas found on an anchored page.
- `tables_markdown(tree, markdown, read)`: the table pass over a finished page from the read's pieces.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import asdict, dataclass, field

from jocr.documents.pages import PdfReadError
from jocr.layout.figure_regions import Region
from jocr.layout.formula_glyphs import Glyph, Rule
from jocr.layout.tables import Piece
from jocr.layout.tables import Rule as TableRule
from jocr.lines.anchor import PageAnchor, normalise_anchor_mode, page_anchor_or_note, reads_lines
from jocr.lines.textlayer import empty_layer
from jocr.lines.types import ERROR, TEXTLAYER, PageLines

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReadWants:
    """What one pass over a PDF page reads: its text layer (`lines`; with a usable layer also the glyphs,
    pieces and rules the formula and table readers take) and its drawing objects (`figures`)."""

    lines: bool = True
    figures: bool = False


@dataclass
class PageRead:
    """Everything the later steps of a page take from one pass over a PDF page; boxes in points, top-left
    origin, of the page as rendered. None: not read (not wanted, or the layer is not usable)."""

    width: float = 0.0
    height: float = 0.0
    layer: PageLines | None = None  # the text layer: the anchor's runs, an anchored tree's boxes
    glyphs: list[Glyph] = field(default_factory=list)  # formula glyphs (a usable layer's page only)
    glyph_rules: list[Rule] = field(default_factory=list)  # thin horizontal paths: fraction bars, overbars
    pieces: list[Piece] | None = None  # the table reader's runs of words (a usable layer's page only)
    table_rules: list[TableRule] | None = None  # ruling lines for the table reader
    regions: list[Region] | None = None  # drawing objects as figure candidates (`wants.figures`)
    region_note: str | None = None  # drawing objects left out of `regions`, and why
    seconds: float = 0.0  # the pass's own time

    @property
    def region_size(self) -> tuple[float, float] | None:
        """The page size in points, the unit of `regions` (None when they were not read)."""
        return None if self.regions is None else (self.width, self.height)

    def state(self) -> dict:
        """What a page's finishing steps take (tables, figures) as plain data, for a page finished in
        another process (`jocr batch`); `from_state` rebuilds it. The layer and glyphs are left out:
        the page's decision carries what it keeps of them."""
        regions = None
        if self.regions is not None:
            regions = [{k: v for k, v in asdict(r).items() if k != "paths"} for r in self.regions]
        return {
            "width": self.width,
            "height": self.height,
            "pieces": None if self.pieces is None else [asdict(p) for p in self.pieces],
            "table_rules": None if self.table_rules is None else [asdict(r) for r in self.table_rules],
            "regions": regions,
            "region_note": self.region_note,
        }

    @classmethod
    def from_state(cls, state: dict) -> PageRead:
        pieces, rules, regions = state.get("pieces"), state.get("table_rules"), state.get("regions")
        return cls(
            width=float(state.get("width") or 0.0),
            height=float(state.get("height") or 0.0),
            pieces=None if pieces is None else [Piece(p["text"], tuple(p["box"]), p["bold"]) for p in pieces],
            table_rules=None if rules is None else [TableRule(**r) for r in rules],
            regions=None if regions is None else [Region(**{**r, "bbox": tuple(r["bbox"])}) for r in regions],
            region_note=state.get("region_note"),
        )


def read_pdf_objects(page, wants: ReadWants = ReadWants()) -> PageRead:
    """The one pass over a `pypdfium2.PdfPage` (the caller holds the PDFium lock; `PageSource.read_pdf_page`
    does). Never raises: a reader that fails leaves its part empty (the text layer says why in its
    verdict), and the page goes on without it."""
    from jocr.layout.figure_regions import pdf_regions
    from jocr.layout.formula_glyphs import page_glyphs
    from jocr.layout.tables_sources import pdf_page_pieces, pdf_page_rules
    from jocr.lines.textlayer import SharedTextPage, read_page

    start = time.perf_counter()
    read = PageRead()
    try:
        read.width, read.height = (float(v) for v in page.get_size())
    except Exception:  # a page PDFium cannot size: the text layer's verdict says so
        pass
    textpage = SharedTextPage(page)
    try:
        if wants.lines:
            read.layer = read_page(page, textpage=textpage)
            if read.layer.usable:
                read.glyphs, read.glyph_rules = page_glyphs(page, textpage=textpage)
                try:
                    read.pieces = pdf_page_pieces(page, textpage.get())
                    read.table_rules = pdf_page_rules(page)
                except Exception:  # a page PDFium fails on: its tables stay as the page's tree has them
                    read.pieces = read.table_rules = None
        if wants.figures:
            read.regions, read.region_note, _ = pdf_regions(page)
    finally:
        textpage.close()
    read.seconds = time.perf_counter() - start
    return read


def read_source_page(source, index: int, wants: ReadWants) -> PageRead | None:
    """`read_pdf_objects` over page `index` of `source` (a `jocr.documents.pages.PageSource`), in a process
    of its own where the source's options say so (the server: `LoadOptions.text_layer_timeout_s`); None
    for a source that is not a PDF. A page that cannot be opened or read in time gives a read whose text
    layer says why."""
    if getattr(source, "kind", "") != "pdf":
        return None
    reader = functools.partial(read_pdf_objects, wants=wants)
    try:
        read = source.read_pdf_page(index, reader, isolate=True)
    except PdfReadError as exc:
        return PageRead(layer=empty_layer(exc.verdict, exc.note) if wants.lines else None)
    if read is None:  # the renderer reports the page's own error; here it is just no layer
        return PageRead(layer=empty_layer(ERROR, f"cannot open page {index + 1}") if wants.lines else None)
    return read


def decide_page(
    source,
    index: int,
    image,
    mode: str,
    trained_version: int,
    tokenizer,
    max_tokens: int,
    ocr: str = "auto",
    figures: bool = False,
    ocr_anchors: bool = False,
    contents_alone: bool = False,
) -> tuple[PageAnchor, PageRead | None]:
    """Page `index` of `source` read once (`read_source_page`: its lines when `mode` reads them, its drawing
    objects when `figures`) and its anchoring decision (`page_anchor_or_note`: `image`, the page as
    rendered, is what OCR reads), an anchored text-layer page's decision carrying the display formulas
    found on it. `ocr_anchors`: the model reads OCR'd pages' anchors (`jocr.config.AnchorConfig.ocr`).
    `contents_alone`: a text-layer page that is a table of contents is read from its lines alone under
    anchor "auto" (`contents_page`), for callers that write such pages (`PageAnchor.alone`). The one
    sequence `jocr parse`, `jocr batch` and the exported models follow."""
    lines = reads_lines(mode, trained_version)
    read = (
        read_source_page(source, index, ReadWants(lines=lines, figures=figures)) if lines or figures else None
    )
    decision = page_anchor_or_note(
        source,
        index,
        mode,
        trained_version,
        tokenizer,
        max_tokens,
        image=image,
        ocr=ocr,
        layer=None if read is None else read.layer,
        ocr_anchors=ocr_anchors,
    )
    if contents_alone and normalise_anchor_mode(mode) == "auto":
        contents_page(decision)
    if decision.tree_lines is not None and decision.source == TEXTLAYER and read is not None:
        decision.formulas = page_formulas(read, index)
    return decision, read


def contents_page(decision: PageAnchor) -> None:
    """An anchored text-layer page whose lines are a table of contents (`jocr.layout.contents`) is read
    from its lines alone (`PageAnchor.alone`): the rules write its entries as one nested list, where the
    model wrote dot leaders, split numbers from their titles and ran out of tokens on such pages."""
    from jocr.layout.contents import is_contents_page

    lines = decision.page_lines
    if not decision.anchored or decision.alone or decision.source != TEXTLAYER or lines is None:
        return
    if is_contents_page(lines.lines, lines.width, lines.height):
        decision.alone = True
        decision.note = "; ".join(n for n in (decision.note, "a table of contents, read from its lines") if n)


def page_formulas(read: PageRead, index: int) -> list:
    """The display formulas of a read page and its prose lines with inline formulas written `$...$`
    (`jocr.layout.formulas.find_formulas` over its glyphs, rules and text-layer lines); [] when there are
    none or finding them fails (logged: the page keeps its text without formula blocks)."""
    from jocr.layout.formulas import find_formulas

    layer = read.layer
    if layer is None or not layer.usable or not read.glyphs:
        return []
    try:
        return find_formulas(read.glyphs, read.glyph_rules, layer.lines, layer.width, inline=True)
    except Exception as exc:  # a formula finder's fault must not cost the page its text
        log.warning("page %d: formulas not read (%s)", index + 1, " ".join(str(exc).split())[:200] or exc)
        return []


def tables_markdown(tree, markdown: str, read: PageRead | None, image=None, lines=None) -> str:
    """A finished page's Markdown after its table pass (`jocr.layout.tables_pages.page_with_tables`; the
    tree is changed in place): a PDF page's table blocks read again from the read's pieces and rules (the
    blocks above a table that repeat the header rows the pass took in then go,
    `jocr.layout.table_rows.headers_taken_in`), or the tables of a page read from its pixels (`image`,
    the page as rendered) found in the image, its OCR `lines` (the tree's source lines) lending their
    word boxes."""
    from jocr.layout.table_rows import headers_taken_in
    from jocr.layout.tables_pages import page_with_tables

    if read is None:
        return page_with_tables(tree, markdown, image=image, lines=lines)
    before = {id(b): b.html or b.markdown for b in tree.blocks if b.type == "table"} if tree else {}
    out = page_with_tables(tree, markdown, read.pieces, read.table_rules, image, lines)
    return _without_blocks(out, headers_taken_in(tree, before), tree) if before else out


def _without_blocks(markdown: str, gone: list, tree) -> str:
    """`markdown` without the Markdown of the blocks `gone` from `tree` (each as a block of its own,
    between blank lines), or the tree's Markdown again where one is not found so."""
    from jocr.layout.render import page_markdown, replace_block

    for block in gone:
        markdown = replace_block(markdown, block.markdown, "")
        if markdown is None:
            return page_markdown(tree)
    return markdown
