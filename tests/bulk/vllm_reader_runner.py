"""Reads pages with `--engine vllm`'s reader (no Ray) and writes the result rows as JSON.

    python vllm_reader_runner.py CHECKPOINT DOCUMENT [DOCUMENT ...] OUT.json MAX_TOKENS

Run by test_vllm_reader.py in a subprocess, so that vLLM's process-wide state stays out of the test process.
"""

from __future__ import annotations

import json
import sys

from jocr.bulk.stages import PageSettings, expand_documents, render_pages
from jocr.bulk.vllm_stage import VllmPageReader


def main() -> int:
    checkpoint, documents, out, max_tokens = sys.argv[1], sys.argv[2:-2], sys.argv[-2], sys.argv[-1]
    settings = PageSettings(model=checkpoint, max_tokens=int(max_tokens), spec=0, retries=1)
    docs = [{"doc_id": d} for d in documents]
    rows = list(render_pages(expand_documents(docs, settings), settings))
    reader = VllmPageReader(settings)
    with open(out, "w") as fh:
        json.dump(reader(rows), fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
