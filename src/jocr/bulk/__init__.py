"""`jocr batch`: parse many documents with Ray Data (`pip install 'jocr[batch]'`), on this machine or a
cluster, resumable through a Parquet manifest. See docs/batch.md.

    import jocr
    summary = jocr.batch(["scans/", "s3://bucket/papers/"], "out/", actors=2)
    print(summary.line())

`batch` below is that function, re-exported as `jocr.batch`; the package has its own name (`jocr.bulk`),
so importing its modules never replaces the function, as `jocr.parse` lives in `jocr.pipeline`.
`job.py` runs a job, `stages.py` holds its render and read stages, `manifest.py` the Parquet manifest,
`storage.py` inputs and outputs on local disk or object storage, `vllm_stage.py` the vLLM reader.
Importing this package does not import Ray; running a job does.
"""

from __future__ import annotations

from dataclasses import fields

from jocr.bulk.job import RAY_HINT, BatchConfig, BatchError, BatchSummary, run_batch
from jocr.bulk.stages import PageSettings

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
