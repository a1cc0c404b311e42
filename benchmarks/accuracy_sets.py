"""Accuracy on real pages, every set in one run: the default `jocr parse` beside its controls.

    .venv/bin/python benchmarks/accuracy.py --suite real --model default=models

Sets (each scored as its benchmark scores it):
- `olmocr-sample`: the olmOCR-Bench sample (`--olmocr-sample`, default tests/data/olmocr-bench-sample):
  unit tests through `jocr score` (mean of per-JSONL pass rates, a baseline test per PDF);
- `real-pdf`, `real-scan`, `real-photo`: the frozen real pages (data/frozen-real, README there) as PDFs,
  scanned and photographed: the same unit tests per variant, plus the normalised edit distance to the
  hand-checked Markdown of the pages that have it (`jocr.checks.markdown_edit`: text with block marks, and
  the block kinds alone), lower is better;
- `real2-pdf`: the second frozen set of born-digital pages (`--frozen-real2`, default data/frozen-real2),
  half of them Chinese, scored the same way;
- `real3-pdf`: the third frozen set of born-digital pages (`--frozen-real3`, default data/frozen-real3),
  mostly English, scored the same way (`real3-scan`, `real3-photo`: its held-out OCR'd copies);
- `real4-pdf`, `real4-scan`, `real4-photo`: the fourth frozen set (`--frozen-real4`, default
  data/frozen-real4), mostly English, the development set for OCR'd pages; scored the same way;
- `real5-pdf`, `real5-scan`, `real5-photo`: the fifth frozen set (`--frozen-real5`, default
  data/frozen-real5), Chinese pages, the development set for Chinese OCR'd pages; scored the same way;
- `real-scanpdf`, `real3-scanpdf`, `real4-scanpdf`, `real5-scanpdf`: the scans of those sets, each put in
  a one-page PDF with no text layer as a scanner writes one (the JPEG re-encoded by Pillow, the page the
  scan's size at the dpi its file records, else `SCAN_DPI`), written under `--out/_scanpdf/`; the scan's
  tests. `jocr parse` renders the page at 144 dpi and reads it from its OCR lines, as any PDF page without
  a usable text layer: the same pages through the PDF path beside the image path (`real3-scanpdf` is held
  out as `real3-scan` is);
- `math-scan`, `math-photo`, `math2-*`, `math3-*`: scanned and photographed copies of the real math sets
  (`--frozen-real-math`, default data/frozen-real-math, its heldout/ and heldout2/; made by
  scripts/make_frozen_real.py), their math tests: formulas read from pixels; `math3` (heldout2) is held
  out for that reading (no formula-from-pixels decision was made on it);
- `omnidocbench-demo` (`--omnidocbench`, default ../shared/data/omnidocbench-demo, which has the images
  that tests/data leaves out): its 18 page images,
  scored like `jocr score --omnidocbench` (text edit, reading-order edit, table TEDS, display-formula edit;
  lower is better except TEDS), and, for the systems with a document tree (`parse`, `lines`), its blocks
  matched to the ground truth's layout boxes (`jocr.checks.omnidoc_layout`; the tree is written as
  `<stem>.json` beside the Markdown).

Systems (`--systems`, all by default):
- `parse`: `jocr.parse` with its defaults (`--anchor auto`: a bundle's anchored member on PDF pages with a
  usable text layer, the image model elsewhere), the model of `--model` (default the bundled `models/`);
- `lines`: the line source alone and no model (benchmarks/baselines.py): the text layer where usable, with
  the page assembly rules (every run written out, page furniture dropped); else jocr's own OCR line source
  (`jocr.lines.ocr.read_image` at its defaults, as `jocr parse` reads the page: turned, deskewed, spaced,
  a photographed sheet's edges; with `--ocr-cache` the very readings of the parse row) through the rules
  over lines (`jocr.layout.line_rules`), without the layout regions and the table pass (`_ocr_lines_text`);
- `tesseract`: Tesseract on the page image (eng, or chi_sim+eng on Chinese pages), one thread;
- `rapidocr`: RapidOCR's lines joined top to bottom.
PDFs are rendered at 144 dpi as `jocr parse` renders them; scans and photos are read as they are.
RapidOCR reads each image once for the `rapidocr` row; the `lines` row's OCR goes through `read_image`
(its time is counted as it comes: with `--ocr-cache` a reading seen before costs next to nothing).
pages/s is wall clock per system and set on this machine (say how loaded it was); CPU seconds per page
(this process's threads and its child processes, `cpu_seconds`) are printed below each table: compare
speed by those on a loaded machine. Outputs go to
`--out/<set>/<system>/` (olmOCR-Bench names) with `_run.json`; `--reuse` rescores a finished system instead
of running it again, so systems can be run one at a time and the tables printed at the end. With
`--answer-cache DIR` the model's answers are kept in DIR and reused by later runs
(benchmarks/answer_cache.py): a change after the model is scored on the very answers the run before it was
scored on. With `--ocr-cache DIR` RapidOCR's readings of the OCR'd pages that `jocr parse` reads are kept in
DIR (benchmarks/ocr_cache.py), so two code versions read the same images once.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import baselines
from accuracy_pdf import score as score_tests
from jocr.documents.pages import LoadOptions, open_source

REPO = Path(__file__).resolve().parents[1]
SYSTEMS = ("parse", "lines", "tesseract", "rapidocr")
SET_NAMES = (
    "olmocr-sample",
    "real-pdf",
    "real-scan",
    "real-photo",
    "real2-pdf",
    "real3-pdf",
    "real3-scan",
    "real3-photo",
    "real4-pdf",
    "real4-scan",
    "real4-photo",
    "real5-pdf",
    "real5-scan",
    "real5-photo",
    "real-scanpdf",
    "real3-scanpdf",
    "real4-scanpdf",
    "real5-scanpdf",
    "math-scan",
    "math-photo",
    "math2-scan",
    "math2-photo",
    "math3-scan",
    "math3-photo",
    "omnidocbench-demo",
)


@dataclass
class Page:
    rel: str  # path below the set's page root, e.g. "scan/rintro-p007.jpg" (names the output file)
    path: Path
    lang: str = "en"


@dataclass
class BenchSet:
    name: str
    kind: str  # "tests" (olmOCR-Bench unit tests) or "omnidoc"
    pages: list[Page]
    tests: Path | None = None  # a JSONL file or an olmOCR-Bench folder, for `jocr score --tests`
    gt_markdown: dict[str, Path] = field(default_factory=dict)  # page rel -> hand-checked Markdown
    omnidoc_json: Path | None = None


def olmocr_set(root: Path) -> BenchSet:
    pdfs = sorted((root / "pdfs").rglob("*.pdf"))
    pages = [Page(str(p.relative_to(root / "pdfs")), p) for p in pdfs]
    return BenchSet("olmocr-sample", "tests", pages, tests=root)


def frozen_real_sets(root: Path, prefix: str = "real") -> list[BenchSet]:
    """`<prefix>-pdf`, `<prefix>-scan`, `<prefix>-photo`: one set per variant the folder has tests for."""
    langs = {p["id"]: p["lang"] for p in json.loads((root / "sources.json").read_text())["pages"]}
    sets = []
    for variant in ("pdf", "scan", "photo"):
        jsonl = root / f"{variant}.jsonl"
        if not jsonl.is_file():
            continue
        rels = sorted({json.loads(line)["pdf"] for line in jsonl.read_text().splitlines() if line.strip()})
        pages = [Page(rel, root / "pdfs" / rel, langs.get(Path(rel).stem, "en")) for rel in rels]
        gt = {p.rel: root / "gt" / f"{Path(p.rel).stem}.md" for p in pages}
        gt = {rel: path for rel, path in gt.items() if path.is_file()}
        sets.append(BenchSet(f"{prefix}-{variant}", "tests", pages, tests=jsonl, gt_markdown=gt))
    return sets


SCAN_DPI = 150  # the frozen sets' scans are 150 dpi copies of their pages (data/frozen-real/README.md)


def scanned_pdf_set(scans: BenchSet, folder: Path) -> BenchSet:
    """`scans` (a `<prefix>-scan` set) as `<prefix>-scanpdf`: each scan in a one-page image PDF under
    `folder` (written once), the same page names, tests and hand-checked Markdown."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    pages = []
    for page in scans.pages:
        pdf = folder / f"{Path(page.rel).stem}.pdf"
        if not pdf.is_file():
            with Image.open(page.path) as image:
                dpi = float(image.info.get("dpi", (SCAN_DPI,))[0]) or SCAN_DPI
                image.convert("RGB").save(pdf, "PDF", resolution=dpi)
        pages.append(Page(page.rel, pdf, page.lang))
    name = scans.name.removesuffix("-scan") + "-scanpdf"
    return BenchSet(name, "tests", pages, tests=scans.tests, gt_markdown=dict(scans.gt_markdown))


def omnidoc_set(root: Path) -> BenchSet:
    gt_json = root / "OmniDocBench_demo.json"
    pages = []
    for page in json.loads(gt_json.read_text(encoding="utf-8")):
        info = page["page_info"]
        language = info.get("page_attribute", {}).get("language", "english")
        lang = "en" if language == "english" else "zh"
        pages.append(Page(info["image_path"], root / "images" / info["image_path"], lang))
    return BenchSet("omnidocbench-demo", "omnidoc", pages, omnidoc_json=gt_json)


def output_path(out_dir: Path, bset: BenchSet, page: Page) -> Path:
    stem = str(Path(page.rel).with_suffix(""))
    if bset.kind == "omnidoc":
        return out_dir / f"{stem}.md"
    return out_dir / f"{stem}_pg1_repeat1.md"


class Context:
    """What systems share within one run: the loaded model, its tokenizer, RapidOCR's lines per image."""

    def __init__(self, args):
        self.args = args
        self.model_dir = args.model_dir
        self._model = None
        self.rapid: dict[str, tuple[list, float, float]] = {}

    @property
    def model(self):
        if self._model is None:
            import jocr

            self._model = jocr.load_model(self.model_dir)
            if getattr(self.args, "answer_cache", None):
                from answer_cache import use_answer_cache

                use_answer_cache(self._model, Path(self.args.answer_cache))
        return self._model

    def anchor_budget(self):
        from jocr.pipeline.model import anchor_config_of
        from jocr.tokenizer import Tokenizer

        config = anchor_config_of(self.model_dir)
        return Tokenizer.from_dir(self.model_dir), config.max_tokens or 1400

    def rapid_lines(self, page: Page, image) -> tuple[list, float, float]:
        """RapidOCR's lines of a page and the wall and CPU seconds they took, read once per output folder
        (kept in `--out/_ocr-lines/`, so runs of one system at a time share them)."""
        key = str(page.path.resolve())
        cache = Path(self.args.out) / "_ocr-lines" / f"{zlib.crc32(key.encode()):08x}-{page.path.name}.json"
        if key not in self.rapid and cache.is_file():
            record = json.loads(cache.read_text(encoding="utf-8"))
            if record["path"] == key:
                lines = [(t, tuple(b)) for t, b in record["lines"]]
                self.rapid[key] = (lines, record["seconds"], record.get("cpu_seconds", float("nan")))
        if key not in self.rapid:
            start, cpu_start = time.perf_counter(), cpu_seconds()
            lines = baselines.rapidocr_lines(image)
            self.rapid[key] = (lines, time.perf_counter() - start, cpu_seconds() - cpu_start)
            cache.parent.mkdir(parents=True, exist_ok=True)
            record = {
                "path": key,
                "lines": lines,
                "seconds": self.rapid[key][1],
                "cpu_seconds": self.rapid[key][2],
            }
            cache.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
        return self.rapid[key]


def cpu_seconds() -> float:
    """CPU seconds of this process (all its threads: onnxruntime's and torch's) and of its finished
    children (Tesseract's subprocesses): speed is compared in CPU time, which load on the machine does not
    inflate the way it inflates wall time."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _render(page: Page):
    with open_source(str(page.path), LoadOptions()) as source:
        return source.render(0)


def _timed_rapid_lines(
    ctx: Context, page: Page, image
) -> tuple[list, tuple[float, float], tuple[float, float]]:
    """RapidOCR's lines, the (wall, CPU) seconds the engine took to read them (once, maybe in an earlier
    run), and the (wall, CPU) seconds this call took (the engine's time when it read them now, next to
    nothing from the cache): a caller counts the first and not the second, so OCR time is counted once
    whether cached or not."""
    start, cpu_start = time.perf_counter(), cpu_seconds()
    lines, ocr_seconds, ocr_cpu = ctx.rapid_lines(page, image)
    return lines, (ocr_seconds, ocr_cpu), (time.perf_counter() - start, cpu_seconds() - cpu_start)


def run_parse(bset: BenchSet, ctx: Context) -> tuple[list[str], float, dict]:
    """`jocr.parse` one page at a time (the model loaded once, before the clock), so each page's CPU seconds
    are its own."""
    import jocr

    model = ctx.model
    kwargs = {"max_tokens": ctx.args.max_tokens} if ctx.args.max_tokens else {}
    outs, seconds, cpu, anchored, failed = [], 0.0, [], 0, 0
    for page in bset.pages:
        start, cpu_start = time.perf_counter(), cpu_seconds()
        (doc,) = jocr.parse([str(page.path)], model=model, raise_errors=False, **kwargs)
        seconds += time.perf_counter() - start
        cpu.append(cpu_seconds() - cpu_start)
        outs.append(
            (doc.markdown, doc.pages[0].tree if doc.pages else None) if doc.error is None else ("", None)
        )
        anchored += sum(bool(pg.anchor is not None and pg.anchor.anchored) for pg in doc.pages)
        failed += doc.error is not None
    return outs, seconds, {"anchored_pages": anchored, "failed": failed, "cpu_per_page": cpu}


def run_lines(bset: BenchSet, ctx: Context) -> tuple[list[str], float, dict]:
    tokenizer, budget = ctx.anchor_budget()
    outs, seconds, cpu, sources = [], 0.0, [], {"textlayer": 0, "ocr": 0}
    for page in bset.pages:
        start, cpu_start = time.perf_counter(), cpu_seconds()
        with open_source(str(page.path), LoadOptions()) as source:
            layer = source.text_layer(0)
            if layer is not None and layer.usable and layer.lines:
                text, kind, tree = baselines.layer_text(layer, tokenizer, budget), "textlayer", None
            else:
                text, kind, tree = _ocr_lines_text(source.render(0))
        seconds += time.perf_counter() - start
        cpu.append(cpu_seconds() - cpu_start)
        sources[kind] += 1
        outs.append((text, tree))
    return outs, seconds, {"line_source": sources, "cpu_per_page": cpu}


def _ocr_lines_text(image) -> tuple[str, str, object]:
    """(Markdown, "ocr", tree) of a page image read by jocr's own OCR line source (`jocr.lines.ocr.read_image`
    at its defaults, as `jocr parse` reads it: turned, deskewed, its lines spaced; with `--ocr-cache` the
    same engine readings as the parse row's) through the rules over lines alone: no layout regions, no
    table pass, no model. The line source alone with the same rules, so parse against lines is what the
    pipeline adds after the line source."""
    from jocr.layout.line_rules import lines_tree
    from jocr.layout.render import page_markdown
    from jocr.lines.ocr import OCRLinesConfig, read_image

    layer = read_image(image, OCRLinesConfig())
    if not layer.usable or not layer.lines:
        return "", "ocr", None
    paper = layer.stats.get("paper") if isinstance(layer.stats, dict) else None
    tree = lines_tree(layer.lines, layer.width, layer.height, unit="px", source=layer.source, paper=paper)
    return page_markdown(tree), "ocr", tree


def run_tesseract(bset: BenchSet, ctx: Context) -> tuple[list[str], float, dict]:
    installed = baselines.tesseract_languages()
    zh = "chi_sim+eng" if "chi_sim" in installed else "eng"
    outs, seconds, cpu = [], 0.0, []
    for page in bset.pages:
        start, cpu_start = time.perf_counter(), cpu_seconds()
        outs.append(baselines.tesseract_text(_render(page), zh if page.lang == "zh" else "eng"))
        seconds += time.perf_counter() - start
        cpu.append(cpu_seconds() - cpu_start)
    return outs, seconds, {"chinese_langs": zh, "cpu_per_page": cpu}


def run_rapidocr(bset: BenchSet, ctx: Context) -> tuple[list[str], float, dict]:
    outs, seconds, cpu = [], 0.0, []
    for page in bset.pages:
        start, cpu_start = time.perf_counter(), cpu_seconds()
        image = _render(page)
        lines, ocr, reading = _timed_rapid_lines(ctx, page, image)
        seconds += time.perf_counter() - start - reading[0] + ocr[0]
        cpu.append(cpu_seconds() - cpu_start - reading[1] + ocr[1])
        outs.append("\n".join(text for text, _ in lines))
    return outs, seconds, {"cpu_per_page": cpu}


RUNNERS = {"parse": run_parse, "lines": run_lines, "tesseract": run_tesseract, "rapidocr": run_rapidocr}


def _score_lang(bset: BenchSet, out_dir: Path, lang: str) -> dict:
    """The set's tests of the pages in one language alone, scored over the same outputs."""
    import tempfile

    rels = {p.rel for p in bset.pages if p.lang == lang}
    lines = [line for line in bset.tests.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line)["pdf"] in rels]
    with tempfile.TemporaryDirectory() as tmp:
        tests = Path(tmp) / f"{bset.tests.stem}-{lang}.jsonl"
        tests.write_text("\n".join(kept) + "\n", encoding="utf-8")
        summary = score_tests(tests, out_dir)
    return {"pages": len(rels), **summary}


def score_set(bset: BenchSet, out_dir: Path) -> dict:
    if bset.kind == "omnidoc":
        from jocr.checks.omnidoc import evaluate_dir

        return evaluate_dir(bset.omnidoc_json, out_dir).as_dict()
    summary = score_tests(bset.tests, out_dir)
    langs = sorted({p.lang for p in bset.pages})
    if len(langs) > 1 and bset.tests.is_file():
        summary["per_lang"] = {lang: _score_lang(bset, out_dir, lang) for lang in langs}
    if bset.gt_markdown:
        from jocr.checks.markdown_edit import markdown_edit_distance, structure_edit_distance

        text, structure = [], []
        for page in bset.pages:
            if page.rel not in bset.gt_markdown:
                continue
            reference = bset.gt_markdown[page.rel].read_text(encoding="utf-8")
            path = output_path(out_dir, bset, page)
            prediction = path.read_text(encoding="utf-8") if path.is_file() else ""
            text.append(markdown_edit_distance(prediction, reference))
            structure.append(structure_edit_distance(prediction, reference))
        summary["gt_pages"] = len(text)
        summary["gt_text_edit"] = sum(text) / len(text)
        summary["gt_structure_edit"] = sum(structure) / len(structure)
    return summary


def build_sets(args) -> list[BenchSet]:
    sets = [olmocr_set(Path(args.olmocr_sample))] + frozen_real_sets(Path(args.frozen_real))
    later = (
        ("real2", args.frozen_real2),
        ("real3", args.frozen_real3),
        ("real4", args.frozen_real4),
        ("real5", args.frozen_real5),
    )
    math = Path(args.frozen_real_math)
    later += (("math", math), ("math2", math / "heldout"), ("math3", math / "heldout2"))
    for prefix, root in later:
        if (Path(root) / "sources.json").is_file():
            sets += frozen_real_sets(Path(root), prefix=prefix)
    if (Path(args.omnidocbench) / "images").is_dir():
        sets.append(omnidoc_set(Path(args.omnidocbench)))
    else:
        print(f"{args.omnidocbench}/images: missing; the OmniDocBench demo is skipped", file=sys.stderr)
    wanted = args.sets.split(",") if args.sets else list(SET_NAMES)
    unknown = set(wanted) - set(SET_NAMES)
    if unknown:
        raise SystemExit(f"unknown set(s): {', '.join(sorted(unknown))}; choose from {', '.join(SET_NAMES)}")
    scanned = {f"{s.name.removesuffix('-scan')}-scanpdf": s for s in sets if s.name.endswith("-scan")}
    sets += [
        scanned_pdf_set(s, Path(args.out) / "_scanpdf" / name)
        for name, s in scanned.items()
        if name in wanted
    ]
    sets = [s for s in sets if s.name in wanted]
    if args.page_ids:
        sets = [_subset(s, set(args.page_ids.split(",")), Path(args.out)) for s in sets]
    return sets


def _subset(bset: BenchSet, ids: set[str], out_root: Path) -> BenchSet:
    """A tests set cut down to the pages whose file stem is in `ids`, with their tests alone (written to
    `out_root/_tests/`), so a run on a loaded machine can score a part of a set on its own."""
    pages = [p for p in bset.pages if Path(p.rel).stem in ids]
    if bset.kind != "tests" or bset.tests is None or not bset.tests.is_file():
        return BenchSet(bset.name, bset.kind, pages, bset.tests, bset.gt_markdown, bset.omnidoc_json)
    rels = {p.rel for p in pages}
    lines = [ln for ln in bset.tests.read_text(encoding="utf-8").splitlines() if ln.strip()]
    tests = out_root / "_tests" / bset.tests.name
    tests.parent.mkdir(parents=True, exist_ok=True)
    tests.write_text("".join(ln + "\n" for ln in lines if json.loads(ln)["pdf"] in rels), encoding="utf-8")
    gt = {rel: path for rel, path in bset.gt_markdown.items() if rel in rels}
    return BenchSet(bset.name, bset.kind, pages, tests, gt, bset.omnidoc_json)


def run(args) -> int:
    systems = args.systems.split(",") if args.systems else list(SYSTEMS)
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        print(
            f"unknown system(s): {', '.join(sorted(unknown))}; choose from {', '.join(SYSTEMS)}",
            file=sys.stderr,
        )
        return 2
    sets = build_sets(args)
    ctx = Context(args)
    out_root = Path(args.out)
    results: dict[str, dict[str, dict]] = {}
    for bset in sets:
        for system in systems:
            out_dir = out_root / bset.name / system
            record = out_dir / "_run.json"
            if args.reuse and record.is_file():
                run_info = json.loads(record.read_text())
            else:
                try:
                    outs, seconds, notes = RUNNERS[system](bset, ctx)
                except (ImportError, FileNotFoundError) as exc:
                    print(f"{bset.name}/{system}: not available ({exc}); skipped", file=sys.stderr)
                    continue
                for page, out in zip(bset.pages, outs):
                    text, tree = out if isinstance(out, tuple) else (out, None)
                    path = output_path(out_dir, bset, page)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
                    if tree is not None and bset.kind == "omnidoc":  # for the layout match
                        tree_json = json.dumps(tree.to_dict(), ensure_ascii=False)
                        path.with_suffix(".json").write_text(tree_json, encoding="utf-8")
                run_info = {"pages": len(bset.pages), "seconds": seconds, **notes}
                record.write_text(json.dumps(run_info, indent=1) + "\n")
                print(f"{bset.name}/{system}: {len(bset.pages)} pages in {seconds:.0f} s", file=sys.stderr)
            summary = score_set(bset, out_dir)
            summary["pages_per_s"] = run_info["pages"] / run_info["seconds"] if run_info["seconds"] else 0.0
            summary["run"] = run_info
            results.setdefault(bset.name, {})[system] = summary
    print_tables(sets, results)
    out_root.mkdir(parents=True, exist_ok=True)
    (out_root / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def print_tables(sets: list[BenchSet], results: dict[str, dict[str, dict]]) -> None:
    for bset in sets:
        rows = results.get(bset.name)
        if not rows:
            continue
        print(f"\n{bset.name}: {len(bset.pages)} pages")
        if bset.kind == "omnidoc":
            heads = "text edit | reading-order edit | table TEDS | formula edit | overall (0-100)"
            print(f"| system | {heads} | pages/s |")
            print("|---|---|---|---|---|---|---|")
            for name, s in rows.items():
                cells = [
                    f"{s[k]:.3f}" for k in ("text_edit", "reading_order_edit", "table_teds", "formula_edit")
                ]
                print(
                    f"| {name} | " + " | ".join(cells) + f" | {s['overall']:.1f} | {s['pages_per_s']:.2f} |"
                )
            for name, s in rows.items():
                if s.get("layout"):
                    from jocr.checks.omnidoc_layout import MIN_IOU, layout_table

                    pages = s["layout_pages"]
                    print(f"\n{name}: layout boxes matched at IoU >= {MIN_IOU} ({pages} pages with a tree)")
                    print("\n".join(layout_table(s["layout"])))
            continue
        types = sorted({t for s in rows.values() for t in s["per_type"] if t != "baseline"})
        groups = sorted({g for s in rows.values() for g in s["per_jsonl"] if g != "baseline"})
        gt = any("gt_text_edit" in s for s in rows.values())
        heads = ["overall", *(f"{g}" for g in groups), *types]
        heads += ["GT text edit", "GT structure edit"] if gt else []
        print("| system | " + " | ".join(heads) + " | pages/s |")
        print("|---|" + "---|" * len(heads) + "---|")
        for name, s in rows.items():
            cells = [_pct(s["overall"])] + [_pct(s["per_jsonl"].get(g)) for g in groups]
            cells += [_pct(s["per_type"].get(t)) for t in types]
            if gt:
                cells += [f"{s['gt_text_edit']:.3f}", f"{s['gt_structure_edit']:.3f}"]
            print(f"| {name} | " + " | ".join(cells) + f" | {s['pages_per_s']:.2f} |")
        cpu = {name: s["run"].get("cpu_per_page") for name, s in rows.items()}
        if any(cpu.values()):
            print("\nCPU seconds per page (process and child processes; mean, median, max):")
            for name, per_page in cpu.items():
                if per_page:
                    ordered = sorted(per_page)
                    mean, median = sum(ordered) / len(ordered), ordered[len(ordered) // 2]
                    print(f"- {name}: {mean:.2f}, {median:.2f}, {ordered[-1]:.2f}")
        langs = sorted({lang for s in rows.values() for lang in s.get("per_lang", {})})
        if langs:
            kinds = ("present", "order", "absent", "table", "math")
            print(f"\n{bset.name} by language (the set's own tests of those pages):")
            print("| system | language | pages | tests | pass rate | " + " | ".join(kinds) + " |")
            print("|---|---|---|---|---|" + "---|" * len(kinds))
            for name, s in rows.items():
                for lang, ls in sorted(s.get("per_lang", {}).items()):
                    cells = [_pct(ls["per_type"].get(k)) for k in kinds]
                    print(
                        f"| {name} | {lang} | {ls['pages']} | {ls['tests']} | {_pct(ls['overall'])} | "
                        + " | ".join(cells)
                        + " |"
                    )
