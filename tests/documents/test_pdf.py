"""PDF inputs (documents/pdf.py): rendering scale and pixel cap, passwords, thread safety under the PDFium
lock, titles, and the text layer read in a process of its own."""

from __future__ import annotations

from pdf_fixtures import encrypted_pdf, text_pdf

from jocr.documents.pages import LoadOptions, open_source


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
    from jocr.documents.pdf import PdfSource

    for title, expected in [("Annual Report 2025", "Annual Report 2025"), (None, "")]:
        path = tmp_path / "doc.pdf"
        path.write_bytes(text_pdf(["Hello"], title=title))
        with PdfSource("doc.pdf", str(path), LoadOptions()) as source:
            assert source.title == expected


def test_text_layer_in_its_own_process_does_not_wait_for_the_pdfium_lock():
    """With `text_layer_timeout_s` (the server) a page's text layer is read in a process of its own: it
    neither takes nor waits for the PDFium lock every other document's rendering holds, and one that takes
    too long is cut off with the "too_large" verdict."""
    import threading

    from jocr.documents import pdf as pdf_mod

    pdf = text_pdf(["Quarterly results rose"])
    source = open_source(pdf, LoadOptions(text_layer_timeout_s=60))
    got = []
    try:
        with pdf_mod._PDFIUM_LOCK:  # another document rendering a slow page, say
            thread = threading.Thread(target=lambda: got.append(source.text_layer(0)), daemon=True)
            thread.start()
            thread.join(60)
            assert got, "the text layer waited for the PDFium lock"
        assert got[0].verdict == "ok" and "Quarterly" in " ".join(line.text for line in got[0].lines)
        cut = open_source(pdf, LoadOptions(text_layer_timeout_s=0.001)).text_layer(0)
        assert cut.verdict == "too_large" and "took over" in cut.note
    finally:
        source.close()
