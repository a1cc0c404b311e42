"""Time of one question, in process: `jocr.ask` over one page, the bundle loaded and warmed once.

    PYTHONPATH=src .venv/bin/python benchmarks/ask_speed.py --model models --documents 9 --repeats 3
    PYTHONPATH=src .venv/bin/python benchmarks/ask_speed.py --set data/frozen-real-qa2 --focus both

The set's first document is asked its first question unmeasured (warm-up: the members' load, the kernels'
first calls, RapidOCR's load for images); each following document is then asked its first question
`--repeats` times, each call timed: wall and CPU seconds (this process's user + system time) of one
`jocr.ask` call, rendering the page, reading its text layer or OCR lines, building the anchor, encoding the
image, prefill and decoding. Nothing of a page is kept between calls (no rendered page, OCR result or
prefill is cached), so a repeat does every step again. A document's time is the median of its repeats; the
summary is the median (min-max) over documents. Process start-up and the model's load are outside it (time
`jocr ask` as a whole command for those). Run it with the cores otherwise idle: the numbers are a speed claim.
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


def timed_ask(file: str, question: str, loaded, focus: str) -> tuple[str, float, float]:
    """(answer, wall s, CPU s) of one `jocr.ask` call."""
    import jocr

    w0, c0 = time.perf_counter(), cpu_seconds()
    answer = jocr.ask(file, question, model=loaded, focus=focus).answer
    return answer, time.perf_counter() - w0, cpu_seconds() - c0


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--model", default=str(ROOT / "models"))
    parser.add_argument("--set", default=str(ROOT / "data" / "frozen-test" / "docqa"))
    parser.add_argument("--variant", choices=("pdf", "scan", "photo"), default="pdf")
    parser.add_argument("--documents", type=int, default=9, help="the first one warms up")
    parser.add_argument("--focus", choices=("off", "window", "both"), default="off")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per document (median kept)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.documents < 2:
        print("--repeats must be >= 1 and --documents >= 2 (the first only warms up)", file=sys.stderr)
        return 2
    import torch

    import jocr
    from jocr.pipeline.model import load_model

    torch.set_num_threads(2)
    rows = first_questions(Path(args.set), args.documents, args.variant)
    if len(rows) < 2:
        print(f"fewer than two documents with questions in {args.set}", file=sys.stderr)
        return 2
    loaded = load_model(args.model)
    warm_file, warm_question = rows[0]
    jocr.ask(warm_file, warm_question, model=loaded, focus=args.focus)
    print("| document | question | answer | median wall s | median CPU s |")
    print("|---|---|---|---|---|")
    walls, cpus = [], []
    for file, question in rows[1:]:
        times = [timed_ask(file, question, loaded, args.focus) for _ in range(args.repeats)]
        answer = times[0][0]
        walls.append(statistics.median(t[1] for t in times))
        cpus.append(statistics.median(t[2] for t in times))
        print(f"| {Path(file).name} | {question[:50]} | {answer[:30]} | {walls[-1]:.2f} | {cpus[-1]:.2f} |")
    print(
        f"\n{len(walls)} questions x {args.repeats} repeats: median {statistics.median(walls):.2f} s wall "
        f"({min(walls):.2f}-{max(walls):.2f}), {statistics.median(cpus):.2f} CPU s per question"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
