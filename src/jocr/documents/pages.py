"""Inputs -> page images: PDFs (pypdfium2), images (PNG, JPEG, TIFF incl. multi-page, WebP, GIF, BMP),
folders, globs, raw bytes and http(s) URLs (through `jocr.documents.fetch`).

Pages are rendered lazily, one at a time, so a 500-page PDF never holds more than the pages in flight.
Every failure is a `DocumentError` whose message is one line naming the input.

`open_source` is the one way in: it tells an input's type from its content and opens it as a `PageSource`
(source.py: the contract), a PDF's (pdf.py) or an image's (here). Which inputs and pages a run reads is
inputs.py's (`expand_inputs`, `select_pages`); their names are importable from here too.
"""

from __future__ import annotations

import io
import os
import stat
import warnings
from pathlib import Path

from PIL import Image, ImageOps

from jocr.documents.inputs import (
    DOCUMENT_SUFFIXES,
    IMAGE_SUFFIXES,
    expand_inputs,
    is_url,
    parse_page_ranges,
    select_pages,
)
from jocr.documents.pdf import PdfSource
from jocr.documents.preprocess import to_rgb
from jocr.documents.source import (
    DEFAULT_DPI,
    DocumentError,
    LoadOptions,
    PageSource,
    PdfReadError,
)
from jocr.errors import one_line

# The names callers import from here, wherever they are defined.
__all__ = [
    "DEFAULT_DPI",
    "DOCUMENT_SUFFIXES",
    "IMAGE_SUFFIXES",
    "DocumentError",
    "ImageSource",
    "LoadOptions",
    "PILSource",
    "PageSource",
    "PdfReadError",
    "PdfSource",
    "expand_inputs",
    "is_url",
    "open_source",
    "parse_page_ranges",
    "select_pages",
    "sniff_type",
]


def sniff_type(head: bytes) -> str | None:
    """File type from magic bytes: "pdf", "png", "jpeg", "tiff", "webp", "gif", "bmp" or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:2] == b"BM":
        return "bmp"
    # PDF readers accept the header anywhere in the first 1024 bytes.
    if b"%PDF-" in head[:1024]:
        return "pdf"
    return None


def _describe(head: bytes) -> str:
    """A short guess at what an unsupported input is, for the error message."""
    if head.startswith(b"PK\x03\x04"):
        return "a ZIP container (e.g. DOCX/XLSX/EPUB)"
    if head.lstrip().lower().startswith((b"<!doctype html", b"<html")):
        return "HTML"
    try:
        head[:512].decode("utf-8")
        return "text"
    except UnicodeDecodeError:
        return "binary data"


class ImageSource(PageSource):
    kind = "image"

    def __init__(self, name: str, fp, options: LoadOptions, image_type: str):
        self.name = name
        self.options = options
        self._fp = fp
        try:
            with warnings.catch_warnings():
                # Our own pixel limit below replaces PIL's warning; its hard error is caught as a bomb.
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                self._image = Image.open(fp)
        except Image.DecompressionBombError:
            raise DocumentError(f"{name}: image is over the pixel limit (decompression bomb?)") from None
        except Exception as exc:  # PIL raises many types for broken headers
            raise DocumentError(
                f"{name}: cannot decode {image_type.upper()} image ({one_line(exc)})"
            ) from None
        width, height = self._image.size
        if width * height > options.max_pixels:
            self._image.close()
            raise DocumentError(
                f"{name}: image is {width}x{height} = {width * height:,} pixels, over the pixel limit of "
                f"{options.max_pixels:,} (decompression bomb?)"
            )
        # Only TIFF frames are pages; the frames of an animated GIF/WebP are not.
        self.num_pages = int(getattr(self._image, "n_frames", 1)) if image_type == "tiff" else 1

    def page_pixels(self, index: int) -> int:
        if index == 0 or self.num_pages == 1:
            width, height = self._image.size
            return width * height
        return self.options.max_pixels  # a later TIFF frame's size is known only once seeked to

    def render(self, index: int) -> Image.Image:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                if self.num_pages > 1:
                    self._image.seek(index)
                frame = self._image
                if frame.size[0] * frame.size[1] > self.options.max_pixels:
                    raise DocumentError(f"{self.name}: page {index + 1} is over the pixel limit")
                frame.load()
                # EXIF orientation (phone photos, scanners) is applied before anything else looks at it.
                image = ImageOps.exif_transpose(frame)
                return to_rgb(image)
        except DocumentError:
            raise
        except Image.DecompressionBombError:
            raise DocumentError(f"{self.name}: image is over the pixel limit (decompression bomb?)") from None
        except Exception as exc:
            raise DocumentError(f"{self.name}: cannot decode image ({one_line(exc)})") from None

    def close(self) -> None:
        self._image.close()
        if hasattr(self._fp, "close"):
            self._fp.close()


class PILSource(PageSource):
    """An already decoded image (API and server callers)."""

    kind = "image"
    num_pages = 1

    def __init__(self, name: str, image: Image.Image, options: LoadOptions):
        self.name = name
        width, height = image.size
        if width * height > options.max_pixels:
            raise DocumentError(f"{name}: image is {width}x{height}, over the pixel limit")
        if width < 1 or height < 1:
            raise DocumentError(f"{name}: empty image")
        self._image = image

    def render(self, index: int) -> Image.Image:
        return to_rgb(ImageOps.exif_transpose(self._image))

    def page_pixels(self, index: int) -> int:
        width, height = self._image.size
        return width * height


def open_source(
    item: str | os.PathLike | bytes | Image.Image, options: LoadOptions | None = None, name: str | None = None
) -> PageSource:
    """Open a path, URL, raw bytes or PIL image as a `PageSource` (type from content, not the file name)."""
    options = options or LoadOptions()
    if isinstance(item, Image.Image):
        return PILSource(name or "<image>", item, options)
    if isinstance(item, bytes | bytearray | memoryview):
        data = bytes(item)
        return _open_bytes(data, name or "<bytes>", options)
    if is_url(item):
        from jocr.documents.fetch import FetchError, FetchLimits, fetch_url

        label = name or str(item)
        try:
            fetched = fetch_url(str(item), limits=options.fetch_limits or FetchLimits())
        except FetchError as exc:
            raise DocumentError(f"{label}: {one_line(exc)}") from None
        if len(fetched.data) > options.max_bytes:
            raise DocumentError(f"{label}: download is over {options.max_bytes:,} bytes")
        if sniff_type(fetched.data[:1024]) is None and "html" in (fetched.content_type or "").lower():
            raise DocumentError(f"{label}: URL returned an HTML page, not a PDF or image")
        return _open_bytes(fetched.data, label, options)
    path = Path(item)
    label = name or str(item)
    if not path.exists():
        raise DocumentError(f"{label}: no such file")
    if path.is_dir():
        raise DocumentError(f"{label}: is a directory")
    try:
        # Opened without blocking and checked on the open file: a FIFO (or a device) named as an input would
        # otherwise block the open, or the read, forever.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise DocumentError(f"{label}: not a regular file (a FIFO, device or socket?)")
            size = info.st_size
            head = fh.read(1024)
    except OSError as exc:
        raise DocumentError(f"{label}: cannot read ({exc.strerror or exc})") from None
    if size == 0:
        raise DocumentError(f"{label}: empty file (0 bytes)")
    kind = sniff_type(head)
    if kind is None:
        raise DocumentError(f"{label}: unsupported file type ({_describe(head)}); expected a PDF or an image")
    if kind == "pdf":
        return PdfSource(label, str(path), options)
    try:
        fp = open(path, "rb")  # noqa: SIM115 - owned by the source, closed in close()
    except OSError as exc:
        raise DocumentError(f"{label}: cannot read ({exc.strerror or exc})") from None
    return ImageSource(label, fp, options, kind)


def _open_bytes(data: bytes, label: str, options: LoadOptions) -> PageSource:
    if not data:
        raise DocumentError(f"{label}: empty input (0 bytes)")
    if len(data) > options.max_bytes:
        raise DocumentError(f"{label}: input is over {options.max_bytes:,} bytes")
    kind = sniff_type(data[:1024])
    if kind is None:
        raise DocumentError(
            f"{label}: unsupported file type ({_describe(data[:1024])}); expected a PDF or an image"
        )
    if kind == "pdf":
        return PdfSource(label, data, options)
    return ImageSource(label, io.BytesIO(data), options, kind)
