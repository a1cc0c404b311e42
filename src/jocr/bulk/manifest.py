"""The job's Parquet manifest: one row per page (and one per document), the record resuming trusts.

Layout: `OUTPUT/_manifest/part-<run>-<seq>.parquet`, one part per batch of results as they reach the
driver, each written atomically (storage.Output.write), so a killed job loses only the pages still in
flight. Any Parquet reader takes the folder as one table (`pandas.read_parquet("OUTPUT/_manifest")`).
A finished run compacts its parts into one. Rows are keyed by (doc_id, page); the newest row of a key wins.

Page rows (page >= 1): status is one of
  ok        the greedy reading finished (finish reason "stop", or whatever it was with retries off)
  retried   a retry at a higher temperature finished where the greedy reading did not
  fallback  every attempt failed: the greedy reading is kept (what `jocr parse` would have written)
  blank     no ink on the page: empty Markdown, the model not run
  failed    the page could not be rendered or generated at all (error says why)
Document rows (page 0): status "written" (all pages read, outputs written), "partial" (outputs written,
some pages failed: a re-run retries those pages) or "failed" (nothing written; error says why).
`config` is the job's key (stages.PageSettings.fingerprint: the model's contents, the jocr version, the
engine, the page options): a re-run under another key reads its pages afresh instead of mixing results, and
`load` counts the pages recorded under other keys so the job can say so.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, field

from jocr.bulk.storage import Output

MANIFEST_DIR = "_manifest"
ROLL_PARTS = 256  # small parts of a run merged into one as the run goes, so a long job keeps few files
PAGE_DONE = ("ok", "retried", "fallback", "blank")


def schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("name", pa.string()),
            ("page", pa.int32()),
            ("pages_total", pa.int32()),
            ("status", pa.string()),
            ("finish_reason", pa.string()),
            ("tokens", pa.int32()),
            ("attempts", pa.int32()),
            ("temperature", pa.float32()),
            ("seconds", pa.float64()),
            ("render_seconds", pa.float64()),
            ("error", pa.string()),
            ("result", pa.string()),  # the page as `PageResult.to_dict()` JSON (rebuilds the outputs)
            ("kind", pa.string()),
            ("num_pages", pa.int32()),
            ("figures", pa.list_(pa.string())),  # a page's figure files, beside its document's Markdown
            ("config", pa.string()),
            ("run", pa.string()),
            ("time", pa.float64()),
        ]
    )


@dataclass
class Manifest:
    output: Output
    config: str
    run: str
    _seq: int = 0
    _small: list = field(default_factory=list)
    _rolled: int = 0
    # (doc_id, page) of page rows recorded under other configs only, as `load` found them
    superseded: set[tuple[str, int]] = field(default_factory=set)

    def load(self) -> dict[tuple[str, int], dict]:
        """The newest row per (doc_id, page) written under this config; `superseded` gets the pages that
        only other configs recorded."""
        import pyarrow.parquet as pq

        rows: dict[tuple[str, int], dict] = {}
        others: set[tuple[str, int]] = set()
        for part in self.output.list(MANIFEST_DIR, ".parquet"):
            try:
                table = pq.read_table(io.BytesIO(self.output.read(part)))
            except Exception:  # noqa: S112 - a part is written atomically; an unreadable one is foreign
                continue
            for row in table.to_pylist():
                key = (row["doc_id"], row["page"])
                if row.get("config") != self.config:
                    if row["page"] >= 1:
                        others.add(key)
                    continue
                if key not in rows or (row["time"] or 0) >= (rows[key]["time"] or 0):
                    rows[key] = row
        self.superseded = others - rows.keys()
        return rows

    def append(self, rows: list[dict]) -> None:
        if not rows:
            return
        now = time.time()
        for row in rows:
            row.setdefault("config", self.config)
            row.setdefault("run", self.run)
            row.setdefault("time", now)
        self._seq += 1
        rel = f"{MANIFEST_DIR}/part-{self.run}-{self._seq:06d}.parquet"
        self._write(rel, rows)
        self._small.append(rel)
        if len(self._small) >= ROLL_PARTS:
            self._roll()

    def parts(self) -> int:
        return len(self.output.list(MANIFEST_DIR, ".parquet"))

    def _roll(self) -> None:
        """Merge this run's small parts into one (written before the small ones go, so nothing is lost)."""
        import pyarrow.parquet as pq

        rows = []
        for rel in self._small:
            rows.extend(pq.read_table(io.BytesIO(self.output.read(rel))).to_pylist())
        self._rolled += 1
        self._write(f"{MANIFEST_DIR}/part-{self.run}-r{self._rolled:04d}.parquet", rows)
        for rel in self._small:
            self.output.delete(rel)
        self._small = []

    def _write(self, rel: str, rows: list[dict]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(rows, schema=schema())
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        self.output.write(rel, buffer.getvalue())

    def compact(self) -> None:
        """Fold all parts into one (newest row per key, every config kept), then delete the old parts. A kill
        in between leaves duplicates, which `load` resolves by time."""
        import pyarrow.parquet as pq

        parts = self.output.list(MANIFEST_DIR, ".parquet")
        if len(parts) <= 1:
            return
        newest: dict[tuple, dict] = {}
        for part in parts:
            for row in pq.read_table(io.BytesIO(self.output.read(part))).to_pylist():
                key = (row["config"], row["doc_id"], row["page"])
                if key not in newest or (row["time"] or 0) >= (newest[key]["time"] or 0):
                    newest[key] = row
        ordered = sorted(newest.values(), key=lambda r: (r["doc_id"], r["page"]))
        self._write(f"{MANIFEST_DIR}/part-{self.run}-compact.parquet", ordered)
        for part in parts:
            if not part.endswith(f"part-{self.run}-compact.parquet"):
                self.output.delete(part)
