"""Output file names for inputs: the one rule `jocr parse` and `jocr batch` share (docs/parsing.md), so the
two write the same files for the same inputs."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
# Bytes of an output stem: with a collision suffix (`-2`) and `.json` the name stays under the 255 bytes most
# file systems allow.
MAX_STEM_BYTES = 240


def _fit(stem: str) -> str:
    """`stem` cut to MAX_STEM_BYTES of UTF-8, at a character boundary."""
    data = stem.encode("utf-8", "surrogateescape")
    if len(data) <= MAX_STEM_BYTES:
        return stem
    return data[:MAX_STEM_BYTES].decode("utf-8", "ignore")


def printable(text: str) -> str:
    """`text` fit for a terminal line: control characters (newlines, escape sequences), format characters
    (bidirectional overrides) and other unprintable ones escaped as `\\n`, `\\x1b`, `\\u202e`, so a file
    name cannot forge output lines or drive the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def output_stem(name: str) -> str:
    """File stem for an input: the file name without suffix, or the last path segment of a URL or storage
    URI (`s3://bucket/a.pdf`), without its query; cut to MAX_STEM_BYTES."""
    if _URI.match(name):
        parsed = urlparse(name)
        tail = Path(parsed.path).name or parsed.netloc or "page"
        return _fit(Path(tail).stem or tail)
    return _fit(Path(name).stem)


def output_stems(names: list[str]) -> list[str]:
    """Output stems that never collide: an input's stem (`a.pdf` -> `a`) when no other input of the run has
    it; its whole file name (`a.pdf` -> `a.pdf`, `a.png` -> `a.png`) when stems clash; and `-2`, `-3`...
    after that when whole names clash too (one name in two folders), never taking another input's name.
    Compared without case, as case-insensitive file systems would."""
    stems = [output_stem(n) for n in names]
    count: dict[str, int] = {}
    for stem in stems:
        count[stem.lower()] = count.get(stem.lower(), 0) + 1
    wanted = []
    for name, stem in zip(names, stems):
        if count[stem.lower()] > 1:
            full = urlparse(name).path if _URI.match(name) else name
            stem = _fit(Path(full).name) or stem
        wanted.append(stem)
    taken = {w.lower() for w in wanted}
    seen: set[str] = set()
    out = []
    for stem in wanted:
        final, i = stem, 1
        while final.lower() in seen or (final != stem and final.lower() in taken):
            i += 1
            final = f"{stem}-{i}"
        seen.add(final.lower())
        out.append(final)
    return out
