"""The web page renderer's settings and errors (`BrowserConfig`, `BrowserError`), the paper sizes a page is
printed on, and `first_line`, the one-line form of an error the browser raised.
"""

from __future__ import annotations

from dataclasses import dataclass

from jocr.errors import one_line

BROWSER_ERROR_CHARS = 300  # Playwright's first lines name the page and the call: kept longer

# Paper sizes in inches (Playwright's `page.pdf` formats).
PAPER_INCHES = {
    "letter": (8.5, 11.0),
    "legal": (8.5, 14.0),
    "tabloid": (11.0, 17.0),
    "ledger": (17.0, 11.0),
    "a0": (33.1, 46.8),
    "a1": (23.4, 33.1),
    "a2": (16.54, 23.4),
    "a3": (11.7, 16.54),
    "a4": (8.27, 11.7),
    "a5": (5.83, 8.27),
    "a6": (4.13, 5.83),
}
_UNIT_INCHES = {"px": 1 / 96, "in": 1.0, "cm": 1 / 2.54, "mm": 1 / 25.4}


class BrowserError(Exception):
    """A page that could not be rendered; `str(exc)` is a one-line message fit for a user.

    `status` is an HTTP status a server may answer with: 413 over the byte budget, 429 all contexts busy,
    501 no Playwright or Chromium, 502 the page or browser failed, 503 Chromium did not start, 504 timeout.
    """

    def __init__(self, message: str, status: int = 502):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class BrowserConfig:
    """Settings of the web page renderer (docs/serving.md lists them with the other limits).

    executable: the Chromium binary (None: `chromium` on PATH, Debian's package). max_contexts: pages
    rendered at once; more are refused (429). timeout_s: wall time per page (load + settle + print), also
    capped by the caller's own deadline. settle_s: after the DOM is ready, how long to wait at most for the
    load event and then for the network to go idle (500 ms without requests); the page is captured as it
    stands when the wait ends. max_bytes / max_requests: budgets over all of a page's responses (the HTML
    included). max_print_pages: printed pages kept (the rest of a longer page is not printed).
    viewport: CSS pixels, for layout and `screenshot`. paper / margin: the printed page (Chromium's own
    print dialog defaults to about 1 cm margins; Playwright's to none). max_pageshot_height: `pageshot` is cut
    there.
    js_heap_mb: V8 old-space cap per renderer (a page over it crashes, answered 502). max_process_mb: the
    data-segment limit (RLIMIT_DATA) of every Chromium process on Linux, which bounds the memory V8's cap does
    not (typed arrays, canvases); 0 turns it off. max_pdf_bytes: a printed PDF over this is refused (413)
    while it is read from Chromium. sandbox: Chromium's own sandbox (needs a non-root user and user
    namespaces; Chromium refuses to start as root with it).
    """

    executable: str | None = None
    max_contexts: int = 4
    timeout_s: float = 30.0
    settle_s: float = 3.0
    max_bytes: int = 50 * 1024 * 1024
    max_requests: int = 300
    max_print_pages: int = 50
    viewport: tuple[int, int] = (1280, 1024)
    paper: str = "A4"
    margin: str = "1cm"
    max_pageshot_height: int = 16_384
    js_heap_mb: int = 512
    max_process_mb: int = 1024
    max_pdf_bytes: int = 64 * 1024 * 1024
    sandbox: bool = False
    launch_timeout_s: float = 60.0


def paper_inches(paper: str) -> tuple[float, float]:
    """(width, height) in inches of a paper format ("A4", "Letter", ...)."""
    try:
        return PAPER_INCHES[paper.lower()]
    except KeyError:
        raise ValueError(f"unknown paper format {paper!r}; one of {', '.join(PAPER_INCHES)}") from None


def length_inches(length: str | float) -> float:
    """A CSS length ("1cm", "10mm", "0.5in", "96px", or a number of pixels) in inches."""
    text = str(length).strip().lower()
    unit = text[-2:] if text[-2:] in _UNIT_INCHES else "px"
    number = text[:-2] if text[-2:] in _UNIT_INCHES else text
    return float(number) * _UNIT_INCHES[unit]


def first_line(exc: BaseException) -> str:
    """An error from Playwright or Chromium as one line (their messages run on with call logs)."""
    return one_line(exc, BROWSER_ERROR_CHARS)
