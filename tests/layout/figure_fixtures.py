"""One-page PDFs with figures for `jocr.layout.figures`, written byte by byte (the writer of
tests/documents/pdf_fixtures.py): Helvetica text lines (`page_fixtures.Text`), image XObjects (a flat-colour
RGB picture drawn in a box) and vector paths (content-stream operators), in points from the top-left."""

from __future__ import annotations

from page_fixtures import HEIGHT, WIDTH, Text
from pdf_fixtures import _assemble


def figure_pdf(
    lines: list[Text],
    images: list[tuple[float, float, float, float]] = (),
    paths: list[bytes] = (),
    size: tuple[int, int] = (WIDTH, HEIGHT),
) -> bytes:
    """A page of `lines`, each image box (x, y, w, h; top-left origin) showing a 4x4 RGB picture scaled to
    it, and `paths` (raw operators in PDF user space, bottom-left origin) drawn as they are."""
    ops = []
    for k, (x, y, w, h) in enumerate(images):
        ops.append(b"q %g 0 0 %g %g %g cm /Im%d Do Q" % (w, h, x, size[1] - y - h, k))
    ops.extend(paths)
    for line in lines:
        safe = line.text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("cp1252")
        ops.append(b"BT /F1 %g Tf %g %g Td (%s) Tj ET" % (line.size, line.x, size[1] - line.y, safe))
    content = b"\n".join(ops)
    first_image = 6
    xobjects = b" ".join(b"/Im%d %d 0 R" % (k, first_image + k) for k in range(len(images)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] " % size
        + b"/Resources << /Font << /F1 5 0 R >> /XObject << "
        + xobjects
        + b" >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    pixels = bytes([200, 40, 40, 40, 160, 40, 40, 40, 200, 20, 20, 20] * 4)[:48]
    for _ in images:
        objects.append(
            b"<< /Type /XObject /Subtype /Image /Width 4 /Height 4 /ColorSpace /DeviceRGB "
            b"/BitsPerComponent 8 /Length %d >>\nstream\n" % len(pixels) + pixels + b"\nendstream"
        )
    return _assemble(objects)


def circle(cx: float, cy: float, r: float, height: float = HEIGHT) -> bytes:
    """A stroked circle (four Bezier curves) centred at (cx, cy), top-left origin."""
    y = height - cy
    k = 0.552 * r
    return (
        b"%g %g m %g %g %g %g %g %g c %g %g %g %g %g %g c %g %g %g %g %g %g c %g %g %g %g %g %g c S"
        % (cx + r, y, cx + r, y + k, cx + k, y + r, cx, y + r, cx - k, y + r, cx - r, y + k, cx - r, y,
           cx - r, y - k, cx - k, y - r, cx, y - r, cx + k, y - r, cx + r, y - k, cx + r, y)
    )  # fmt: skip


def rule(x0: float, y: float, x1: float, height: float = HEIGHT) -> bytes:
    """A horizontal rule (a table's or a frame's), top-left origin."""
    return b"0.5 w %g %g m %g %g l S" % (x0, height - y, x1, height - y)
