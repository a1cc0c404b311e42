"""Real-looking one-page PDFs for the tree's rules, written byte by byte (tests/documents/pdf_fixtures.py's
writer): text placed line by line in Helvetica, Helvetica-Bold or Courier at given sizes and positions."""

from __future__ import annotations

from dataclasses import dataclass

import pypdfium2 as pdfium
from pdf_fixtures import _assemble

from jocr.lines.textlayer import read_page
from jocr.lines.types import PageLines

FONTS = {"regular": b"Helvetica", "bold": b"Helvetica-Bold", "mono": b"Courier"}
_KEYS = {"regular": b"F1", "bold": b"F2", "mono": b"F3"}
WIDTH, HEIGHT = 612, 792  # US Letter


@dataclass
class Text:
    """One line of text: its left edge and baseline in points from the page's top-left, its size and font."""

    x: float
    y: float
    text: str
    size: float = 10
    font: str = "regular"


def page_pdf(lines: list[Text], size: tuple[int, int] = (WIDTH, HEIGHT)) -> bytes:
    ops = []
    for line in lines:
        safe = line.text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("cp1252")
        baseline = size[1] - line.y
        ops.append(
            b"BT /%s %g Tf %g %g Td (%s) Tj ET" % (_KEYS[line.font], line.size, line.x, baseline, safe)
        )
    content = b"\n".join(ops)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] " % size
        + b"/Resources << /Font << /F1 5 0 R /F2 6 0 R /F3 7 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
    ]
    for name in (b"Helvetica", b"Helvetica-Bold", b"Courier"):
        objects.append(
            b"<< /Type /Font /Subtype /Type1 /BaseFont /" + name + b" /Encoding /WinAnsiEncoding >>"
        )
    return _assemble(objects)


def page_layer(lines: list[Text], size: tuple[int, int] = (WIDTH, HEIGHT)) -> PageLines:
    """The text layer PDFium reads from `page_pdf(lines)`."""
    with pdfium.PdfDocument(page_pdf(lines, size)) as doc:
        return read_page(doc[0])


def paragraph(
    x: float, y: float, lines: list[str], size: float = 10, pitch: float = 12, font: str = "regular"
):
    """Lines of one paragraph from baseline `y` down, `pitch` apart."""
    return [Text(x, y + i * pitch, text, size, font) for i, text in enumerate(lines)]


WRAPPED = [
    "The committee met on three occasions during the spring term to review the",
    "proposals submitted by each department. Every proposal was read by two members,",
    "who wrote a short report on its cost, its schedule and the risks it carries for",
    "the institution as a whole.",
]
SECOND = [
    "Most departments asked for more staff rather than for new equipment, and the",
    "committee agreed that the requests were reasonable given the growth in students.",
]
