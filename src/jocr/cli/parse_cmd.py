"""`jocr parse INPUT...`: PDFs, images, folders, globs and URLs -> `<stem>.md` (and `<stem>.json` or
`<stem>.html`)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from jocr.cli import CliError
from jocr.documents.naming import output_stems, printable


def add_arguments(parser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="PDF/image files, folders, globs or URLs")
    parser.add_argument(
        "-o", "--output-dir", default=".", help="where <stem>.md / <stem>.json go (default: .)"
    )
    parser.add_argument("--pages", help="1-based pages of every input, e.g. 1-3,7 or 10-")
    parser.add_argument(
        "--format",
        choices=("md", "json", "html"),
        default="md",
        help="json also writes <stem>.json (each page's document tree with it), html also writes <stem>.html",
    )
    parser.add_argument("--model", help="model directory (default: $JOCR_MODEL or the bundled models/)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    add_format_arguments(parser)
    parser.add_argument(
        "--max-tiles",
        type=int,
        help="tile-count limit per page (default: the model's; DeepSeek-OCR 9, vLLM 6)",
    )
    parser.add_argument("--max-tokens", type=int, default=4096, help="output tokens per page (default: 4096)")
    parser.add_argument("--spec", default="auto", help="speculative draft tokens: auto, 0 (off) or k")
    parser.add_argument("--batch-size", type=int, default=8, help="pages decoded together (default: 8)")
    parser.add_argument(
        "--prompt", help="task (ocr, free, grounding, table, formula, caption) or prompt text"
    )
    parser.add_argument("--dpi", type=float, default=144.0, help="PDF render resolution (default: 144)")
    parser.add_argument(
        "--longest-side", type=int, help="render PDF pages to this many pixels (overrides --dpi)"
    )
    parser.add_argument("--skip-existing", action="store_true", help="skip inputs whose outputs exist")
    parser.add_argument("--password", help="password for encrypted PDFs")
    parser.add_argument("--no-page-marker", action="store_true", help="join pages with a blank line only")
    parser.add_argument(
        "--keep-blank-pages", action="store_true", help="also read pages without ink (default: empty)"
    )
    add_anchor_argument(parser)
    add_ocr_argument(parser)
    add_element_arguments(parser)
    parser.add_argument(
        "--draw",
        action="store_true",
        help="also write <stem>_p<N>_layout.png: each page with its blocks drawn, numbered in reading order",
    )
    parser.add_argument(
        "--figures",
        choices=("none", "files", "inline"),
        default="files",
        help="figures cut out of pages: files (<stem>_p<N>_fig<K>.png beside the Markdown; default), inline "
        "(data: URIs in the Markdown), none (no image; captions stay)",
    )
    parser.add_argument(
        "--captions",
        choices=("none", "generate"),
        default="none",
        help="generate: each figure without a printed caption gets the model's caption as generated_caption "
        "in the page JSON (--format json; never in the Markdown); none (default)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def add_element_arguments(parser) -> None:
    """--task / --region (jocr.layout.elements, docs/elements.md)."""
    parser.add_argument(
        "--task",
        choices=("page", "table", "formula", "caption"),
        default="page",
        help="page (default): the whole page as Markdown; table/formula/caption: that element alone",
    )
    parser.add_argument(
        "--region",
        metavar="X0,Y0,X1,Y1",
        help="with --task: the element's box in the page's unit (PDF points, image pixels; default: the "
        "whole page)",
    )


def run_elements(args) -> int:
    """`jocr parse --task table|formula|caption [--region ...]`: each input's element per selected page to
    <stem>.md (and <stem>.json with --format json); a page where none is found gets its note on stderr."""
    from jocr.documents.pages import DocumentError, LoadOptions, expand_inputs
    from jocr.layout.elements import RegionError, check_task, parse_region
    from jocr.pipeline import ModelNotFoundError, load_model
    from jocr.pipeline.elements import needs_model, parse_element

    try:
        task = check_task(args.task)
        region = parse_region(args.region)
        if task == "page":
            raise RegionError("--region needs --task table, formula or caption")
        items = expand_inputs(args.inputs)
    except (RegionError, DocumentError) as exc:
        raise CliError(printable(str(exc))) from None
    out_dir = Path(args.output_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create output folder {out_dir}: {exc.strerror or exc}") from None
    model = None
    if needs_model(task):
        try:
            model = load_model(args.model, device=args.device, dtype=args.dtype, quantize=args.quantize,
                               max_tiles=args.max_tiles)  # fmt: skip
        except (ModelNotFoundError, ValueError, MemoryError) as exc:
            raise CliError(str(exc)) from None
    options = LoadOptions(dpi=args.dpi, longest_side=args.longest_side, password=args.password)
    failed = 0
    for item, stem in zip(items, output_stems(items)):
        try:
            doc = parse_element(item, task, region, args.pages, model, options, args.ocr,
                                max_tokens=args.max_tokens, anchor=args.anchor)  # fmt: skip
        except (RegionError, DocumentError) as exc:
            raise CliError(printable(f"{item}: {exc}")) from None
        if doc.error:
            failed += 1
            print(printable(f"jocr parse: {doc.error}"), file=sys.stderr)
            continue
        for page, note in zip(doc.pages, doc.metadata.get("notes", [])):
            if note:
                print(printable(f"jocr parse: {item} p{page.page}: {note}"), file=sys.stderr)
        try:
            write_atomic(out_dir / f"{stem}.md", doc.markdown + "\n")
            if args.format == "json":
                write_atomic(
                    out_dir / f"{stem}.json", json.dumps(doc.to_dict(), ensure_ascii=False, indent=1)
                )
        except OSError as exc:
            failed += 1
            print(
                printable(f"jocr parse: cannot write {exc.filename}: {exc.strerror or exc}"), file=sys.stderr
            )
    return 1 if failed else 0


def add_anchor_argument(parser) -> None:
    """--anchor, shared by `jocr parse`, `jocr serve` and `jocr batch` (jocr.lines.anchor.page_anchor)."""
    parser.add_argument(
        "--anchor",
        choices=("auto", "on", "off"),
        default="auto",
        help="put a PDF page's text layer in the prompt: auto (when the model was trained with anchors and "
        "the layer is usable; default), on, off",
    )


def add_ocr_argument(parser, default: str = "auto", help: str | None = None) -> None:
    """--ocr (jocr.lines.source.page_lines): the OCR line source of images and PDF pages without a usable
    text layer."""
    parser.add_argument(
        "--ocr",
        choices=("auto", "rapidocr", "tesseract", "none"),
        default=default,
        help=help
        or "read images and PDF pages without a usable text layer with OCR: auto (the installed default "
        "engine; default), rapidocr, tesseract, none",
    )


def add_format_arguments(parser) -> None:
    """--dtype / --quantize, shared by `jocr parse` and `jocr serve` (jocr.model.formats)."""
    parser.add_argument(
        "--dtype",
        choices=("auto", "float32", "bfloat16"),
        default="auto",
        help="weight format (default auto: the fastest that rounds nothing; docs/model.md)",
    )
    parser.add_argument(
        "--quantize",
        choices=("none", "int8"),
        default="none",
        help="int8: weight-only int8 decoder on a CPU (lossy, opt-in; default none)",
    )


def write_atomic(path: Path, text: str) -> None:
    """Write to a new temporary file in the same folder, then rename: readers never see half a file. The
    temporary file is created by `mkstemp` (a fresh, short name, opened exclusively: a link planted in the
    folder is never followed) and given the permissions a plain new file would have."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".jocr-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):  # named after the file being written, not its temporary name
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


def checked_pages_and_spec(args):
    """--pages checked and --spec normalised, as `jocr parse` and `jocr batch` take them (one-line errors)."""
    from jocr.documents.pages import parse_page_ranges
    from jocr.pipeline import normalise_spec

    if args.pages:
        try:
            parse_page_ranges(args.pages)
        except ValueError as exc:
            raise CliError(f"--pages: {exc}") from None
    try:
        return normalise_spec(args.spec)
    except ValueError as exc:
        raise CliError(f"--spec: {exc}") from None


def unread_note(page) -> str | None:
    """Why an OCR engine could not read a page (a blank or noisy image, one too large, narrow or long, an
    engine past its time limit): the page's note when OCR was tried and gave no lines, so that a page
    written empty or down the image-only path says why on stderr, not only in --format json."""
    from jocr.lines.types import RAPIDOCR, TESSERACT

    anchor = page.anchor
    if anchor is None or anchor.anchored or not anchor.note or anchor.source not in (RAPIDOCR, TESSERACT):
        return None
    return anchor.note


def run(args) -> int:
    from jocr.documents.pages import DocumentError, LoadOptions, expand_inputs
    from jocr.layout.figures import save_page_figures
    from jocr.pipeline import ModelNotFoundError, iter_documents, load_model
    from jocr.pipeline.caption import check_captions_mode, generate_captions, is_caption_prompt

    if getattr(args, "task", "page") == "page" and is_caption_prompt(args.prompt):
        args.task = "caption"  # the caption prompt is the caption task (jocr.pipeline.caption)
    if getattr(args, "task", "page") != "page" or getattr(args, "region", None) is not None:
        return run_elements(args)
    spec = checked_pages_and_spec(args)
    if args.max_tokens < 1:
        raise CliError("--max-tokens must be >= 1")
    if args.batch_size < 1:
        raise CliError("--batch-size must be >= 1")
    if args.dpi <= 0:
        raise CliError("--dpi must be > 0")
    if args.longest_side is not None and args.longest_side < 16:
        raise CliError("--longest-side must be >= 16")
    try:
        captions = check_captions_mode(args.captions, args.figures)
    except ValueError as exc:
        raise CliError(f"--captions: {exc}") from None
    try:
        items = expand_inputs(args.inputs)
    except DocumentError as exc:
        raise CliError(printable(str(exc))) from None

    out_dir = Path(args.output_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create output folder {out_dir}: {exc.strerror or exc}") from None
    stems = output_stems(items)
    suffixes = (".md",) if args.format == "md" else (".md", f".{args.format}")
    todo = [
        (item, stem)
        for item, stem in zip(items, stems)
        if not (args.skip_existing and all((out_dir / f"{stem}{s}").exists() for s in suffixes))
    ]
    skipped = len(items) - len(todo)
    if not todo:
        print(f"jocr parse: nothing to do ({skipped} input(s) already parsed)", file=sys.stderr)
        return 0

    try:
        model = load_model(
            args.model, device=args.device, dtype=args.dtype, quantize=args.quantize, max_tiles=args.max_tiles
        )
    except (ModelNotFoundError, ValueError, MemoryError) as exc:
        raise CliError(str(exc)) from None
    except Exception as exc:  # a broken checkpoint: one line, not a traceback
        raise CliError(f"cannot load model: {' '.join(str(exc).split())[:300]}") from None
    try:
        model.engine(spec, args.batch_size)
    except ValueError as exc:
        raise CliError(str(exc)) from None

    options = LoadOptions(dpi=args.dpi, longest_side=args.longest_side, password=args.password)
    names = [item for item, _ in todo]

    from tqdm import tqdm

    # Each input is opened once, by the pipeline: the bar's total grows by its pages as it is opened.
    bar = tqdm(total=0, unit="page", disable=args.quiet, file=sys.stderr, dynamic_ncols=True)

    # Opened inputs in input order (each paired with its stem) and their finished pages, so an interrupted
    # run still writes what it has read (`write_partial`).
    opened: list = []
    finished: dict[int, list] = {}

    def on_open(doc) -> None:
        opened.append(doc)
        bar.total += len(doc.pages)
        bar.refresh()

    def on_page(doc, page) -> None:
        if page.error is None:
            finished.setdefault(id(doc), []).append(page)
        bar.set_postfix_str(printable(f"{Path(doc.source).name} p{page.page}"), refresh=False)
        bar.update(1)

    def write_partial(written: set[int]) -> None:
        """After Ctrl-C: each unfinished input's finished pages to `<stem>.partial.md`, in page order."""
        from jocr.pipeline.results import Document

        for doc, (_, stem) in zip(opened, todo):
            pages = sorted(finished.get(id(doc), []), key=lambda p: p.page)
            if id(doc) in written or not pages:
                continue
            marker = None if args.no_page_marker else doc.page_marker
            partial = Document(doc.source, pages=pages, page_marker=marker)
            target = out_dir / f"{stem}.partial.md"
            try:
                write_atomic(target, partial.markdown + "\n")
            except OSError as exc:
                print(printable(f"jocr parse: cannot write {target}: {exc.strerror or exc}"), file=sys.stderr)
                continue
            shown = ",".join(str(p.page) for p in pages)
            print(
                printable(f"jocr parse: interrupted: pages {shown} of {doc.source} -> {target}"),
                file=sys.stderr,
            )

    def write_outputs(doc, stem: str) -> str | None:
        """Write one document's files; a failure is that document's alone (one line), never the run's."""
        try:
            save_page_figures(doc.pages, out_dir, stem, args.figures)  # names them after `stem` first
            write_atomic(out_dir / f"{stem}.md", doc.markdown + "\n")
            if args.format == "json":
                write_atomic(
                    out_dir / f"{stem}.json", json.dumps(doc.to_dict(), ensure_ascii=False, indent=1)
                )
            elif args.format == "html":
                write_atomic(out_dir / f"{stem}.html", doc.html)
            if args.draw:
                draw_pages(doc, stem)
        except OSError as exc:
            return f"cannot write {exc.filename or out_dir / stem}: {exc.strerror or exc}"
        return None

    def draw_pages(doc, stem: str) -> None:
        """`<stem>_p<N>_layout.png` for each page with a tree (the page rendered again, as it was read)."""
        from jocr.documents.pages import DocumentError, open_source
        from jocr.layout.draw import draw_tree, save_drawn

        pages = [p for p in doc.pages if p.tree is not None and p.error is None]
        if not pages:
            return
        try:
            source = open_source(doc.source, options, name=doc.source)
        except DocumentError:
            return
        with source:
            for page in pages:
                try:
                    image = source.render(page.page - 1)
                except DocumentError:
                    continue
                if page.anchor is not None:  # a page OCR read turned: its tree is in the upright frame
                    image = page.anchor.upright(image)
                target = out_dir / f"{stem}_p{page.page}_layout.png"
                tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
                try:
                    save_drawn(draw_tree(image, page.tree), tmp)
                    os.replace(tmp, target)
                finally:
                    if tmp.exists():
                        tmp.unlink()

    started = time.perf_counter()
    done_docs = failed_docs = done_pages = out_tokens = 0
    documents = iter_documents(
        names,
        model,
        pages=args.pages,
        max_tokens=args.max_tokens,
        spec=spec,
        batch_size=args.batch_size,
        prompt=args.prompt,
        options=options,
        names=names,
        on_page=on_page,
        on_open=on_open,
        skip_blank=not args.keep_blank_pages,
        anchor=args.anchor,
        ocr=args.ocr,
        figures=args.figures,
    )
    written: set[int] = set()
    try:
        # Documents come back in input order, so they pair with their stems.
        for (_, stem), doc in zip(todo, documents):
            written.add(id(doc))
            if args.no_page_marker:
                doc.page_marker = None
            if doc.error and not any(p.error is None for p in doc.pages):
                failed_docs += 1
                bar.write(printable(f"jocr parse: {doc.error}"), file=sys.stderr)
                continue
            if captions == "generate":
                generate_captions(doc, model, anchor=args.anchor, ocr=args.ocr)
            failure = write_outputs(doc, stem)
            if failure is not None:
                failed_docs += 1
                bar.write(printable(f"jocr parse: {doc.source}: {failure}"), file=sys.stderr)
                continue
            good = [p for p in doc.pages if p.error is None]
            for page in good:
                note = unread_note(page)
                if note:
                    bar.write(printable(f"jocr parse: {doc.source} p{page.page}: {note}"), file=sys.stderr)
            done_pages += len(good)
            out_tokens += sum(p.num_tokens for p in good)
            if doc.error:
                # Some pages failed to render: the others are written, the input still counts as failed.
                failed_docs += 1
                bar.write(printable(f"jocr parse: {doc.error} (other pages written)"), file=sys.stderr)
            else:
                done_docs += 1
    except KeyboardInterrupt:
        bar.close()
        documents.close()  # cancels the pages in flight
        write_partial(written)
        raise
    finally:
        bar.close()
    elapsed = time.perf_counter() - started
    rate = done_pages / elapsed if elapsed > 0 else 0.0
    summary = (
        f"jocr parse: {done_docs} of {len(todo)} input(s) parsed, {done_pages} page(s), "
        f"{out_tokens} tokens in {elapsed:.1f} s ({rate:.2f} pages/s)"
    )
    if skipped:
        summary += f", {skipped} skipped (outputs exist)"
    if failed_docs:
        summary += f", {failed_docs} failed"
    print(printable(summary + f" -> {out_dir}"), file=sys.stderr)
    return 1 if failed_docs else 0
