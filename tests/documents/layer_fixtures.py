"""PDFs with hostile or odd text layers, written byte by byte (tests/documents/pdf_fixtures.py's writer):
invisible OCR text, zero-size fonts, text off the page, private-use and surrogate Unicode mappings,
mojibake, huge runs and millions of glyphs."""

from __future__ import annotations

import zlib

from pdf_fixtures import _assemble


def _escape(text: bytes) -> bytes:
    return text.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def layer_pdf(
    content: bytes,
    size: tuple[int, int] = (612, 792),
    to_unicode: bytes | None = None,
    compress: bool = False,
) -> bytes:
    """One page whose content stream is `content` (font /F1 is Helvetica, WinAnsi); `to_unicode` is a
    ToUnicode CMap body (bfchar/bfrange sections) given to the font."""
    stream = zlib.compress(content, 9) if compress else content
    filt = b"/Filter /FlateDecode " if compress else b""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] " % size
        + b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d " % len(stream) + filt + b">>\nstream\n" + stream + b"\nendstream",
    ]
    if to_unicode is None:
        objects.append(font + b" >>")
    else:
        cmap = (
            b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T def /CMapType 2 def\n"
            b"1 begincodespacerange <00> <FF> endcodespacerange\n"
            + to_unicode
            + b"\nendcmap CMapName currentdict /CMap defineresource pop end end"
        )
        objects.append(font + b" /ToUnicode 6 0 R >>")
        objects.append(b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream")
    return _assemble(objects)


def lines_content(
    lines: list[str], size: float = 11, x: float = 72, top: float = 720, mode: int = 0
) -> bytes:
    """Lines of Helvetica text from `top` down, `size` points, text render mode `mode` (3: invisible)."""
    out = [b"BT /F1 %g Tf %d Tr %g TL %g %g Td" % (size, mode, size * 1.3, x, top)]
    for line in lines:
        out.append(b"(" + _escape(line.encode("cp1252")) + b") Tj T*")
    out.append(b"ET")
    return b"\n".join(out)


PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "Pack my box with five dozen liquor jugs, then",
    "sphinx of black quartz, judge my vow.",
]


def plain_pdf() -> bytes:
    return layer_pdf(lines_content(PROSE))


def invisible_pdf() -> bytes:
    return layer_pdf(lines_content(PROSE, mode=3))


def zero_size_pdf() -> bytes:
    return layer_pdf(lines_content(PROSE, size=0))


def offpage_pdf() -> bytes:
    return layer_pdf(lines_content(PROSE, x=-5000, top=-5000))


def private_use_pdf() -> bytes:
    # Every letter maps into the private use area, as subset fonts without a real ToUnicode map do.
    return layer_pdf(lines_content(PROSE), to_unicode=b"1 beginbfrange <20> <7E> <E000> endbfrange")


def surrogate_pdf() -> bytes:
    # Lone UTF-16 surrogates: not characters, and not encodable as UTF-8.
    return layer_pdf(lines_content(PROSE), to_unicode=b"1 beginbfrange <20> <7E> <D800> endbfrange")


def mojibake_pdf() -> bytes:
    text = "Ã©tÃ© â€™ caf\u00c3\u00a9 rÃ©sumÃ© naÃ¯ve"
    return layer_pdf(lines_content([text] * 4))


def cid_pdf() -> bytes:
    return layer_pdf(lines_content(["(cid:12)(cid:34)(cid:56) (cid:7)(cid:8)(cid:9)"] * 4))


def huge_run_pdf(chars: int = 50_000) -> bytes:
    """One show-text operation of `chars` glyphs on one baseline, small enough to stay on the page."""
    word = b"lorem ipsum "
    text = (word * (chars // len(word) + 1))[:chars]
    return layer_pdf(b"BT /F1 0.6 Tf 10 400 Td (" + text + b") Tj ET", compress=True)


def many_glyphs_pdf(glyphs: int = 2_000_000) -> bytes:
    """`glyphs` glyphs in runs of 1,000 (compressed, so the file stays small)."""
    run = b"(" + b"x" * 1000 + b") Tj 0 -1 Td\n"
    return layer_pdf(b"BT /F1 1 Tf 10 780 Td\n" + run * (glyphs // 1000) + b"ET", compress=True)
