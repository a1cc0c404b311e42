"""`jocr synth OUTDIR --pages N --seed S`: synthetic pages with ground-truth Markdown and unit tests.

The folder follows the olmOCR-Bench layout (docs/synth.md): `jocr score --tests OUTDIR --outputs OUTDIR/gt`
scores the ground truth itself (100%). Same arguments, same bytes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jocr.cli import CliError


def _strength(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a strength between 0 and 1, got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a strength in (0, 1], got {value}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from jocr.synth import FROZEN_TEST_SETS, PROFILES, SPLIT_BASE

    parser.add_argument("outdir", help="output folder (created; must not hold an earlier run unless --force)")
    parser.add_argument("--pages", type=_positive, default=10, help="number of pages (default 10)")
    parser.add_argument("--seed", type=_non_negative, default=0, help="first seed offset within the split")
    parser.add_argument(
        "--split", choices=sorted(SPLIT_BASE), default="train", help="seed range (default train)"
    )
    parser.add_argument(
        "--profile",
        choices=sorted([*PROFILES, *DOCQA_PROFILES]),
        default="cpu-small",
        help="page profile; vector: real PDFs with text layers typeset by Chromium (always --format pdf); "
        "docqa: invoices, receipts, forms and letters (EN/ZH) as vector PDFs with scanned and photographed "
        "copies, their fields and questions with exact answers; docqa-charts: charts (bar, line, pie) and "
        "data tables (EN/ZH) the same way, each chart with a reference caption and its box; docqa-prose: "
        "manual title pages and notes (EN/ZH) whose facts sit inside sentences, the same way",
    )
    parser.add_argument(
        "--degrade",
        nargs="?",
        const=True,
        default=False,
        type=_strength,
        metavar="STRENGTH",
        help="degrade pages (blur, noise, JPEG, rotation, low contrast, scan artefacts); optional fixed "
        "strength in (0, 1], random per page otherwise; clean twins go to OUTDIR/clean",
    )
    parser.add_argument(
        "--format",
        dest="page_format",
        choices=("png", "pdf"),
        default="png",
        help="page files: PNG images (default) or one-page PDFs holding the image at 144 dpi (the vector "
        "profile always writes vector PDFs with text layers)",
    )
    parser.add_argument("--workers", type=_positive, default=1, help="processes (default 1)")
    parser.add_argument(
        "--vector-blocks",
        type=_positive,
        default=60,
        help="vector profile: at most this many content blocks per page (default 60, a full page; a few "
        "give short pages whose Markdown fits a training sequence)",
    )
    parser.add_argument(
        "--frozen",
        choices=sorted(FROZEN_TEST_SETS),
        help="write a frozen test set from its recipe (overrides --pages/--seed/--split/--profile/--degrade)",
    )
    parser.add_argument(
        "--ocr-copies",
        type=_positive,
        metavar="N",
        help="add to OUTDIR's vector pages (an earlier --profile vector run) scanned and photographed copies "
        "of the first N, read by OCR (OUTDIR/ocr/: image + lines), for training on OCR anchors; copies "
        "already there are kept",
    )
    parser.add_argument(
        "--ocr",
        choices=("rapidocr", "tesseract"),
        default="rapidocr",
        help="the engine that reads --ocr-copies (default rapidocr, the default of jocr parse)",
    )
    parser.add_argument(
        "--no-copies",
        action="store_true",
        help="docqa profiles: the PDFs only, without their scanned and photographed copies (training reads "
        "only the PDFs; the copies are most of a document's time)",
    )
    parser.add_argument("--force", action="store_true", help="write into a folder that holds an earlier run")


def run(args: argparse.Namespace) -> int:
    from jocr.synth import FROZEN_TEST_SETS, FontMissingError, write_dataset
    from jocr.synth.fonts import check_fonts

    outdir = Path(args.outdir)
    if outdir.exists() and not outdir.is_dir():
        raise CliError(f"{outdir} exists and is not a folder")
    if args.ocr_copies:
        return _run_ocr_copies(outdir, args.ocr_copies, args.ocr)
    if (outdir / "manifest.json").exists() and not args.force:
        raise CliError(f"{outdir} already holds generated pages (manifest.json); pass --force to overwrite")
    pages, seed, split, profile, degrade = args.pages, args.seed, args.split, args.profile, args.degrade
    if args.frozen:
        recipe = FROZEN_TEST_SETS[args.frozen]
        pages, seed, split = recipe["pages"], recipe["seed"], recipe["split"]
        profile, degrade = recipe["profile"], recipe["degrade"]
    if args.no_copies and profile not in DOCQA_PROFILES:
        raise CliError(
            f"--no-copies is for the {', '.join(DOCQA_PROFILES)} profiles "
            "(their scanned and photographed copies)"
        )
    if profile == "vector":
        return _run_vector(outdir, pages, seed, split, args)
    if profile in DOCQA_PROFILES:
        return _run_docqa(outdir, pages, seed, split, args, profile)
    try:
        check_fonts(cjk=profile in ("page", "dense"))
        start = time.perf_counter()
        summary = write_dataset(
            outdir,
            pages=pages,
            seed=seed,
            split=split,
            profile=profile,
            degrade=degrade,
            workers=args.workers,
            page_format=args.page_format,
        )
    except FontMissingError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write to {outdir}: {exc.strerror or exc}") from None
    elapsed = time.perf_counter() - start
    print(
        f"wrote {summary.pages} {profile} pages ({split} seeds {seed}..{seed + pages - 1}) to {outdir} in "
        f"{elapsed:.1f} s; {summary.tests} unit tests in {summary.jsonl.name}, "
        f"{summary.tests_dropped} dropped (failed on their own ground truth)"
    )
    return 0


def _run_ocr_copies(outdir: Path, pages: int, engine: str) -> int:
    from jocr.lines.ocr import engine_available
    from jocr.train.ocr_copies import write_ocr_copies

    if not engine_available(engine):
        raise CliError(f"the OCR engine {engine} is not installed (scripts/setup.sh installs both)")
    start = time.perf_counter()
    try:
        written = write_ocr_copies(outdir, pages, engine, log=lambda m: print(m, file=sys.stderr))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write to {outdir}: {exc.strerror or exc}") from None
    print(f"wrote {written} OCR copies ({engine}) to {outdir / 'ocr'} in {time.perf_counter() - start:.1f} s")
    return 0


def _run_vector(outdir: Path, pages: int, seed: int, split: str, args) -> int:
    from jocr.synth.vector import write_vector_dataset

    if args.degrade is not False:
        raise CliError("--degrade does not apply to the vector profile (its pages are PDFs, not images)")
    if args.workers > 1:
        raise CliError("the vector profile renders with one browser: use --workers 1")
    start = time.perf_counter()
    manifest = _typeset(
        outdir,
        "vector pages",
        lambda: write_vector_dataset(
            outdir, pages=pages, seed=seed, split=split, max_blocks=args.vector_blocks
        ),
    )
    print(
        f"wrote {pages} vector PDF pages ({split} seeds {seed}..{seed + pages - 1}) to {outdir} in "
        f"{time.perf_counter() - start:.1f} s; {manifest['tests']} unit tests in vector_{split}.jsonl, "
        f"{manifest['tests_dropped']} dropped (failed on their own ground truth)"
    )
    return 0


DOCQA_PROFILES = ("docqa", "docqa-charts", "docqa-prose")


def _docqa_writer(profile: str):
    """The dataset writer of an asking profile: `write(outdir, pages=, seed=, split=)`."""
    from functools import partial

    from jocr.synth.charts import write_charts_dataset
    from jocr.synth.docqa import write_docqa_dataset
    from jocr.synth.prose_qa import PROSE_VERSION, make_prose_document

    if profile == "docqa-charts":
        return write_charts_dataset
    if profile == "docqa-prose":
        versions = {"prose_version": PROSE_VERSION}
        return partial(write_docqa_dataset, make=make_prose_document, profile=profile, versions=versions)
    return write_docqa_dataset


def _run_docqa(outdir: Path, pages: int, seed: int, split: str, args, profile: str = "docqa") -> int:
    if args.degrade is not False or args.workers > 1:
        raise CliError(
            f"the {profile} profile writes its own scanned and photographed copies with one browser: "
            "drop --degrade and --workers"
        )
    start = time.perf_counter()
    write = _docqa_writer(profile)
    copies = not args.no_copies
    manifest = _typeset(
        outdir, "documents", lambda: write(outdir, pages=pages, seed=seed, split=split, copies=copies)
    )
    print(
        f"wrote {pages} documents ({split} seeds {seed}..{seed + pages - 1}) to {outdir} in "
        f"{time.perf_counter() - start:.1f} s; {manifest['questions']} questions in docqa_{split}.jsonl"
    )
    return 0


def _typeset(outdir: Path, what: str, write):
    """`write()` (a writer that prints pages with one Chromium) with its failures as one-line CLI errors."""
    try:
        return write()
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write to {outdir}: {exc.strerror or exc}") from None
    except Exception as exc:  # the browser could not start (playwright or chromium missing)
        raise CliError(f"cannot typeset {what} with Chromium: {' '.join(str(exc).split())[:200]}") from None
