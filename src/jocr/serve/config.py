"""Server settings: one dataclass, every limit documented in docs/serving.md."""

from __future__ import annotations

from dataclasses import dataclass, field

from jocr.documents.browser import BrowserConfig
from jocr.documents.fetch import FetchLimits


@dataclass
class ServeConfig:
    """Settings of `jocr serve`.

    api_keys: Bearer keys; empty means no authentication. max_batch: rows the engine decodes together.
    max_queue: requests allowed to wait beyond the running batch; past `max_batch + max_queue` in flight the
    server answers 429 with Retry-After instead of letting requests time out.
    max_body_bytes: request-body cap (base64 images and PDFs arrive in the body).
    max_image_pixels: cap on any decoded image or rendered page (width * height), checked from the image
    header before decoding, so a decompression bomb is refused without being decoded.
    max_request_pixels: decoded pixels (all images and pages together) one request may hold; more is a 413.
    max_server_pixels: decoded pixels all requests together may hold; past it a request gets 429. With
    max_server_bytes (request bodies buffered at once, likewise 429) this bounds memory by cost, whatever
    the bodies hold, where max_batch + max_queue only counts requests.
    max_images: images in one chat request. max_pages: pages in one Reader request without X-Page.
    max_tokens / default_max_tokens: hard cap and default for generated tokens per page.
    request_timeout_s: default and cap for X-Timeout (seconds) on Reader requests; the time limit of every
    other request too (its body, fetches, rendering and generation).
    header_timeout_s: a connection must send a complete request head within this many seconds of opening
    (or of its previous response); idle keep-alive connections close after keep_alive_s.
    text_layer_timeout_s: a PDF page's text layer (for its anchor) is read in a process of its own, killed
    after this many seconds, so no request's slow text layer holds the PDFium lock all others wait for.
    anchor: "auto", "on" or "off": whether a PDF page's text layer goes into its prompt, as in `jocr parse`
    (jocr.lines.anchor.page_anchor; chat requests with one image that is a PDF page, and the Reader).
    ocr: the OCR line source of a page asked a question (a chat question, a schema, a Reader question, a
    caption) that has no usable text layer, as `jocr ask --ocr` (jocr.lines.source.page_lines): "none"
    (default: a scan or photo is asked with its image alone), "auto", "rapidocr" or "tesseract". A page
    that is read, not asked, is never OCR'd.
    allowed_hosts: names (Host header) a browser may use for this server when it has no API keys, besides IP
    addresses, `localhost` and `host`; "*" accepts any (access.py `check_access`: DNS rebinding).
    fetch: limits of the URL fetcher (documents/fetch.py); `allow_private` there lets the server fetch from
    private addresses (off by default). browser: the web page renderer (Chromium; documents/browser.py),
    whose every request goes through the same fetcher and limits.
    """

    model_dir: str | None = None
    model_id: str = "jocr"
    host: str = "127.0.0.1"
    port: int = 8000
    api_keys: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    max_batch: int = 8
    max_queue: int = 64
    max_body_bytes: int = 64 * 1024 * 1024
    max_image_pixels: int = 40_000_000
    max_request_pixels: int = 80_000_000
    max_server_pixels: int = 240_000_000
    max_server_bytes: int = 256 * 1024 * 1024
    max_images: int = 8
    max_pages: int = 20
    max_tokens: int = 8192
    default_max_tokens: int = 4096
    request_timeout_s: float = 300.0
    header_timeout_s: float = 10.0
    keep_alive_s: int = 5
    preprocess_workers: int = 2
    retry_after_s: int = 1
    anchor: str = "auto"
    ocr: str = "none"
    text_layer_timeout_s: float = 10.0
    fetch: FetchLimits = field(default_factory=FetchLimits)
    browser: BrowserConfig = field(default_factory=BrowserConfig)
