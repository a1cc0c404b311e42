"""What parsing gives back: one `PageResult` per page and a `Document` per input."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jocr.layout.figures import Figure
from jocr.layout.postprocess import PAGE_SPLIT, Box, join_pages
from jocr.layout.render import document_html
from jocr.layout.tree import Block, PageTree
from jocr.lines.anchor import PageAnchor

_NO_ANCHOR = PageAnchor()  # a page whose layer was not read (an image, --anchor off, an image-only model)


@dataclass
class PageResult:
    """One parsed page. `page` is 1-based; boxes are in pixels of the rendered page image."""

    page: int
    markdown: str = ""
    boxes: list[Box] = field(default_factory=list)
    num_tokens: int = 0
    finish_reason: str | None = None
    width: int = 0
    height: int = 0
    image_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    raw: str = ""
    error: str | None = None
    prompt_tokens: int = 0  # the request's prompt length (image placeholders included)
    stats: Any = None  # the engine's RequestStats for the page (not serialised)
    anchor: PageAnchor | None = None  # whether the prompt carried the page's text layer, and why (not)
    tree: PageTree | None = None  # the page's document tree, whose Markdown `markdown` is (docs/layout.md)
    figures: list[Figure] = field(default_factory=list)  # figures cut out of the page (`figures=`)
    figure_notes: list[str] = field(default_factory=list)  # figure regions dropped, and why

    @property
    def blocks(self) -> list[Block]:
        """The page's blocks in reading order, furniture included (marked), from its document tree."""
        return self.tree.blocks if self.tree is not None else []

    def to_dict(self) -> dict:
        return {
            "page": self.page,
            "markdown": self.markdown,
            "boxes": [b.to_dict() for b in self.boxes],
            "tokens": self.num_tokens,
            "image_tokens": self.image_tokens,
            "finish_reason": self.finish_reason,
            "width": self.width,
            "height": self.height,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "anchor": (self.anchor or _NO_ANCHOR).to_dict(),
            "error": self.error,
            "tree": self.tree.to_dict() if self.tree is not None else None,
            **({"figures": [f.to_dict() for f in self.figures]} if self.figures else {}),
            **({"figure_notes": list(self.figure_notes)} if self.figure_notes else {}),
        }


@dataclass
class Document:
    """A parsed input: its pages in the order asked for, joined Markdown, and metadata."""

    source: str
    pages: list[PageResult] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    page_marker: str | None = PAGE_SPLIT

    @property
    def ok(self) -> bool:
        return self.error is None and all(p.error is None for p in self.pages)

    @property
    def markdown(self) -> str:
        return join_pages([p.markdown for p in self.pages], self.page_marker)

    @property
    def html(self) -> str:
        """The document as HTML, rendered from its pages' trees (`jocr.layout.render`)."""
        return document_html([p.tree for p in self.pages if p.tree is not None], title=self.source)

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "metadata": self.metadata,
            "error": self.error,
            "markdown": self.markdown,
            "pages": [p.to_dict() for p in self.pages],
        }
