"""Inputs -> pages (documents/pages.py): image formats, type sniffing, URLs, and the bad-input table; PDFs
are test_pdf.py's, input and page selection test_inputs.py's."""

from __future__ import annotations

import io
import os
import struct
import zlib

import pytest
from pdf_fixtures import encrypted_pdf, image_bytes, text_pdf
from PIL import Image

from jocr.documents.pages import DocumentError, LoadOptions, open_source, sniff_type


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP", "BMP", "GIF"])
def test_image_formats(fmt):
    with open_source(image_bytes(fmt), name=f"x.{fmt.lower()}") as src:
        assert src.kind == "image" and src.num_pages == 1
        page = src.render(0)
    assert page.mode == "RGB" and page.size == (120, 80)
    assert page.getpixel((5, 5))[0] < 40 and page.getpixel((5, 70))[0] > 215


def test_multipage_tiff(tmp_path):
    frames = [Image.new("L", (30 + 10 * i, 40), 255 - 60 * i) for i in range(3)]
    buf = io.BytesIO()
    frames[0].save(buf, "TIFF", save_all=True, append_images=frames[1:])
    path = _write(tmp_path, "scan.tif", buf.getvalue())
    with open_source(path) as src:
        assert src.num_pages == 3
        sizes = [src.render(i).size for i in (2, 0, 1)]
    assert sizes == [(50, 40), (30, 40), (40, 40)]


def test_exif_orientation_applied():
    image = Image.new("RGB", (40, 20), "white")
    image.paste((0, 0, 0), (0, 0, 20, 20))  # left half black
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display"
    buf = io.BytesIO()
    image.save(buf, "JPEG", exif=exif, quality=95)
    with open_source(buf.getvalue()) as src:
        page = src.render(0)
    assert page.size == (20, 40)
    assert page.getpixel((10, 5))[0] < 40 and page.getpixel((10, 35))[0] > 215  # black half now on top


def test_rgba_composited_on_white():
    buf = io.BytesIO()
    Image.new("RGBA", (10, 10), (0, 0, 0, 0)).save(buf, "PNG")
    with open_source(buf.getvalue()) as src:
        assert src.render(0).getpixel((3, 3)) == (255, 255, 255)


def test_sniff_type():
    assert sniff_type(b"%PDF-1.7") == "pdf"
    assert sniff_type(b"\x00\x00junk%PDF-1.4") == "pdf"
    assert sniff_type(image_bytes("PNG")[:16]) == "png"
    assert sniff_type(b"hello world") is None


def _png_with_size(width: int, height: int) -> bytes:
    """A valid PNG whose header claims width x height pixels (a decompression bomb's signature)."""
    data = image_bytes("PNG", size=(8, 8))
    ihdr = struct.pack(">II", width, height) + data[24:29]
    chunk = b"IHDR" + ihdr
    return data[:8] + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk)) + data[33:]


# The bad-input table: (file name, content, options, expected one-line message fragment).


BAD_INPUTS = [
    (
        "corrupt.pdf",
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage" * 3,
        None,
        "corrupt or unreadable PDF",
    ),
    ("locked.pdf", encrypted_pdf("secret"), None, "PDF is encrypted; pass its password with --password"),
    (
        "locked2.pdf",
        encrypted_pdf("secret"),
        LoadOptions(password="nope"),
        "wrong password for encrypted PDF",
    ),
    ("empty.pdf", b"", None, "empty file (0 bytes)"),
    ("notes.pdf", b"just some text\nnot a pdf\n", None, "unsupported file type (text)"),
    ("bomb.png", _png_with_size(40000, 40000), None, "over the pixel limit"),
    ("big.png", image_bytes("PNG", size=(200, 200)), LoadOptions(max_pixels=10_000), "over the pixel limit"),
    ("report.docx", b"PK\x03\x04" + b"\x00" * 100, None, "unsupported file type (a ZIP container"),
    ("page.html", b"<!DOCTYPE html><html></html>", None, "unsupported file type (HTML)"),
    ("blob.bin", bytes(range(256)) * 4, None, "unsupported file type (binary data)"),
]


@pytest.mark.parametrize("name,data,options,message", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_inputs_one_line_errors(tmp_path, name, data, options, message):
    path = _write(tmp_path, name, data)
    with pytest.raises(DocumentError) as info:
        open_source(path, options)
    text = str(info.value)
    assert "\n" not in text and text.startswith(str(path) + ": ")
    assert message in text


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_image(tmp_path, fmt):
    data = image_bytes(fmt, size=(300, 300))
    path = _write(tmp_path, f"cut.{fmt.lower()}", data[: len(data) // 2])
    with pytest.raises(DocumentError, match=r"cut\.\w+: cannot decode image") as info:
        with open_source(path) as src:
            src.render(0)
    assert "\n" not in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DocumentError, match=r"nope.pdf: no such file"):
        open_source(tmp_path / "nope.pdf")
    with pytest.raises(DocumentError, match=r"is a directory"):
        open_source(tmp_path)


def test_bytes_input_errors_name_the_input():
    with pytest.raises(DocumentError, match=r"^upload: empty input"):
        open_source(b"", name="upload")
    with pytest.raises(DocumentError, match=r"^<bytes>: unsupported file type"):
        open_source(b"hello")


@pytest.fixture
def http_server():
    import http.server
    import threading

    pages = {"/doc.pdf": text_pdf(["served"]), "/page.html": b"<!doctype html><html><body>hi</body></html>"}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            body = pages.get(self.path)
            self.send_response(200 if body else 404)
            ctype = "text/html" if self.path.endswith(".html") else "application/pdf"
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_url_inputs_through_the_safe_fetcher(http_server):
    from jocr.documents.fetch import FetchLimits

    port = http_server
    allowed = LoadOptions(fetch_limits=FetchLimits(allowed_endpoints=frozenset({("127.0.0.1", port)})))
    url = f"http://127.0.0.1:{port}/doc.pdf"
    with open_source(url, allowed) as src:
        assert src.kind == "pdf" and src.name == url and src.render(0).size == (1224, 1584)
    with pytest.raises(DocumentError, match=r"page.html: URL returned an HTML page"):
        open_source(f"http://127.0.0.1:{port}/page.html", allowed)
    # Without the explicit allowance a loopback address is refused, as for any private address.
    with pytest.raises(DocumentError) as info:
        open_source(url)
    assert str(info.value).startswith(url + ": ") and "\n" not in str(info.value)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    """A FIFO named as an input is not opened for reading (that blocks until a writer comes)."""
    import threading

    fifo = tmp_path / "pipe.pdf"
    os.mkfifo(fifo)
    outcome: list[str] = []

    def open_it() -> None:
        try:
            open_source(str(fifo))
        except DocumentError as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=open_it, daemon=True)
    thread.start()
    thread.join(20)
    assert outcome and "not a regular file" in outcome[0], outcome
