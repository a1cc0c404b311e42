"""A document page for the integrations outside jocr's pipeline (the exported Transformers model's `infer`,
the vLLM helpers), read as `jocr parse` reads it.

    page = read_page("paper.pdf", 3, "auto", config.anchor, tokenizer)   # 1-based page number
    ... one request per `page.anchors` entry (the anchor windows of an anchored page, else [None]):
        builder.page(page.image, anchor) -> prompt ids and views; the model answers ...
    markdown, boxes, finish = page_markdown(builder, page, texts, reasons)

The steps are jocr's own, in `jocr parse`'s order (jocr.pipeline.stream): the page rendered at 144 dpi
(`jocr.documents.pages`: pypdfium2), the anchoring decision and the anchor windows from its text layer
(`jocr.layout.page_read.decide_page`: only a model trained with anchors, only a usable layer), and the
answers joined with their run references (`@i`) resolved, page furniture left out and the text
post-processed (`jocr.layout.request.page_text`, `PageRequestBuilder.markdown`). pypdfium2 is imported
only when a PDF is opened, so an exported model reads images without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from jocr.config import AnchorConfig
from jocr.documents.pages import LoadOptions, open_source, sniff_type
from jocr.layout.page_read import PageRead, decide_page, tables_markdown
from jocr.layout.request import PageRequestBuilder, page_finish_reason, page_text, page_tree
from jocr.lines.anchor import PageAnchor, normalise_anchor_mode


@dataclass
class DocumentPage:
    """A rendered page and its anchoring decision (`anchor.to_dict()` says what happened and why)."""

    image: Image.Image
    anchor: PageAnchor
    source: str  # the input's name, for messages
    lines: list | None = None  # an anchored page's text-layer lines (fonts the page's tree reads, as parse)
    formulas: list = field(default_factory=list)  # its display formulas (jocr.layout.formulas), as parse
    read: PageRead | None = None  # the one read of a PDF page (`jocr.layout.page_read`): its tables

    @property
    def anchors(self) -> list[str | None]:
        """One entry per request the page needs: its anchor windows' texts, or [None] (the image alone)."""
        return self.anchor.request_anchors


def is_pdf(file: Any) -> bool:
    """Whether `file` (a path or bytes; a PIL image is not) holds a PDF, by its content."""
    if isinstance(file, bytes | bytearray | memoryview):
        return sniff_type(bytes(file[:1024])) == "pdf"
    if isinstance(file, str | Path) and Path(file).is_file():
        with open(file, "rb") as fh:
            return sniff_type(fh.read(1024)) == "pdf"
    return False


def read_page(
    file: Any,
    page: int = 1,
    anchor: str | bool | None = "auto",
    anchor_config: AnchorConfig | None = None,
    tokenizer=None,
    password: str | None = None,
) -> DocumentPage:
    """Page `page` (1-based) of a PDF or image file (path or bytes), rendered, with its anchoring decision.

    anchor: "auto" (a model trained with anchors, `anchor_config.version` > 0, reads a PDF page with a usable
    text layer with that layer in its prompt), "on" or "off", as `jocr parse --anchor`. `tokenizer` (a
    `jocr.tokenizer.Tokenizer`) counts the anchor windows' tokens. Bad input raises ValueError (one line)."""
    from jocr.documents.pages import DocumentError

    config = anchor_config or AnchorConfig()
    mode = normalise_anchor_mode(anchor)
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise ValueError(f"page must be a positive integer (1-based), not {page!r}")
    try:
        options = LoadOptions(password=password)
        with open_source(file, options) as source:
            if page > source.num_pages:
                raise ValueError(
                    f"{source.name}: page {page} is out of range: the document has {source.num_pages} page(s)"
                )
            image = source.render(page - 1)
            # no image: the exported models read a page's text layer, never OCR
            decision, read = decide_page(
                source, page - 1, None, mode, config.version, tokenizer, config.max_tokens
            )
            name = source.name
    except DocumentError as exc:
        raise ValueError(str(exc)) from None
    return DocumentPage(image, decision, name, decision.tree_lines, decision.formulas, read)


def page_markdown(
    builder: PageRequestBuilder,
    page: DocumentPage,
    texts: Sequence[str],
    reasons: Sequence[str],
) -> tuple[str, list, str]:
    """(Markdown, grounding boxes in pixels, finish reason) of a page from its requests' decoded answers
    (`texts`, one per `page.anchors` entry, in order) and their finish reasons, as `jocr parse` writes it."""
    if len(texts) != len(page.anchors) or len(reasons) != len(texts):
        counts = f"{len(texts)} answers and {len(reasons)} finish reasons"
        raise ValueError(f"{counts} for a page of {len(page.anchors)} request(s)")
    finish = page_finish_reason(list(reasons))
    text = page_text(texts, page.anchor.texts, reasons, page.lines, page.formulas)
    markdown, boxes = builder.markdown(text, page.image.size, finish)
    if page.lines is not None:  # the table pass of jocr parse (jocr.layout.page_read.tables_markdown)
        size = page.image.size
        tree = page_tree(texts, page.anchor.texts, reasons, page.lines, size, formulas=page.formulas)
        markdown = tables_markdown(tree, markdown, page.read)
    return markdown, boxes, finish
