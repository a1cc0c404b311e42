"""Inputs -> page images: PDFs (pypdfium2), images (PNG, JPEG, TIFF incl. multi-page, WebP, GIF, BMP),
folders, globs, raw bytes and http(s) URLs (through `jocr.documents.fetch`).

Pages are rendered lazily, one at a time, so a 500-page PDF never holds more than the pages in flight.
Every failure is a `DocumentError` whose message is one line naming the input.
"""

from __future__ import annotations

import glob
import io
import math
import os
import re
import stat
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from PIL import Image, ImageOps

from jocr.documents.preprocess import to_rgb

T = TypeVar("T")

# DeepSeek-OCR renders PDF pages at 144 dpi (run_dpsk_ocr_pdf.py: zoom = 144 / 72).
DEFAULT_DPI = 144.0
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".gif", ".bmp")
DOCUMENT_SUFFIXES = (".pdf",) + IMAGE_SUFFIXES


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


# PDFium is not thread-safe (pypdfium2 docs): every call into it, across all documents, holds this lock, so
# sources may be used from several threads (e.g. the server's request threads).
_PDFIUM_LOCK = threading.RLock()


class PdfSource(PageSource):
    kind = "pdf"

    def __init__(self, name: str, data: str | bytes, options: LoadOptions):
        import pypdfium2 as pdfium

        self.name = name
        self.options = options
        self._data = data  # for a text layer read in another process
        with _PDFIUM_LOCK:
            try:
                # A path lets PDFium read the file on demand instead of holding it in memory.
                self._doc = pdfium.PdfDocument(data, password=options.password)
            except pdfium.PdfiumError as exc:
                raise DocumentError(self._load_error(exc)) from None
            self.num_pages = len(self._doc)
            if self.num_pages == 0:
                self._doc.close()
                raise DocumentError(f"{name}: PDF has no pages")

    def _load_error(self, exc) -> str:
        code = getattr(exc, "err_code", None)
        # PDFium FPDF_ERR_PASSWORD = 4, FPDF_ERR_SECURITY = 5, FPDF_ERR_FORMAT = 3, FPDF_ERR_FILE = 2.
        if code == 4:
            if self.options.password:
                return f"{self.name}: wrong password for encrypted PDF"
            return f"{self.name}: PDF is encrypted; pass its password with --password"
        if code == 5:
            return f"{self.name}: PDF uses an unsupported security handler"
        if code == 2:
            return f"{self.name}: cannot open file"
        return f"{self.name}: corrupt or unreadable PDF"

    def page_scale(self, width_pt: float, height_pt: float) -> float:
        if self.options.longest_side:
            scale = self.options.longest_side / max(width_pt, height_pt, 1e-6)
        else:
            scale = self.options.dpi / 72.0
        # Keep the bitmap within the pixel budget (huge page boxes exist, e.g. posters and maps).
        pixels = width_pt * height_pt * scale * scale
        if pixels > self.options.max_pixels:
            scale *= (self.options.max_pixels / pixels) ** 0.5
            # PDFium rounds the bitmap size up; shrink until the rounded size fits.
            while math.ceil(width_pt * scale) * math.ceil(height_pt * scale) > self.options.max_pixels:
                scale *= 0.995
        return scale

    def page_pixels(self, index: int) -> int:
        with _PDFIUM_LOCK:
            page = self._doc[index]
            try:
                width_pt, height_pt = page.get_size()
            finally:
                page.close()
        if width_pt <= 0 or height_pt <= 0:
            return 0
        scale = self.page_scale(width_pt, height_pt)
        return math.ceil(width_pt * scale) * math.ceil(height_pt * scale)

    def render(self, index: int) -> Image.Image:
        import pypdfium2 as pdfium

        try:
            with _PDFIUM_LOCK:
                page = self._doc[index]
                try:
                    width_pt, height_pt = page.get_size()
                    if width_pt <= 0 or height_pt <= 0:
                        raise DocumentError(f"{self.name}: page {index + 1} has an empty page box")
                    bitmap = page.render(scale=self.page_scale(width_pt, height_pt))
                    image = bitmap.to_pil().convert("RGB")
                    bitmap.close()
                finally:
                    page.close()
        except pdfium.PdfiumError as exc:
            raise DocumentError(f"{self.name}: cannot render page {index + 1} ({exc})") from None
        return image

    def text_layer(self, index: int):
        from jocr.lines.textlayer import ERROR, empty_layer, read_page

        if self.options.text_layer_timeout_s is not None:
            try:
                return self.read_pdf_page(index, read_page, isolate=True)
            except PdfReadError as exc:
                return empty_layer(exc.verdict, exc.note)
        with _PDFIUM_LOCK:
            try:
                page = self._doc[index]
            except Exception as exc:  # the renderer reports the page's own error; here it is just no layer
                return empty_layer(ERROR, f"cannot open page {index + 1} ({exc})")
            try:
                return read_page(page)
            finally:
                page.close()

    def read_pdf_page(self, index: int, reader: Callable[[Any], T], isolate: bool = False) -> T | None:
        if isolate and self.options.text_layer_timeout_s is not None:
            return _read_in_process(self._data, self.options, index, reader)
        with _PDFIUM_LOCK:
            try:
                page = self._doc[index]
            except Exception:  # the renderer reports the page's own error
                return None
            try:
                return reader(page)
            finally:
                page.close()

    @property
    def title(self) -> str:
        with _PDFIUM_LOCK:
            try:
                meta = self._doc.get_metadata_dict()
            except Exception:  # metadata is optional and sometimes malformed; a title is a nicety
                return ""
        return str(meta.get("Title") or "").strip()

    def close(self) -> None:
        with _PDFIUM_LOCK:
            self._doc.close()


def _read_worker(pipe, data, password, index, reader) -> None:
    """In a child process: `reader(page)` over page `index`, sent back through `pipe` (an error as its
    text)."""
    try:
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(data, password=password)
        try:
            page = doc[index]
            try:
                pipe.send(reader(page))
            finally:
                page.close()
        finally:
            doc.close()
    except Exception as exc:
        pipe.send(_ReadFailed(one_line(exc)))
    finally:
        pipe.close()


@dataclass
class _ReadFailed:
    """What `_read_worker` sends back when the read raised."""

    note: str


def _read_in_process(data, options: LoadOptions, index: int, reader: Callable[[Any], T]) -> T:
    """`reader(page)` over page `index` run by `_read_worker` in a fresh process (forkserver: started from
    a clean server process, not forked from this threaded one), which is killed after
    `options.text_layer_timeout_s`; `PdfReadError` when it gives no result."""
    import multiprocessing

    from jocr.lines.types import ERROR, TOO_LARGE

    timeout = options.text_layer_timeout_s
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # Imported once by the fork server, so each worker forked from it starts in milliseconds.
        module = getattr(getattr(reader, "func", reader), "__module__", None) or "jocr.lines.textlayer"
        context.set_forkserver_preload(["jocr.documents.pages", "jocr.lines.textlayer", module, "pypdfium2"])
    else:
        context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=_read_worker, args=(send, data, options.password, index, reader), daemon=True
    )
    try:
        process.start()
        send.close()
        if not receive.poll(timeout):
            raise PdfReadError(TOO_LARGE, f"reading the text took over {timeout:g} s")
        got = receive.recv()
    except (OSError, EOFError) as exc:  # the worker died (killed for memory, say) or could not start
        raise PdfReadError(ERROR, f"the text layer could not be read ({one_line(exc)})") from None
    finally:
        receive.close()
        if process.is_alive():
            process.kill()
        process.join(5)
    if isinstance(got, _ReadFailed):
        raise PdfReadError(ERROR, f"cannot read the text ({got.note})")
    return got


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


def one_line(exc: BaseException) -> str:
    """An error as one short line (errors are shown one per line)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


def is_url(item) -> bool:
    return isinstance(item, str) and re.match(r"^https?://", item, re.IGNORECASE) is not None


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


def expand_inputs(items: Iterable[str | os.PathLike]) -> list[str]:
    """Folders -> their PDFs and images (recursive, sorted); globs -> matches (sorted); URLs kept as is.

    An item that is neither an existing path, a URL nor a glob with matches is kept, so that opening it
    reports "no such file" for that input alone.
    """
    out: list[str] = []
    for item in items:
        text = str(item)
        if is_url(text):
            out.append(text)
            continue
        path = Path(text)
        if path.is_dir():
            found = sorted(
                str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
            )
            if not found:
                raise DocumentError(f"{text}: folder has no PDF or image files")
            out.extend(found)
        elif not path.exists() and glob.has_magic(text):
            found = sorted(p for p in _glob(text) if os.path.isfile(p))
            if not found:
                raise DocumentError(f"{text}: no files match")
            out.extend(found)
        else:
            out.append(text)
    return out


def _glob(pattern: str) -> list[str]:
    """The paths matching a glob pattern (`**` any folders deep), as `glob.glob(recursive=True)` gives them
    but never following a symbolic link to a folder while recursing (`glob.glob` does, so a link to a parent
    folder recurses until the path is too long, and two such links take exponential time). Names starting
    with a dot match only a pattern part starting with one, as in `glob`."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    base = Path(*parts[:fixed]) if fixed else Path(".")
    rest = parts[fixed:]
    if not rest:
        return [pattern] if os.path.lexists(pattern) else []
    shown_dots = any(part.startswith(".") for part in rest)
    found = []
    # pathlib's `**` does not descend into linked folders (Python 3.11+).
    for match in base.glob(str(Path(*rest))):
        if not shown_dots and any(part.startswith(".") for part in match.relative_to(base).parts):
            continue
        found.append(str(match))
    return found


_RANGE = re.compile(r"^\s*(\d+)\s*(?:(-)\s*(\d+)?\s*)?$")


def parse_page_ranges(spec: str) -> list[tuple[int, int | None]]:
    """Page ranges: "1-3,7,10-" -> [(1, 3), (7, 7), (10, None)] (1-based, inclusive; None = to the end)."""
    ranges: list[tuple[int, int | None]] = []
    for part in str(spec).split(","):
        if not part.strip():
            continue
        m = _RANGE.match(part)
        if not m:
            raise ValueError(f"bad page range {part.strip()!r} (use e.g. 1-3,7,10-)")
        start = int(m.group(1))
        end: int | None = start if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
        if start < 1 or (end is not None and end < start):
            raise ValueError(f"bad page range {part.strip()!r} (pages count from 1)")
        ranges.append((start, end))
    if not ranges:
        raise ValueError("empty page range")
    return ranges


def select_pages(pages: str | Sequence[int] | None, num_pages: int, name: str) -> list[int]:
    """0-based page indices for a 1-based selection (a range string or page numbers); None = all pages.

    A page past the end raises DocumentError naming the input; the order given is kept, duplicates dropped.
    """
    if pages is None:
        return list(range(num_pages))
    if isinstance(pages, str):
        try:
            ranges = parse_page_ranges(pages)
        except ValueError as exc:
            raise DocumentError(f"{name}: {exc}") from None
    else:
        ranges = [(int(p), int(p)) for p in pages]
    selected: list[int] = []
    seen: set[int] = set()
    for start, end in ranges:
        if start < 1:
            raise DocumentError(f"{name}: page {start} out of range (pages count from 1)")
        last = num_pages if end is None else end
        if start > num_pages or last > num_pages:
            bad = start if start > num_pages else last
            raise DocumentError(f"{name}: page {bad} out of range (document has {num_pages} pages)")
        for p in range(start - 1, last):
            if p not in seen:
                seen.add(p)
                selected.append(p)
    return selected
