"""Small PDFs written byte by byte for tests: plain text pages and an RC4-encrypted document (standard
security handler, revision 2, PDF 1.7 spec section 7.6.3), so no PDF library is needed to make them."""

from __future__ import annotations

import hashlib
import io

from PIL import Image, ImageDraw

# PDF spec 7.6.3.3, algorithm 2: the 32-byte password padding string.
PASSWORD_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")


def rc4(key: bytes, data: bytes) -> bytes:
    s = list(range(256))
    j = 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(byte ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


def _assemble(objects: list[bytes], trailer_extra: bytes = b"") -> bytes:
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R " % (len(objects) + 1) + trailer_extra + b">>\n")
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def text_pdf(pages: list[str], size: tuple[int, int] = (612, 792), title: str | None = None) -> bytes:
    """One page per string, drawn in 24 pt Helvetica (vector text: renders at any dpi); `title` goes into
    the document information dictionary (PDF spec 14.3.3)."""
    n = len(pages)
    page_ids = [3 + 2 * i for i in range(n)]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % p for p in page_ids) + b"] /Count %d >>" % n,
    ]
    font_id = 3 + 2 * n
    for i, text in enumerate(pages):
        safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        stream = b"BT /F1 24 Tf 72 %d Td (" % (size[1] - 100) + safe + b") Tj ET"
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] " % size
            + b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font_id, page_ids[i] + 1)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    if title is None:
        return _assemble(objects)
    objects.append(b"<< /Title (" + title.encode("latin-1") + b") >>")
    return _assemble(objects, b"/Info %d 0 R " % len(objects))


def encrypted_pdf(user_password: str, owner_password: str = "owner") -> bytes:
    """A one-page PDF (no content streams, so nothing but the keys needs RC4) that needs `user_password`."""
    file_id = hashlib.md5(b"jocr-test").digest()
    user = (user_password.encode("latin-1") + PASSWORD_PAD)[:32]
    owner = (owner_password.encode("latin-1") + PASSWORD_PAD)[:32]
    o_entry = rc4(hashlib.md5(owner).digest()[:5], user)  # algorithm 3, revision 2
    permissions = -4
    key = hashlib.md5(user + o_entry + permissions.to_bytes(4, "little", signed=True) + file_id).digest()[:5]
    u_entry = rc4(key, PASSWORD_PAD)  # algorithm 4
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 400] >>",
        b"<< /Filter /Standard /V 1 /R 2 /O <"
        + o_entry.hex().encode()
        + b"> /U <"
        + u_entry.hex().encode()
        + b"> /P %d >>" % permissions,
    ]
    hex_id = file_id.hex().encode()
    return _assemble(objects, b"/Encrypt 4 0 R /ID [<" + hex_id + b"> <" + hex_id + b">] ")


def image_bytes(fmt: str, size: tuple[int, int] = (120, 80), **save_args) -> bytes:
    """A page-like image (white, a black bar on top) encoded as `fmt`."""
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).rectangle([0, 0, size[0] - 1, size[1] // 4], fill="black")
    buf = io.BytesIO()
    image.save(buf, fmt, **save_args)
    return buf.getvalue()
