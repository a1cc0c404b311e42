"""Output names (documents/naming.py), the one rule `jocr parse` and `jocr batch` share."""

from __future__ import annotations

import pytest

from jocr.documents.naming import output_stems, printable


@pytest.mark.parametrize(
    ("names", "stems"),
    [
        (["a.pdf", "b.png"], ["a", "b"]),
        (["a.pdf", "a.png"], ["a.pdf", "a.png"]),  # stems clash: whole file names
        (["x/a.pdf", "y/a.pdf"], ["a.pdf", "a.pdf-2"]),  # whole names clash too
        (["a.pdf", "a-2.pdf", "z/a.pdf"], ["a.pdf", "a-2", "a.pdf-2"]),  # a suffix never takes a real name
        (["A.pdf", "a.png"], ["A.pdf", "a.png"]),  # case-insensitive file systems
        (["https://h/doc.pdf", "doc.png"], ["doc.pdf", "doc.png"]),
        (["https://h/doc.pdf?x=1", "s3://bucket/dir/b.pdf", "https://h/"], ["doc", "b", "h"]),
        (["s3://b/x/a.pdf?v=1", "gs://c/y/a.pdf"], ["a.pdf", "a.pdf-2"]),
    ],
)
def test_output_names_never_collide(names, stems):
    assert output_stems(names) == stems
    assert len({s.lower() for s in output_stems(names)}) == len(names)


def test_long_names_fit_the_file_system():
    """A 255-byte input name still gives outputs (`.json`, a `-2` suffix included) under 255 bytes; multi-byte
    characters are cut whole."""
    names = ["x" * 251 + ".pdf", "é" * 125 + ".pdf", "d/" + "x" * 251 + ".pdf"]
    for stem in output_stems(names):
        assert len(f"{stem}-99.json".encode()) <= 255, stem
    assert output_stems(names)[1] == "é" * 120


def test_printable_escapes_control_and_format_characters():
    assert printable("report.pdf") == "report.pdf"
    assert printable("a\nb\x1b[2J\u202ec.pdf") == "a\\nb\\x1b[2J\\u202ec.pdf"
    assert printable("caf\u00e9 \u4e2d.pdf") == "caf\u00e9 \u4e2d.pdf"
