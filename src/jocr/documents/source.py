"""The contract every opened input keeps: `PageSource` (pages rendered on demand, a PDF page read in one
pass), how inputs are opened (`LoadOptions`) and the one error an input gives (`DocumentError`, one line
naming the input). PDFs (pdf.py) and images (pages.py) implement it; `jocr.documents.pages.open_source`
opens any input as one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from PIL import Image

T = TypeVar("T")

# DeepSeek-OCR renders PDF pages at 144 dpi (run_dpsk_ocr_pdf.py: zoom = 144 / 72).
DEFAULT_DPI = 144.0


class DocumentError(Exception):
    """An input that cannot be read; the message is one line and names the input."""


@dataclass
class LoadOptions:
    """How inputs are opened and pages rendered."""

    dpi: float = DEFAULT_DPI
    # Render PDF pages so that their longest side has this many pixels (overrides dpi when set).
    longest_side: int | None = None
    password: str | None = None
    # Decoded pixels allowed per page image: a larger image is refused (decompression-bomb guard); a PDF page
    # that would render larger is rendered at a lower scale instead.
    max_pixels: int = 90_000_000
    # Bytes read into memory for one input given as bytes or URL.
    max_bytes: int = 512 * 1024 * 1024
    # Limits for http(s) inputs (a `jocr.documents.fetch.FetchLimits`); None = the fetcher's defaults.
    fetch_limits: object | None = None
    # A PDF page's text layer read in a process of its own, killed after this many seconds (verdict
    # "too_large"), so a page whose text is slow to read never holds the PDFium lock every other document
    # waits for (the server); None reads it in this process, under the lock.
    text_layer_timeout_s: float | None = None


class PdfReadError(Exception):
    """A PDF page read in a process of its own that gave no result: `verdict` "too_large" (over the time
    limit) or "error", `note` one line saying why."""

    def __init__(self, verdict: str, note: str):
        super().__init__(note)
        self.verdict, self.note = verdict, note


class PageSource:
    """One opened input: `num_pages` pages rendered on demand with `render(index)` (0-based)."""

    name: str
    kind: str
    num_pages: int

    def render(self, index: int) -> Image.Image:
        raise NotImplementedError

    def page_pixels(self, index: int) -> int:
        """Pixels `render(index)` will decode, known before rendering (a server's memory budget); sources
        that cannot tell answer their pixel limit."""
        return getattr(self, "options", LoadOptions()).max_pixels

    @property
    def title(self) -> str:
        """The document's own title (PDF metadata), or "" when it has none."""
        return ""

    def text_layer(self, index: int):
        """The page's text layer as `jocr.lines.types.PageLines` (never raises: problems are its
        verdict), or None for inputs that have no text layer (images)."""
        return None

    def read_pdf_page(self, index: int, reader: Callable[[Any], T], isolate: bool = False) -> T | None:
        """`reader(page)` over page `index` as a `pypdfium2.PdfPage` (PDFium's lock held, the page closed
        after), or None for inputs that are not PDFs and pages that cannot be opened. The page pipeline
        reads each PDF page once this way (`jocr.pipeline.page_read`: its text layer, glyphs, rules and
        drawing objects in one pass). `isolate`: with `LoadOptions.text_layer_timeout_s` set, `reader` runs
        in a process of its own, killed after that many seconds (`PdfReadError` "too_large"), so a slow
        page never holds the PDFium lock every other document waits for; `reader` and its result must
        pickle (a module-level function, or a `functools.partial` of one)."""
        return None

    def close(self) -> None:
        pass

    def __enter__(self) -> PageSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
