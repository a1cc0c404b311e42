"""`jocr batch`: parse many documents with Ray Data (`pip install 'jocr[batch]'`), on this machine or a
cluster, resumable through a Parquet manifest. See docs/batch.md.

    import jocr
    summary = jocr.batch(["scans/", "s3://bucket/papers/"], "out/", actors=2)
    print(summary.line())

Importing this package does not import Ray; running a job does.
"""

from __future__ import annotations

import sys
import types
from dataclasses import fields

from jocr.batch.job import RAY_HINT, BatchConfig, BatchError, BatchSummary, run_batch
from jocr.batch.stages import PageSettings

__all__ = ["RAY_HINT", "BatchConfig", "BatchError", "BatchSummary", "PageSettings", "batch", "run_batch"]


def batch(inputs, output: str, **options) -> BatchSummary:
    """Parse `inputs` (paths, folders, globs, list files, URLs, storage URIs) into `output` (a folder or URI)
    with Ray. Keyword options are the fields of `BatchConfig` (engine, address, actors, cpus_per_actor,
    gpus_per_actor, formats, limit, ...) and of `PageSettings` (model, device, prompt, pages, max_tokens,
    batch_size, retries, page_timeout, ...). Returns the run's `BatchSummary`."""
    if isinstance(inputs, str):
        inputs = [inputs]
    page_fields = {f.name for f in fields(PageSettings)}
    job_fields = {f.name for f in fields(BatchConfig)} - {"inputs", "output", "settings"}
    unknown = set(options) - page_fields - job_fields
    if unknown:
        raise TypeError(f"batch() got unknown option(s): {', '.join(sorted(unknown))}")
    settings = PageSettings(**{k: v for k, v in options.items() if k in page_fields})
    config = BatchConfig(
        inputs=[str(i) for i in inputs],
        output=str(output),
        settings=settings,
        **{k: v for k, v in options.items() if k in job_fields},
    )
    return run_batch(config)


class _CallableModule(types.ModuleType):
    """`jocr.batch` names both this package and the function (as `jocr.parse` does)."""

    def __call__(self, *args, **kwargs):
        return batch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
