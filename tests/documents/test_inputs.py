"""Which inputs and pages (documents/inputs.py): folders and globs expanded, page ranges parsed and
selected, errors naming the input."""

from __future__ import annotations

import os

import pytest
from pdf_fixtures import image_bytes, text_pdf

from jocr.documents.inputs import expand_inputs, parse_page_ranges, select_pages
from jocr.documents.source import DocumentError


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


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


def test_page_out_of_range_names_the_input():
    with pytest.raises(DocumentError, match=r"^doc.pdf: page 5 out of range \(document has 3 pages\)$"):
        select_pages("2-5", 3, "doc.pdf")
    with pytest.raises(DocumentError, match=r"^doc.pdf: page 4 out of range"):
        select_pages([4], 3, "doc.pdf")
    with pytest.raises(DocumentError, match=r"^doc.pdf: bad page range"):
        select_pages("x", 3, "doc.pdf")


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
