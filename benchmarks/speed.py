"""Start-up cost of `jocr parse` before its first page: CPU seconds of importing torch, of importing the
pipeline and loading the models (both bundle members, their engines built), each in a new interpreter, as
the process's own CPU time (user + system), which a loaded machine disturbs far less than wall time.

    .venv/bin/python benchmarks/speed.py                      # the bundled models, 3 fresh processes
    .venv/bin/python benchmarks/speed.py --model DIR --runs 5
    PYTHONPATH=OTHER/src .venv/bin/python benchmarks/speed.py  # another checkout, for an A/B pairing

Prints one line per run and the medians; also whether torch._dynamo and sympy were imported on the way
(loading must not import them: docs/model.md, "Using it").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = """
import json, sys, time
t0 = time.process_time()
import torch
t1 = time.process_time()
from jocr.pipeline import load_model
loaded = load_model(sys.argv[1] if len(sys.argv) > 1 else None)
for member in (loaded, loaded.anchored):
    if member is not None:
        member.engine("auto", 8)
t2 = time.process_time()
print(json.dumps({"import_torch": t1 - t0, "load": t2 - t1, "total": t2 - t0,
                  "dynamo": "torch._dynamo" in sys.modules, "sympy": "sympy" in sys.modules}))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="model directory (default: $JOCR_MODEL or the bundled models)")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    rows = []
    for i in range(args.runs):
        cmd = [sys.executable, "-c", PROBE] + ([args.model] if args.model else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"run {i + 1}: import torch {row['import_torch']:.2f} CPU-s, pipeline + models + engines "
            f"{row['load']:.2f} CPU-s, total {row['total']:.2f}; torch._dynamo imported: {row['dynamo']}, "
            f"sympy: {row['sympy']}"
        )
    medians = {k: statistics.median(r[k] for r in rows) for k in ("import_torch", "load", "total")}
    print("median: " + ", ".join(f"{k} {v:.2f} CPU-s" for k, v in medians.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
