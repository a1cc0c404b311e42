"""Which inputs and which of their pages: folders and globs expanded to the PDFs and images in them, URLs
kept as they are (`expand_inputs`); page selections ("1-3,7,10-") made into page indices (`select_pages`).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from jocr.documents.source import DocumentError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".gif", ".bmp")
DOCUMENT_SUFFIXES = (".pdf",) + IMAGE_SUFFIXES


def is_url(item) -> bool:
    return isinstance(item, str) and re.match(r"^https?://", item, re.IGNORECASE) is not None


def expand_inputs(items: Iterable[str | os.PathLike]) -> list[str]:
    """Folders -> their PDFs and images (recursive, sorted); globs -> matches (sorted); URLs kept as is.

    An item that is neither an existing path, a URL nor a glob with matches is kept, so that opening it
    reports "no such file" for that input alone.
    """
    out: list[str] = []
    for item in items:
        text = str(item)
        if is_url(text):
            out.append(text)
            continue
        path = Path(text)
        if path.is_dir():
            found = sorted(
                str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
            )
            if not found:
                raise DocumentError(f"{text}: folder has no PDF or image files")
            out.extend(found)
        elif not path.exists() and glob.has_magic(text):
            found = sorted(p for p in _glob(text) if os.path.isfile(p))
            if not found:
                raise DocumentError(f"{text}: no files match")
            out.extend(found)
        else:
            out.append(text)
    return out


def _glob(pattern: str) -> list[str]:
    """The paths matching a glob pattern (`**` any folders deep), as `glob.glob(recursive=True)` gives them
    but never following a symbolic link to a folder while recursing (`glob.glob` does, so a link to a parent
    folder recurses until the path is too long, and two such links take exponential time). Names starting
    with a dot match only a pattern part starting with one, as in `glob`."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    base = Path(*parts[:fixed]) if fixed else Path(".")
    rest = parts[fixed:]
    if not rest:
        return [pattern] if os.path.lexists(pattern) else []
    shown_dots = any(part.startswith(".") for part in rest)
    found = []
    # pathlib's `**` does not descend into linked folders (Python 3.11+).
    for match in base.glob(str(Path(*rest))):
        if not shown_dots and any(part.startswith(".") for part in match.relative_to(base).parts):
            continue
        found.append(str(match))
    return found


_RANGE = re.compile(r"^\s*(\d+)\s*(?:(-)\s*(\d+)?\s*)?$")


def parse_page_ranges(spec: str) -> list[tuple[int, int | None]]:
    """Page ranges: "1-3,7,10-" -> [(1, 3), (7, 7), (10, None)] (1-based, inclusive; None = to the end)."""
    ranges: list[tuple[int, int | None]] = []
    for part in str(spec).split(","):
        if not part.strip():
            continue
        m = _RANGE.match(part)
        if not m:
            raise ValueError(f"bad page range {part.strip()!r} (use e.g. 1-3,7,10-)")
        start = int(m.group(1))
        end: int | None = start if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
        if start < 1 or (end is not None and end < start):
            raise ValueError(f"bad page range {part.strip()!r} (pages count from 1)")
        ranges.append((start, end))
    if not ranges:
        raise ValueError("empty page range")
    return ranges


def select_pages(pages: str | Sequence[int] | None, num_pages: int, name: str) -> list[int]:
    """0-based page indices for a 1-based selection (a range string or page numbers); None = all pages.

    A page past the end raises DocumentError naming the input; the order given is kept, duplicates dropped.
    """
    if pages is None:
        return list(range(num_pages))
    if isinstance(pages, str):
        try:
            ranges = parse_page_ranges(pages)
        except ValueError as exc:
            raise DocumentError(f"{name}: {exc}") from None
    else:
        ranges = [(int(p), int(p)) for p in pages]
    selected: list[int] = []
    seen: set[int] = set()
    for start, end in ranges:
        if start < 1:
            raise DocumentError(f"{name}: page {start} out of range (pages count from 1)")
        last = num_pages if end is None else end
        if start > num_pages or last > num_pages:
            bad = start if start > num_pages else last
            raise DocumentError(f"{name}: page {bad} out of range (document has {num_pages} pages)")
        for p in range(start - 1, last):
            if p not in seen:
                seen.add(p)
                selected.append(p)
    return selected
