"""Inputs -> pages: formats, lazy rendering, page ranges, folders/globs, and the bad-input table."""

from __future__ import annotations

import io
import os
import struct
import zlib

import pytest
from pdf_fixtures import encrypted_pdf, image_bytes, text_pdf
from PIL import Image

from jocr.documents.pages import (
    DocumentError,
    LoadOptions,
    expand_inputs,
    open_source,
    parse_page_ranges,
    select_pages,
    sniff_type,
)


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_pdf_renders_at_144_dpi_lazily(tmp_path):
    path = _write(tmp_path, "doc.pdf", text_pdf(["one", "two", "three"]))
    with open_source(path) as src:
        assert src.kind == "pdf" and src.num_pages == 3
        page = src.render(1)
    assert page.mode == "RGB"
    assert page.size == (1224, 1584)  # US Letter 612x792 pt at 144/72
    assert page.getextrema()[0] == (0, 255)  # the text is drawn


def test_pdf_longest_side_and_pixel_cap(tmp_path):
    data = text_pdf(["x"])
    with open_source(data, LoadOptions(longest_side=1000)) as src:
        assert max(src.render(0).size) == 1000
    with open_source(data, LoadOptions(max_pixels=100_000)) as src:
        w, h = src.render(0).size
        assert w * h <= 100_000 and w * h > 90_000


def test_encrypted_pdf_with_password():
    with open_source(encrypted_pdf("secret"), LoadOptions(password="secret"), name="enc.pdf") as src:
        assert src.num_pages == 1
        assert src.render(0).size == (600, 800)


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


def test_expand_folders_and_globs(tmp_path):
    _write(tmp_path, "b.pdf", text_pdf(["b"]))
    _write(tmp_path, "a.png", image_bytes("PNG"))
    _write(tmp_path, "notes.txt", b"hello")
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub", "c.JPG", image_bytes("JPEG"))
    found = expand_inputs([tmp_path])
    assert [p.split("/")[-1] for p in found] == ["a.png", "b.pdf", "c.JPG"]
    assert [p.split("/")[-1] for p in expand_inputs([str(tmp_path / "*.pdf")])] == ["b.pdf"]
    assert expand_inputs(["https://example.com/a.pdf"]) == ["https://example.com/a.pdf"]
    with pytest.raises(DocumentError, match=r"no files match"):
        expand_inputs([str(tmp_path / "*.tiff")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DocumentError, match=r"empty: folder has no PDF or image files"):
        expand_inputs([tmp_path / "empty"])


def test_page_ranges():
    assert parse_page_ranges("1-3,7") == [(1, 3), (7, 7)]
    assert parse_page_ranges(" 2 - 4 , 9- ") == [(2, 4), (9, None)]
    assert select_pages("1-3,7", 10, "d") == [0, 1, 2, 6]
    assert select_pages("9-", 10, "d") == [8, 9]
    assert select_pages([3, 1, 3], 5, "d") == [2, 0]
    assert select_pages(None, 3, "d") == [0, 1, 2]
    for bad in ("0", "3-1", "a", "1-2-3", ","):
        with pytest.raises(ValueError):
            parse_page_ranges(bad)


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


def test_page_out_of_range_names_the_input():
    with pytest.raises(DocumentError, match=r"^doc.pdf: page 5 out of range \(document has 3 pages\)$"):
        select_pages("2-5", 3, "doc.pdf")
    with pytest.raises(DocumentError, match=r"^doc.pdf: page 4 out of range"):
        select_pages([4], 3, "doc.pdf")
    with pytest.raises(DocumentError, match=r"^doc.pdf: bad page range"):
        select_pages("x", 3, "doc.pdf")


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


def test_pdf_sources_are_safe_across_threads():
    from concurrent.futures import ThreadPoolExecutor

    data = text_pdf([f"page {i}" for i in range(6)])

    def render_all(_):
        with open_source(data, LoadOptions(dpi=36)) as src:
            return [src.render(i).tobytes() for i in range(src.num_pages)]

    expected = render_all(None)
    with ThreadPoolExecutor(4) as pool:
        assert all(r == expected for r in pool.map(render_all, range(8)))


def test_pdf_title_comes_from_the_metadata(tmp_path):
    from pdf_fixtures import text_pdf

    from jocr.documents.pages import LoadOptions, PdfSource

    for title, expected in [("Annual Report 2025", "Annual Report 2025"), (None, "")]:
        path = tmp_path / "doc.pdf"
        path.write_bytes(text_pdf(["Hello"], title=title))
        with PdfSource("doc.pdf", str(path), LoadOptions()) as source:
            assert source.title == expected


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


def test_recursive_glob_does_not_follow_folder_links(tmp_path):
    """Two links to parent folders make `glob.glob("**")` exponential; the links are not followed."""
    import threading

    (tmp_path / "in" / "sub").mkdir(parents=True)
    for name in ("in/a.pdf", "in/sub/b.pdf"):
        (tmp_path / name).write_bytes(b"%PDF-1.4")
    os.symlink("..", tmp_path / "in" / "sub" / "up")
    os.symlink("../..", tmp_path / "in" / "sub" / "top")
    found: list[list[str]] = []
    thread = threading.Thread(
        target=lambda: found.append(expand_inputs([str(tmp_path / "in" / "**" / "*.pdf")])), daemon=True
    )
    thread.start()
    thread.join(30)
    assert found == [[str(tmp_path / "in" / "a.pdf"), str(tmp_path / "in" / "sub" / "b.pdf")]]


def test_text_layer_in_its_own_process_does_not_wait_for_the_pdfium_lock():
    """With `text_layer_timeout_s` (the server) a page's text layer is read in a process of its own: it
    neither takes nor waits for the PDFium lock every other document's rendering holds, and one that takes
    too long is cut off with the "too_large" verdict."""
    import threading

    from jocr.documents import pages as pages_mod

    pdf = text_pdf(["Quarterly results rose"])
    source = open_source(pdf, LoadOptions(text_layer_timeout_s=60))
    got = []
    try:
        with pages_mod._PDFIUM_LOCK:  # another document rendering a slow page, say
            thread = threading.Thread(target=lambda: got.append(source.text_layer(0)), daemon=True)
            thread.start()
            thread.join(60)
            assert got, "the text layer waited for the PDFium lock"
        assert got[0].verdict == "ok" and "Quarterly" in " ".join(line.text for line in got[0].lines)
        cut = open_source(pdf, LoadOptions(text_layer_timeout_s=0.001)).text_layer(0)
        assert cut.verdict == "too_large" and "took over" in cut.note
    finally:
        source.close()
