"""`jocr parse --draw`: each page written as `<stem>_p<N>_layout.png` with its blocks drawn
(`jocr.layout.draw`), from the image the page was read from (handed over by the pipeline's
`on_page_image`, so the page is not rendered twice), drawn and written on one background thread while the
parse goes on."""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from jocr.layout.draw import draw_tree, save_drawn

MAX_QUEUED = 4  # pages waiting to be drawn: a bound on the page images held (some 6 MB each at 150 dpi)


class DrawnPages:
    """Draws and writes the pages handed to `add` in the background; `wait(stem)` returns once that
    document's files are written and raises the first `OSError` met writing them."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jocr-draw")
        self.pending: dict[str, list[Future]] = {}

    def add(self, stem: str, page, image) -> None:
        """Queue `page` (a `PageResult` with its tree) drawn over `image` (the page as read, upright)."""
        if page.tree is None or page.error is not None:
            return
        queued = [f for futures in self.pending.values() for f in futures if not f.done()]
        if len(queued) >= MAX_QUEUED:
            queued[0].result()  # waits; an error is raised again, and kept, by `wait`
        target = self.out_dir / f"{stem}_p{page.page}_layout.png"
        # The blocks as they are now (a document's end may still change their text, never their boxes).
        tree = dataclasses.replace(page.tree, blocks=list(page.tree.blocks))
        self.pending.setdefault(stem, []).append(self.pool.submit(_write, image, tree, target))

    def wait(self, stem: str) -> None:
        """Blocks until `stem`'s pages are written; raises the first error met writing them."""
        for future in self.pending.pop(stem, []):
            future.result()

    def close(self) -> None:
        """Finishes what is queued (errors of documents never waited for are dropped with them)."""
        self.pool.shutdown(wait=True)
        self.pending.clear()


def _write(image, tree, target: Path) -> None:
    """The page drawn and written atomically: a temporary name beside `target`, then renamed."""
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        save_drawn(draw_tree(image, tree), tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
