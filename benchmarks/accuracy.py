"""Accuracy on the frozen synthetic test set: jocr checkpoints side by side with Tesseract and RapidOCR.

With `--bench DIR` it scores real PDFs in the olmOCR-Bench layout instead (benchmarks/accuracy_pdf.py):
each model with and without the anchor, the plain text layer (`--baseline textlayer`), Tesseract, RapidOCR.
With `--suite real` it scores every real-page set in one run (benchmarks/accuracy_sets.py): the olmOCR-Bench
sample, the frozen real pages as PDFs, scans and photos (data/frozen-real), the OmniDocBench demo; rows for
the default `jocr parse`, the line source alone with the same rules, Tesseract and RapidOCR.

    .venv/bin/python benchmarks/accuracy.py --model sft=runs/sft/final --model grpo=runs/grpo/final \
        --model merged=models --baseline tesseract --baseline rapidocr --pages 200

Columns (all from jocr.checks, the code GRPO is rewarded with): olmOCR-style unit-test pass rate over all
tests of the pages, mean normalised text edit distance to the ground truth (lower is better), table TEDS over
pages with tables, formula match over pages with formulas, output tokens per page next to the ground truth's
own token count (both with the bundled tokenizer), and pages/s (wall clock, one process, this machine).
Outputs are cached under --out/<name>.jsonl; --reuse rescores them without decoding again.
The baselines are benchmark-only extras (benchmarks/baselines.py): `apt-get install tesseract-ocr` and
`pip install rapidocr onnxruntime`; a baseline that is not installed is reported as such and skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

import baselines
from jocr.train.evaluate import (
    frozen_test_pages,
    greedy_outputs,
    heldout_test_pages,
    paired_difference,
    score_page,
    summarise,
)


def tesseract_outputs(pages) -> list[tuple[str, int, str]]:
    return [(baselines.tesseract_text(p.image), 0, "stop") for p in pages]


def rapidocr_outputs(pages) -> list[tuple[str, int, str]]:
    return [(baselines.rapidocr_text(p.image), 0, "stop") for p in pages]


BASELINES = {"tesseract": tesseract_outputs, "rapidocr": rapidocr_outputs}
REPO = Path(__file__).resolve().parents[1]


def parse_outputs(model_dir: str, pages) -> list[tuple[str, int, str]]:
    """What the default `jocr parse` writes for each page image (`jocr.parse` with its defaults: the line
    source and its rules where they read the page, the model elsewhere); a page that fails scores empty."""
    import jocr

    model = jocr.load_model(model_dir)
    docs = jocr.parse([p.image for p in pages], model=model, raise_errors=False)
    return [(d.markdown if d.error is None else "", 0, "stop") for d in docs]


def run_system(name: str, source: str, pages, args) -> tuple[list[tuple[str, int, str]], float]:
    t0 = time.perf_counter()
    if source in BASELINES:
        outs = BASELINES[source](pages)
    elif source.startswith("parse:"):
        outs = parse_outputs(source.removeprefix("parse:"), pages)
    else:
        from jocr.model import OCRModel
        from jocr.tokenizer import Tokenizer

        model = OCRModel.from_pretrained(source, dtype=torch.float32).eval()
        tok = Tokenizer.from_dir(source)
        outs = greedy_outputs(
            model, tok, [p.image for p in pages], max_tokens=args.max_tokens, batch_size=args.batch_size
        )
    return outs, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", default=[], metavar="NAME=DIR", help="a jocr model directory")
    ap.add_argument("--baseline", action="append", default=[], choices=sorted(BASELINES) + ["textlayer"])
    ap.add_argument(
        "--parse",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="synthetic pages through the default `jocr.parse` with this model (not the model alone)",
    )
    ap.add_argument(
        "--bench",
        metavar="DIR",
        help="real PDFs in the olmOCR-Bench layout (pdfs/, *.jsonl) instead of synth",
    )
    ap.add_argument(
        "--suite",
        choices=("real",),
        help="every real-page set in one run (benchmarks/accuracy_sets.py) instead of synth",
    )
    ap.add_argument(
        "--systems", help="with --suite: comma-separated subset of parse,lines,tesseract,rapidocr"
    )
    ap.add_argument("--sets", help="with --suite: comma-separated subset of the sets (default all)")
    ap.add_argument(
        "--page-ids",
        help="with --suite: comma-separated page file stems (rintro-p007,...): only those pages, their tests",
    )
    ap.add_argument("--olmocr-sample", default=str(REPO / "tests/data/olmocr-bench-sample"))
    ap.add_argument(
        "--omnidocbench",
        default=str(REPO.parent / "shared/data/omnidocbench-demo"),
        help="the OmniDocBench demo with its images/ (tests/data holds no images); skipped when absent",
    )
    ap.add_argument("--frozen-real", default=str(REPO / "data/frozen-real"))
    ap.add_argument("--frozen-real2", default=str(REPO / "data/frozen-real2"))
    ap.add_argument("--frozen-real3", default=str(REPO / "data/frozen-real3"))
    ap.add_argument("--frozen-real4", default=str(REPO / "data/frozen-real4"))
    ap.add_argument("--frozen-real5", default=str(REPO / "data/frozen-real5"))
    ap.add_argument("--frozen-real-math", default=str(REPO / "data/frozen-real-math"))
    ap.add_argument("--frozen", default="cpu-small", help="frozen synthetic test set (jocr.synth)")
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument(
        "--heldout",
        type=int,
        default=0,
        metavar="N",
        help="score N more pages of the test split after the frozen set's range instead (same profile; "
        "no stage trains on them), to tell a small change from noise",
    )
    ap.add_argument(
        "--pair",
        action="append",
        default=[],
        metavar="A:B",
        help="print B's pass rate minus A's with its paired standard error over pages (default sft:grpo)",
    )
    ap.add_argument(
        "--anchor",
        choices=("both", "on", "off", "auto"),
        default="both",
        help="with --bench: each model read with its anchor, without it, both (default), or as `jocr parse` "
        "reads by default (auto: anchored where the model reads anchors and the layer is usable)",
    )
    ap.add_argument("--tokenizer", default="models", help="tokenizer.json (or its dir) that counts tokens")
    ap.add_argument(
        "--max-tokens",
        type=int,
        help="tokens per request (default 480; with --suite, jocr.parse's own default)",
    )
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="runs/accuracy")
    ap.add_argument("--reuse", action="store_true", help="rescore cached outputs instead of decoding again")
    ap.add_argument(
        "--answer-cache",
        metavar="DIR",
        help="with --suite: keep the model's answers in DIR and answer requests seen before from it "
        "(benchmarks/answer_cache.py): page assembly changes scored on the same answers",
    )
    ap.add_argument(
        "--ocr-cache",
        metavar="DIR",
        help="with --suite: keep RapidOCR's readings of `jocr parse`'s OCR'd pages in DIR and reuse them "
        "(benchmarks/ocr_cache.py): the same images read once for two code versions",
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.suite:
        import accuracy_sets

        if args.ocr_cache:
            from ocr_cache import use_ocr_cache

            use_ocr_cache(Path(args.ocr_cache))

        models = [m.split("=", 1)[-1] for m in args.model]
        if len(models) > 1:
            ap.error("--suite scores one model (the default `jocr parse` row)")
        args.model_dir = models[0] if models else str(REPO / "models")
        if args.out == "runs/accuracy":
            args.out = "runs/accuracy-real"
        return accuracy_sets.run(args)
    args.max_tokens = args.max_tokens or 480
    if args.bench:
        import accuracy_pdf

        if args.out == "runs/accuracy":
            args.out = "runs/accuracy-pdf"
        return accuracy_pdf.run(args)
    if "textlayer" in args.baseline:
        ap.error("--baseline textlayer needs --bench (synthetic pages have no text layer)")

    from jocr.tokenizer import Tokenizer

    systems = [tuple(m.split("=", 1)) if "=" in m else (Path(m).name, m) for m in args.model]
    systems += [(b, b) for b in args.baseline]
    systems += [(p.split("=", 1)[0], "parse:" + p.split("=", 1)[-1]) for p in args.parse]
    if not systems:
        ap.error("give at least one --model or --baseline")
    if args.heldout:
        pages = heldout_test_pages(args.frozen, args.heldout)
    else:
        pages = frozen_test_pages(args.frozen, args.pages)
    tok_path = Path(args.tokenizer)
    tok = Tokenizer.from_file(tok_path) if tok_path.is_file() else Tokenizer.from_dir(tok_path)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    per_page: dict[str, list[tuple[int, int]]] = {}
    for name, source in systems:
        cache = out_dir / (f"{name}.heldout{args.heldout}.jsonl" if args.heldout else f"{name}.jsonl")
        if args.reuse and cache.is_file():
            recs = [json.loads(line) for line in cache.read_text().splitlines()]
            outs = [(r["text"], r["tokens"], r["finish"]) for r in recs]
            names = [r["name"] for r in recs[: len(pages)]]
            if names != [p.meta["name"] for p in pages]:
                print(
                    f"{name}: cached outputs are not for these {len(pages)} pages; run without --reuse",
                    file=sys.stderr,
                )
                return 2
            seconds = recs[0].get("seconds", float("nan")) if recs else float("nan")
        else:
            try:
                outs, seconds = run_system(name, source, pages, args)
            except ImportError as exc:
                print(f"{name}: not installed ({exc}); skipped", file=sys.stderr)
                continue
            with cache.open("w") as f:
                for p, (text, n, fin) in zip(pages, outs):
                    f.write(
                        json.dumps(
                            {
                                "name": p.meta["name"],
                                "generator": p.meta.get("generator_version"),
                                "text": text,
                                "tokens": n,
                                "finish": fin,
                                "seconds": seconds,
                            }
                        )
                        + "\n"
                    )
        # Output length is measured with one tokenizer for every system (baselines have none of their own).
        scores = [
            score_page(text, page, tok, len(tok.encode(text)) + 1, fin)
            for (text, _, fin), page in zip(outs, pages)
        ]
        summary = summarise(scores)
        # pages/s of the run that produced the outputs (a cached run may have decoded more pages)
        summary["pages_per_s"] = len(outs) / seconds if seconds else float("nan")
        rows.append((name, summary))
        per_page[name] = [(s.tests_passed, s.tests_total) for s in scores]
        print(f"{name}: done ({len(pages)} pages, {seconds:.0f} s)", file=sys.stderr)

    header = (
        "| system | pass rate | edit dist | table TEDS | formula | out tok/page | GT tok/page | pages/s |"
    )
    title = (
        f"held-out pages {pages[0].meta['name']}.. of the test split"
        if args.heldout
        else f"frozen synthetic test set {args.frozen!r}"
    )
    print(
        f"\n{title} (generator {pages[0].meta.get('generator_version')}): "
        f"{len(pages)} pages, "
        f"{rows[0][1]['tests'] if rows else 0} unit tests\n"
    )
    print(header)
    print("|---|---|---|---|---|---|---|---|")
    for name, s in rows:
        cells = [
            f"{100 * s['pass_rate']:.1f}%",
            f"{s['edit']:.3f}",
            f"{s['teds']:.3f} ({s['table_pages']})",
            f"{s['formula']:.3f} ({s['formula_pages']})",
            f"{s['out_tokens']:.1f}",
            f"{s['ref_tokens']:.1f}",
            f"{s['pages_per_s']:.2f}",
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    pairs = [tuple(p.split(":", 1)) for p in args.pair] or [("sft", "grpo")]
    for a, b in pairs:
        if a in per_page and b in per_page:
            delta, se = paired_difference(per_page[a], per_page[b])
            print(f"\npass rate {b} - {a}: {100 * delta:+.2f} points (paired s.e. {100 * se:.2f} over pages)")
    (out_dir / "results.json").write_text(json.dumps({n: s for n, s in rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
