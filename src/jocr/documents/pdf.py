"""PDF inputs (pypdfium2): `PdfSource`, every PDFium call under one process-wide lock, and a page read in a
process of its own, killed after a time limit, where a slow page must not hold that lock
(`LoadOptions.text_layer_timeout_s`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from PIL import Image

from jocr.documents.source import DocumentError, LoadOptions, PageSource, PdfReadError
from jocr.errors import one_line

T = TypeVar("T")


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
        context.set_forkserver_preload(["jocr.documents.pdf", "jocr.lines.textlayer", module, "pypdfium2"])
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
