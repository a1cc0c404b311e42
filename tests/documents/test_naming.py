"""Output names (documents/naming.py), the one rule `jocr parse` and `jocr batch` share."""

from __future__ import annotations

import pytest

from jocr.documents.naming import output_stems


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
