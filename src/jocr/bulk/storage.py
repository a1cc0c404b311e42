"""Where a batch job reads and writes: local paths, or any URI pyarrow's filesystems open (`s3://`, `gs://`,
`hdfs://`, `file://`), and the input list (files, folders, globs, list files, URLs, URIs).

Every output file is written whole or not at all: locally to a temporary name in the same folder, then
renamed (POSIX rename is atomic within a filesystem); on an object store one PUT, which stores an object
completely or not at all. No half-written Markdown, JSON or manifest part is ever visible.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from jocr.documents.pages import DOCUMENT_SUFFIXES, DocumentError, expand_inputs, is_url

# A text file with one input per line (paths, URLs or URIs; blank lines and `#` comments skipped).
LIST_SUFFIXES = (".txt", ".lst", ".list")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


def uri_scheme(item: str) -> str | None:
    """ "s3" for "s3://bucket/key"; None for local paths and http(s) URLs (the fetcher reads those)."""
    match = _SCHEME.match(item)
    if match is None or is_url(item):
        return None
    return match.group(1).lower()


def _filesystem(uri: str):
    """(pyarrow FileSystem, path inside it) for a URI."""
    from pyarrow import fs

    try:
        return fs.FileSystem.from_uri(uri)
    except Exception as exc:  # unknown scheme, missing credentials, bad bucket name
        raise DocumentError(f"{uri}: cannot open ({' '.join(str(exc).split())[:200]})") from None


def read_uri(uri: str, max_bytes: int) -> bytes:
    """The bytes of a remote object, refused past max_bytes."""
    filesystem, path = _filesystem(uri)
    try:
        info = filesystem.get_file_info(path)
        if info.size is not None and info.size > max_bytes:
            raise DocumentError(f"{uri}: input is over {max_bytes:,} bytes")
        with filesystem.open_input_stream(path) as stream:
            return stream.read()
    except DocumentError:
        raise
    except Exception as exc:
        raise DocumentError(f"{uri}: cannot read ({' '.join(str(exc).split())[:200]})") from None


def _expand_uri(uri: str) -> list[str]:
    from pyarrow import fs

    filesystem, path = _filesystem(uri)
    scheme = uri_scheme(uri)
    info = filesystem.get_file_info(path)
    if info.type == fs.FileType.File:
        return [uri]
    if info.type != fs.FileType.Directory:
        return [uri]  # opening it reports the missing object for this input alone
    found = sorted(
        f.path
        for f in filesystem.get_file_info(fs.FileSelector(path, recursive=True))
        if f.type == fs.FileType.File and Path(f.path).suffix.lower() in DOCUMENT_SUFFIXES
    )
    if not found:
        raise DocumentError(f"{uri}: folder has no PDF or image files")
    return [f"{scheme}://{p}" for p in found]


def _read_list(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError(f"{path}: cannot read the input list ({exc})") from None
    items = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not is_url(line) and uri_scheme(line) is None and not os.path.isabs(line):
            line = str(path.parent / line)  # relative to the list file, not to where the job starts
        items.append(line)
    return items


def expand_batch_inputs(items: list[str]) -> list[str]:
    """Files, folders, globs, URLs (as `jocr parse` takes them), list files and storage URIs -> one ordered
    list of documents without duplicates."""
    out: list[str] = []
    for item in items:
        text = str(item)
        if uri_scheme(text) == "file":
            text = text[len("file://") :]
        if uri_scheme(text) is not None:
            out.extend(_expand_uri(text))
        elif Path(text).suffix.lower() in LIST_SUFFIXES and Path(text).is_file():
            out.extend(expand_batch_inputs(_read_list(Path(text))))
        else:
            out.extend(expand_inputs([text]))
    return list(dict.fromkeys(out))


class Output:
    """The job's output folder: a local directory or a URI prefix. Paths given to it are relative."""

    def __init__(self, root: str):
        self.root = root.rstrip("/") if uri_scheme(root) else root
        self.remote = uri_scheme(root) is not None
        if self.remote:
            self._fs, self._base = _filesystem(self.root)
        else:
            if self.root.startswith("file://"):
                self.root = self.root[len("file://") :]
            self._fs, self._base = None, self.root

    def __str__(self) -> str:
        return self.root

    def make_dirs(self, rel: str = "") -> None:
        if self.remote:
            self._fs.create_dir(self._join(rel), recursive=True)
        else:
            Path(self._join(rel)).mkdir(parents=True, exist_ok=True)

    def _join(self, rel: str) -> str:
        return f"{self._base}/{rel}" if rel else self._base

    def write(self, rel: str, data: bytes) -> None:
        """Write a whole file atomically (see the module docstring)."""
        target = self._join(rel)
        if self.remote:
            with self._fs.open_output_stream(target) as stream:
                stream.write(data)
            return
        path = Path(target)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()

    def exists(self, rel: str) -> bool:
        if self.remote:
            from pyarrow import fs

            return self._fs.get_file_info(self._join(rel)).type == fs.FileType.File
        return Path(self._join(rel)).is_file()

    def list(self, rel: str, suffix: str) -> list[str]:
        """Relative paths of the files directly in folder `rel` whose names end with `suffix`, sorted."""
        if self.remote:
            from pyarrow import fs

            selector = fs.FileSelector(self._join(rel), allow_not_found=True)
            names = [
                Path(f.path).name for f in self._fs.get_file_info(selector) if f.type == fs.FileType.File
            ]
        else:
            folder = Path(self._join(rel))
            names = [p.name for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
        return sorted(f"{rel}/{n}" for n in names if n.endswith(suffix) and not n.startswith("."))

    def read(self, rel: str) -> bytes:
        if self.remote:
            with self._fs.open_input_stream(self._join(rel)) as stream:
                return stream.read()
        return Path(self._join(rel)).read_bytes()

    def delete(self, rel: str) -> None:
        if self.remote:
            self._fs.delete_file(self._join(rel))
        else:
            Path(self._join(rel)).unlink(missing_ok=True)

    def parquet_path(self, rel: str):
        """(filesystem, path) for pyarrow.parquet: None filesystem means a local path."""
        return self._fs, self._join(rel)
