"""Time of one question, in process: `jocr.ask` over one page, the bundle loaded and warmed once.

    PYTHONPATH=src .venv/bin/python benchmarks/ask_speed.py --model models --documents 9
    PYTHONPATH=src .venv/bin/python benchmarks/ask_speed.py --set data/frozen-real-qa2 --focus both

The set's first document is asked its first question unmeasured (warm-up: the members' load, the kernels'
first calls, RapidOCR's load for images); each following document is then asked its first question once
and timed: wall and CPU seconds (this process's user + system time) of one `jocr.ask` call, rendering the
page, reading its text layer or OCR lines, building the anchor, encoding the image, prefill and decoding.
Each page is asked once because the engine keeps what it has prefilled: asking the same page again would
time a cache hit. Process start-up and the model's load are outside it (`farm-bench` over `jocr ask`
gives the whole command). Run it with the cores otherwise idle: the numbers are a speed claim.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def first_questions(folder: Path, documents: int, variant: str) -> list[tuple[str, str]]:
    """(file, question) of the first question of each of the set's first `documents` documents: a real set's
    `questions.jsonl`-style rows (file, question) or a synthetic set's `docqa_test.jsonl` records."""
    rows: list[tuple[str, str]] = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "files" in record:  # synthetic: one record per document
                rows.append((str(folder / record["files"][variant]), record["questions"][0]["question"]))
            elif "file" in record and "question" in record:
                stem = Path(record["file"]).stem
                copies = sorted((folder / variant).glob(f"{stem}.*")) if variant != "pdf" else []
                if variant != "pdf" and not copies:
                    continue
                name = record["file"] if variant == "pdf" else str(copies[0].relative_to(folder))
                if not any(r[0] == str(folder / name) for r in rows):
                    rows.append((str(folder / name), record["question"]))
        if rows:
            break
    return rows[:documents]


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--model", default=str(ROOT / "models"))
    parser.add_argument("--set", default=str(ROOT / "data" / "frozen-test" / "docqa"))
    parser.add_argument("--variant", choices=("pdf", "scan", "photo"), default="pdf")
    parser.add_argument("--documents", type=int, default=9, help="the first one warms up")
    parser.add_argument("--focus", choices=("off", "window", "both"), default="off")
    args = parser.parse_args(argv)
    import torch

    import jocr
    from jocr.pipeline.model import load_model

    torch.set_num_threads(2)
    rows = first_questions(Path(args.set), args.documents, args.variant)
    if not rows:
        print(f"no questions found in {args.set}", file=sys.stderr)
        return 2
    loaded = load_model(args.model)
    warm_file, warm_question = rows[0]
    jocr.ask(warm_file, warm_question, model=loaded, focus=args.focus)
    print("| document | question | answer | wall s | CPU s |")
    print("|---|---|---|---|---|")
    walls, cpus = [], []
    for file, question in rows[1:]:
        w0, c0 = time.perf_counter(), cpu_seconds()
        answer = jocr.ask(file, question, model=loaded, focus=args.focus).answer
        walls.append(time.perf_counter() - w0)
        cpus.append(cpu_seconds() - c0)
        print(f"| {Path(file).name} | {question[:50]} | {answer[:30]} | {walls[-1]:.2f} | {cpus[-1]:.2f} |")
    if walls:
        print(
            f"\n{len(walls)} questions: median {statistics.median(walls):.2f} s wall "
            f"({min(walls):.2f}-{max(walls):.2f}), {statistics.median(cpus):.2f} CPU s per question"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
