"""`jocr score`: olmOCR-Bench unit tests over a folder of outputs, or OmniDocBench metrics over predictions.

    jocr score --tests DIR_OR_JSONL --outputs DIR [--json]
    jocr score --omnidocbench GT.json --predictions DIR [--json]

Outputs follow the olmOCR-Bench layout `<pdf-stem>_pg<page>_repeat<N>.md` (sub-folders mirror the PDFs'). As
in the official runner, a test passes when more than half of its repeats pass, a missing page fails, a
baseline test is added for every PDF that has none, and the overall score is the mean of per-JSONL pass rates
with a 95% bootstrap interval resampled within each JSONL file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

from jocr.cli import CliError

# Page files a benchmark folder's pdfs/ may hold (olmOCR-Bench uses PDFs; synthetic sets may use images).
PAGE_SUFFIXES = {".pdf", ".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tests", help="a JSONL file of unit tests, or a folder of them (olmOCR-Bench layout)"
    )
    parser.add_argument("--outputs", help="folder of <pdf-stem>_pg<page>_repeat<N>.md outputs")
    parser.add_argument("--omnidocbench", metavar="GT.json", help="OmniDocBench ground-truth JSON")
    parser.add_argument("--predictions", help="folder of <image-stem>.md predictions (with --omnidocbench)")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of tables")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap samples for the 95%% interval")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")


def run(args: argparse.Namespace) -> int:
    if args.omnidocbench:
        return _run_omnidoc(args)
    if not args.tests or not args.outputs:
        raise CliError("give --tests and --outputs, or --omnidocbench and --predictions")
    return _run_unittests(args)


def _run_omnidoc(args: argparse.Namespace) -> int:
    from jocr.checks.omnidoc import evaluate_dir

    gt = Path(args.omnidocbench)
    if not gt.is_file():
        raise CliError(f"no such file: {gt}")
    if not args.predictions or not Path(args.predictions).is_dir():
        raise CliError("--predictions must be a folder of <image-stem>.md files")
    try:
        scores = evaluate_dir(gt, args.predictions)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise CliError(
            f"{gt} or a page tree in {args.predictions} is not as expected ({type(exc).__name__}: {exc})"
        ) from None
    keys = ("text_edit", "formula_edit", "table_teds", "table_teds_s", "reading_order_edit", "overall")
    out = {k: round(getattr(scores, k), 4) for k in keys}
    if scores.layout is not None:
        out["layout"], out["layout_pages"] = scores.layout, scores.layout_pages
    if args.json:
        print(json.dumps(out))
    else:
        print(f"OmniDocBench-style end-to-end scores over {scores.pages} pages")
        for k in keys:
            print(f"  {k:20s} {out[k]:.4f}")
        if scores.layout is not None:
            from jocr.checks.omnidoc_layout import MIN_IOU, layout_table

            print(f"\nlayout boxes matched at IoU >= {MIN_IOU} over {scores.layout_pages} pages with a tree")
            print("\n".join(layout_table(scores.layout)))
    return 0


def _load(tests_arg: str):
    from jocr.checks.unittests import ValidationError, load_tests

    path = Path(tests_arg)
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        pdf_root = path / "pdfs"
    elif path.is_file():
        files = [path]
        pdf_root = path.parent / "pdfs"
    else:
        raise CliError(f"no such file or folder: {path}")
    if not files:
        raise CliError(f"no .jsonl files in {path}")
    tests, group = [], {}
    for f in files:
        try:
            loaded = load_tests(f)
        except (ValidationError, OSError, UnicodeDecodeError) as exc:
            raise CliError(str(exc)) from None
        for t in loaded:
            if t.id in group:
                raise CliError(f"duplicate test id {t.id!r} in {f.name} and {group[t.id]}")
            group[t.id] = f.name
        tests.extend(loaded)
    pages = pdf_root.rglob("*") if pdf_root.is_dir() else []
    pdfs = sorted(str(p.relative_to(pdf_root)) for p in pages if p.suffix.lower() in PAGE_SUFFIXES)
    if not path.is_dir():  # a single JSONL: only the PDFs its tests mention
        pdfs = [p for p in pdfs if p in {t.pdf for t in tests}]
    return tests, group, pdfs


def _bootstrap(groups: dict[str, list[float]], n: int, seed: int) -> tuple[float, float]:
    """95% interval of the mean of per-group means, resampling tests within each group."""
    rng = random.Random(seed)
    means = []
    for _ in range(n):
        per_group = [sum(rng.choice(v) for _ in v) / len(v) for v in groups.values() if v]
        means.append(sum(per_group) / len(per_group))
    means.sort()
    if not means:
        return 0.0, 0.0
    return means[int(0.025 * (len(means) - 1))], means[int(round(0.975 * (len(means) - 1)))]


def _run_unittests(args: argparse.Namespace) -> int:
    from jocr.checks.unittests import BaselineTest

    tests, group, pdfs = _load(args.tests)
    outputs = Path(args.outputs)
    if not outputs.is_dir():
        raise CliError(f"--outputs must be a folder: {outputs}")
    for pdf in pdfs:
        if not any(t.type == "baseline" and t.pdf == pdf for t in tests):
            t = BaselineTest(id=f"{pdf}_baseline", pdf=pdf, page=1, type="baseline")
            tests.append(t)
            group[t.id] = "baseline"
    md_files = [str(p.relative_to(outputs)) for p in outputs.rglob("*.md")]
    cache: dict[str, str] = {}
    verdicts: dict[str, bool] = {}
    scores: dict[str, float] = {}
    missing = 0
    for test in tests:
        stem = os.path.splitext(test.pdf)[0]  # as olmOCR-Bench names candidate files
        pattern = re.compile(rf"^{re.escape(stem)}_pg{test.page}_repeat\d+\.md$")
        repeats = [f for f in md_files if pattern.match(f)]
        if not repeats:
            missing += 1
            verdicts[test.id], scores[test.id] = False, 0.0
            continue
        passes, graded = 0, 0.0
        for rel in repeats:
            if rel not in cache:
                cache[rel] = (outputs / rel).read_text(encoding="utf-8", errors="replace")
            try:
                result = test.run(cache[rel])
            except Exception:  # a test that crashes on an output fails, as in the official runner
                continue
            passes += result.passed
            graded += result.score
        verdicts[test.id] = passes / len(repeats) > 0.5
        scores[test.id] = graded / len(repeats)

    by_group: dict[str, list[float]] = defaultdict(list)
    by_type: dict[str, list[float]] = defaultdict(list)
    for test in tests:
        by_group[group[test.id]].append(float(verdicts[test.id]))
        by_type[test.type].append(float(verdicts[test.id]))
    rates = {g: sum(v) / len(v) for g, v in by_group.items()}
    overall = sum(rates.values()) / len(rates)
    lo, hi = _bootstrap(by_group, args.bootstrap, args.seed)
    summary = {
        "overall": round(overall, 4),
        "ci95": [round(lo, 4), round(hi, 4)],
        "tests": len(tests),
        "missing_outputs": missing,
        "per_jsonl": {g: round(r, 4) for g, r in sorted(rates.items())},
        "per_type": {t: round(sum(v) / len(v), 4) for t, v in sorted(by_type.items())},
        "graded_mean": round(sum(scores.values()) / len(scores), 4),
    }
    if args.json:
        print(json.dumps({**verdicts, "_summary": summary}, indent=1))
        return 0
    out = sys.stdout
    out.write(
        f"Overall: {overall * 100:.1f}% (95% CI [{lo * 100:.1f}%, {hi * 100:.1f}%]) over {len(tests)} tests"
    )
    out.write(
        (f", {missing} without outputs" if missing else "")
        + "\n\n| JSONL | tests | pass rate |\n|---|---|---|\n"
    )
    for g, r in sorted(rates.items()):
        out.write(f"| {g} | {len(by_group[g])} | {r * 100:.1f}% |\n")
    out.write("\n| test type | tests | pass rate |\n|---|---|---|\n")
    for t, v in sorted(by_type.items()):
        out.write(f"| {t} | {len(v)} | {sum(v) / len(v) * 100:.1f}% |\n")
    return 0
