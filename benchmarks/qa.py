"""Asking a document: ANLS, exact match and field F1 on a question set, for a model or a keyword baseline.

    .venv/bin/python benchmarks/qa.py --baseline keyword                        # data/frozen-test/docqa, pdf
    .venv/bin/python benchmarks/qa.py --model models/anchored                   # a model, through jocr.ask
    .venv/bin/python benchmarks/qa.py --model DIR --keyword-control             # and the baseline, same run
    .venv/bin/python benchmarks/qa.py --baseline keyword --set data/frozen-real-qa
    .venv/bin/python benchmarks/qa.py --baseline keyword --variant scan          # lines by OCR
    .venv/bin/python benchmarks/qa.py --make-variants data/frozen-real-qa         # its scans and photos
    .venv/bin/python benchmarks/qa.py --model DIR --set data/frozen-test/docqa-charts --keyword-control
    .venv/bin/python benchmarks/qa.py --model DIR --set data/frozen-test/docqa-charts --captions-only

Sets: a `jocr synth --profile docqa` folder (`docqa_*.jsonl`: per document its files, questions and
fields; variants pdf, scan, photo) or `data/frozen-real-qa` (`questions.jsonl`: file, question, answers;
one-page PDFs, no fields; its scanned and photographed copies in `scan/` and `photo/`, made from the PDFs by
`--make-variants` as scripts/make_frozen_real.py makes data/frozen-real's). A question's optional
`page_kind` (`title`, `body`: data/frozen-real-qa3) is its page's kind, scored apart as `doc:<kind>`.
Scores are `jocr.checks.qa`'s: ANLS (DocVQA), exact match after DocVQA's normalisation, field
precision/recall/F1 after number/date normalisation.

The keyword baseline is not part of jocr: it answers from the page's lines alone (jocr's line source,
`jocr.lines.source.page_lines`: the text layer of a PDF page, OCR over a scan or photo under `--ocr`), with
the value after the label (`Label: value`, `标签：值`) whose words best match the question's (English words,
with a label word that abbreviates a question word counting, e.g. "No." for "number"; Chinese by
characters). The focus-line baseline is the no-model control of a focused question (`jocr.ask` asks over
the stretch of runs sharing most words with the question, that run second: docs/asking.md, "Focus"): the
value `answer_value` cuts from that run, what the model's answer would be if it always wrote `@2`. A model
answers through `jocr.ask` / `jocr.extract`, which read the same lines for its anchor (`--focus`: over
the focused window).

Captions (a `--profile docqa-charts` set: records with `figures`, each a reference caption and its box in
PDF points): every run also scores each figure's caption with `jocr.checks.qa.caption_similarity`
(ROUGE-L F1) for the `crop-words` baseline, the page's lines inside the box joined in order (the text a
reader copies without describing anything), and, with `--model`, for the model's caption through
`jocr.parse(task="caption", region=box)` (`jocr.pipeline.caption`: the asking member, the crop, the
caption prompt and the crop's own anchor; `--caption-tokens` at most). `--captions-only` scores the
captions alone (no questions asked).
Variants pdf and scan only (a scan is the page rendered at the set's dpi: the box scales with it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from jocr.checks.qa import anls_one, caption_similarity, exact_match, field_scores  # noqa: E402
from jocr.pipeline.ask_decoding import ANSWER_TOKENS  # noqa: E402

STOP_WORDS = set(
    "a an the is are was were of to in on for by from what which who whom whose how many much does do did "
    "this that these those it its there be been given listed document page".split()
)
STOP_CHARS = set("是的了吗呢哪谁什么多少几个些这那封份在从给被为了？?，。、")
LABEL = re.compile(r"^(?P<label>[^:：]{1,40})[:：]\s*(?P<value>.*)$")


def words(text: str) -> set[str]:
    """English words (lower case, a possessive 's dropped, stop words out) and single CJK characters."""
    text = text.lower().replace("'s", "")
    latin = {w for w in re.findall(r"[a-z0-9]+", text) if w not in STOP_WORDS}
    cjk = {c for c in text if "\u3400" <= c <= "\u9fff" and c not in STOP_CHARS}
    return latin | cjk


def label_score(question: set[str], label: set[str]) -> float:
    """How well a label matches the question: its words found in the question (a label word of 2+ letters
    that starts a question word counts), over the label's size as a tie-break."""
    if not label:
        return 0.0
    hits = sum(1 for w in label if w in question or (len(w) >= 2 and any(q.startswith(w) for q in question)))
    return hits + hits / len(label) / 10


def keyword_answer(question: str, lines: list[str]) -> str:
    """The value after the best-matching label among `lines` (the next line when the label's own line has
    none), or "" when no label shares a word with the question."""
    wanted = words(question)
    best, best_score = "", 0.0
    for i, line in enumerate(lines):
        match = LABEL.match(line.strip())
        if not match:
            continue
        score = label_score(wanted, words(match.group("label")))
        value = match.group("value").strip() or (lines[i + 1].strip() if i + 1 < len(lines) else "")
        if score > best_score and value:
            best, best_score = value, score
    return best


def page_lines(path: Path, ocr: str, page: int = 0) -> list[str]:
    """The page's line texts from jocr's line source: the text layer, else OCR over the page image."""
    from jocr.documents.pages import open_source
    from jocr.lines.source import page_lines as source_lines

    with open_source(str(path)) as source:
        lines = source_lines(source, page, source.render(page), ocr)
    return [line.text for line in lines.lines] if lines is not None and lines.usable else []


def make_variants(root: Path) -> None:
    """Scanned and photographed copies of a real question set's PDF pages (`scan/`, `photo/` next to them),
    degraded as data/frozen-real's are (scripts/make_frozen_real.py: 150 dpi, a seed from the page's name)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_frozen_real as frozen

    for pdf in sorted(root.glob("*.pdf")):
        clean = frozen.render(pdf)
        for variant, make in (("scan", frozen.scan), ("photo", frozen.photo)):
            out = root / variant / f"{pdf.stem}.jpg"
            out.parent.mkdir(exist_ok=True)
            out.write_bytes(frozen.jpeg_bytes(make(clean, frozen.page_seed(pdf.stem, variant))))
        print(f"{pdf.name}: scan and photo", file=sys.stderr)


def load_set(root: Path, variant: str) -> list[dict]:
    """Documents of a set: {file, fields or None, questions: [{question, answers, kind}]}."""
    docqa = sorted(root.glob("docqa_*.jsonl"))
    if docqa:
        docs = []
        for path in docqa:
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                docs.append(
                    {
                        "file": root / record["files"][variant],
                        "fields": record["fields"],
                        "questions": record["questions"],
                        "lang": record["lang"],
                        "kind": record["kind"],
                        "figures": record.get("figures", []),
                    }
                )
        return docs
    by_file: dict[str, dict] = {}
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        path = root / q["file"] if variant == "pdf" else root / variant / (Path(q["file"]).stem + ".jpg")
        if not path.is_file():
            raise SystemExit(f"{path}: missing (make the variants with --make-variants {root})")
        doc = by_file.setdefault(q["file"], {"file": path, "fields": None, "questions": []})
        doc["lang"] = q.get("lang", "")
        doc["kind"] = q.get("page_kind")  # title or body page, where the set says: scored as doc:<kind>
        doc["questions"].append({"question": q["question"], "answers": q["answers"], "kind": "extractive"})
    return list(by_file.values())


def focus_line_answer(question: str, lines: list[str]) -> str:
    """The no-model control of a focused question: the value `jocr ask` cuts (`answer_value`) from the line
    sharing most words with the question (`jocr.pipeline.ask_focus.focus_run`, the run a focused window puts
    second), as if the model always answered `@2`; "" when no line shares a word."""
    from jocr.pipeline.ask_answers import answer_value
    from jocr.pipeline.ask_focus import focus_run

    best = focus_run(lines, question)
    return "" if best is None else answer_value(lines[best], question)


BASELINES = {"keyword": keyword_answer, "focus-line": focus_line_answer}


def run_baseline(
    docs: list[dict], ocr: str, name: str = "keyword"
) -> tuple[list[list[str]], list[dict | None]]:
    answer = BASELINES[name]
    answers, fields = [], []
    for doc in docs:
        lines = page_lines(doc["file"], ocr)
        answers.append([answer(q["question"], lines) for q in doc["questions"]])
        names = doc["fields"] or {}
        fields.append({n: answer(n.replace("_", " "), lines) or None for n in names} if names else None)
    return answers, fields


def run_model(
    docs: list[dict],
    model_dir: str,
    max_tokens: int,
    fields_tokens: int,
    ocr: str,
    raws: list | None = None,
    focus: bool | str = True,
) -> tuple[list[list[str]], list[dict | None]]:
    """Each document's questions asked together (`jocr.ask` with a list; `focus`: AskConfig's), then its
    fields extracted; `raws` gets each question's answer as the model wrote it (references unresolved)."""
    import jocr
    from jocr.pipeline import load_model

    model = load_model(model_dir) if isinstance(model_dir, str) else model_dir
    answers, fields = [], []
    for i, doc in enumerate(docs, 1):
        questions = [q["question"] for q in doc["questions"]]
        asked = jocr.ask(doc["file"], questions, model=model, max_tokens=max_tokens, ocr=ocr, focus=focus)
        answers.append([a.answer for a in asked])
        if raws is not None:
            raws.append([next((p.raw for p in a.pages if p.page == a.page), "") for a in asked])
        names = list(doc["fields"] or {})
        values = (
            jocr.extract(doc["file"], names, model=model, max_tokens=fields_tokens, ocr=ocr).values
            if names
            else None
        )
        fields.append(values)
        print(f"{i}/{len(docs)} {doc['file'].name}", file=sys.stderr, flush=True)
    return answers, fields


def figure_region(doc: dict, figure: dict, variant: str) -> list[float]:
    """A figure's box in the units `jocr.parse` takes for the variant's file: PDF points, or pixels of a
    scan (the page rendered at the set's dpi, so the box scales with its width over the page's 612 points)."""
    if variant == "pdf":
        return [float(v) for v in figure["box"]]
    from PIL import Image

    with Image.open(doc["file"]) as image:
        scale = image.width / 612
    return [v * scale for v in figure["box"]]


def crop_words(doc: dict, region: list[float], ocr: str) -> str:
    """The crop-words baseline: the page's lines (text layer, or OCR over a scan) inside the region, joined
    in order (`jocr.lines.types.PageLines.crop`)."""
    from jocr.documents.pages import open_source
    from jocr.lines.source import page_lines as source_lines

    with open_source(str(doc["file"])) as source:
        lines = source_lines(source, 0, source.render(0), ocr)
    if lines is None or not lines.usable:
        return ""
    return " ".join(line.text for line in lines.crop(tuple(region)).lines)


def caption_rows(
    docs: list[dict], variant: str, ocr: str, model=None, max_tokens: int = 64, anchor: str = "auto"
) -> list[dict]:
    """Per figure: its reference, the crop-words baseline and (with a model) the model's caption, scored."""
    import jocr

    rows = []
    for doc in docs:
        for figure in doc.get("figures", []):
            region = figure_region(doc, figure, variant)
            row = {"file": str(doc["file"]), "lang": doc["lang"], "reference": figure["caption"]}
            row["crop_words"] = crop_words(doc, region, ocr)
            row["crop_words_score"] = caption_similarity(row["crop_words"], figure["caption"])
            if model is not None:
                parsed = jocr.parse(doc["file"], task="caption", region=region, model=model,
                                    max_tokens=max_tokens, anchor=anchor, ocr=ocr)  # fmt: skip
                row["model"] = parsed.pages[0].markdown if parsed.pages else ""
                row["model_score"] = caption_similarity(row["model"], figure["caption"])
                print(f"caption {Path(doc['file']).name}", file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def caption_summary(rows: list[dict], key: str) -> dict:
    """Mean ROUGE-L F1 of one answerer's captions, overall and by language."""
    out = {"figures": len(rows), "rouge_l": round(sum(r[key] for r in rows) / len(rows), 4)}
    for lang in sorted({r["lang"] for r in rows}):
        picked = [r[key] for r in rows if r["lang"] == lang]
        out[lang] = round(sum(picked) / len(picked), 4)
    return out


def scores(docs: list[dict], answers: list[list[str]], fields: list[dict | None]) -> dict:
    rows = [
        (q, a, doc["lang"])
        for doc, doc_answers in zip(docs, answers)
        for q, a in zip(doc["questions"], doc_answers)
    ]

    def summary(selected) -> dict:
        n = len(selected)
        return {
            "questions": n,
            "anls": round(sum(anls_one(a, q["answers"]) for q, a, _ in selected) / n, 4) if n else None,
            "exact_match": round(sum(exact_match(a, q["answers"]) for q, a, _ in selected) / n, 4)
            if n
            else None,
        }

    out = {"all": summary(rows)}
    for kind in sorted({q.get("kind", "extractive") for q, _, _ in rows}):
        out[kind] = summary([r for r in rows if r[0].get("kind", "extractive") == kind])
    for lang in sorted({lang for _, _, lang in rows if lang}):
        out[lang] = summary([r for r in rows if r[2] == lang])
    kinds = [doc.get("kind") for doc, doc_answers in zip(docs, answers) for _ in doc_answers]
    if len(set(kinds) - {None}) > 1:  # per document kind (chart, table, invoice...) where a set mixes them
        for kind in sorted(set(kinds) - {None}):
            out[f"doc:{kind}"] = summary([r for r, k in zip(rows, kinds) if k == kind])
    extracted = [(p, doc) for p, doc in zip(fields, docs) if p is not None]
    if extracted:
        out["fields"] = fields_summary(extracted)
        langs = sorted({doc.get("lang") for _, doc in extracted} - {None})
        for lang in langs if len(langs) > 1 else ():  # the goal is per language too
            out[f"fields:{lang}"] = fields_summary([e for e in extracted if e[1].get("lang") == lang])
    return out


def fields_summary(extracted: list[tuple[dict, dict]]) -> dict:
    """Field precision / recall / F1 over (predicted fields, document) pairs."""
    f = field_scores([p for p, _ in extracted], [doc["fields"] for _, doc in extracted])
    return {
        "documents": len(extracted),
        "precision": round(f.precision, 4),
        "recall": round(f.recall, 4),
        "f1": round(f.f1, 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--set", default=str(ROOT / "data" / "frozen-test" / "docqa"), help="question set folder"
    )
    parser.add_argument("--variant", choices=("pdf", "scan", "photo"), default="pdf")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--baseline", choices=sorted(BASELINES))
    which.add_argument("--model", help="a model directory, asked through jocr.ask / jocr.extract")
    which.add_argument("--make-variants", metavar="SET", help="write a real set's scan/ and photo/ copies")
    parser.add_argument(
        "--ocr",
        choices=("auto", "rapidocr", "tesseract", "none"),
        default="auto",
        help="line source of images",
    )
    parser.add_argument(
        "--every", type=int, default=1, help="every Nth document only, from the first (a fixed subset)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=ANSWER_TOKENS,
        help="answer tokens per question (model; default as jocr ask)",
    )
    parser.add_argument("--fields-tokens", type=int, default=128, help="tokens per extraction answer (model)")
    parser.add_argument("--caption-tokens", type=int, default=64, help="tokens per caption (model)")
    parser.add_argument(
        "--caption-anchor",
        choices=("auto", "on", "off"),
        default="auto",
        help="the crop's anchor after the caption prompt (model; off: the crop alone)",
    )
    parser.add_argument(
        "--captions-only", action="store_true", help="score the figure captions only (no questions asked)"
    )
    parser.add_argument("--predictions", help="write every question's answer here (JSONL)")
    parser.add_argument(
        "--focus",
        nargs="?",
        const="window",
        default="off",
        choices=("off", "window", "both"),
        help="ask over the focused window of runs (AskConfig.focus: 'window' when given alone; 'both': that "
        "window and the page's windows)",
    )
    parser.add_argument(
        "--keyword-control",
        action="store_true",
        help="with --model: also score the no-model baselines (focus-line, keyword) in the same run "
        "(one JSON result each)",
    )
    args = parser.parse_args()
    if args.make_variants:
        make_variants(Path(args.make_variants))
        return 0
    if args.every < 1:
        parser.error("--every must be >= 1")
    docs = load_set(Path(args.set), args.variant)[:: args.every]
    t0, c0 = time.perf_counter(), time.process_time()
    raws: list[list[str]] = []
    model = None
    if args.captions_only:  # no question asked: every answer empty, the question scores left out below
        answers, fields = [[""] * len(doc["questions"]) for doc in docs], [None] * len(docs)
    elif args.baseline:
        answers, fields = run_baseline(docs, args.ocr, args.baseline)
    if args.model:
        from jocr.pipeline import load_model

        model = load_model(args.model)
    if args.model and not args.captions_only:
        answers, fields = run_model(
            docs, model, args.max_tokens, args.fields_tokens, args.ocr, raws, focus=args.focus
        )
    result = {
        "set": args.set,
        "variant": args.variant,
        "documents": len(docs),
        "answerer": args.model or f"baseline:{args.baseline}",
        "ocr": args.ocr if args.variant != "pdf" else None,
        "seconds": round(time.perf_counter() - t0, 1),
        "cpu_seconds": round(time.process_time() - c0, 1),  # this process's, model loading included
        "max_tokens": None if args.baseline or args.captions_only else [args.max_tokens, args.fields_tokens],
        "focus": None if args.baseline or args.captions_only else args.focus,
        **({} if args.captions_only else scores(docs, answers, fields)),
    }
    captions = []
    if any(doc.get("figures") for doc in docs) and args.variant in ("pdf", "scan"):
        t1 = time.perf_counter()
        captions = caption_rows(docs, args.variant, args.ocr, model, args.caption_tokens, args.caption_anchor)
        result["captions"] = {"crop_words": caption_summary(captions, "crop_words_score")}
        if model is not None:
            result["captions"]["model"] = caption_summary(captions, "model_score")
            result["captions"]["max_tokens"] = args.caption_tokens
            result["captions"]["anchor"] = args.caption_anchor
        result["captions"]["seconds"] = round(time.perf_counter() - t1, 1)
    if args.predictions:
        with open(args.predictions, "w", encoding="utf-8") as fh:
            for d, (doc, doc_answers) in enumerate(zip(docs, answers)):
                for k, (q, a) in enumerate(zip(doc["questions"], doc_answers)):
                    row = {
                        "file": str(doc["file"]),
                        "question": q["question"],
                        "answers": q["answers"],
                        "prediction": a,
                    }
                    if raws:
                        row["raw"] = raws[d][k]
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            for row in captions:
                fh.write(json.dumps({"caption": row}, ensure_ascii=False) + "\n")
    print(json.dumps(result, ensure_ascii=False, indent=1))
    for name in sorted(BASELINES) if args.model and args.keyword_control and not args.captions_only else ():
        t0, c0 = time.perf_counter(), time.process_time()
        answers, fields = run_baseline(docs, args.ocr, name)
        control = {
            **{k: result[k] for k in ("set", "variant", "documents", "ocr")},
            "answerer": f"baseline:{name}",
            "seconds": round(time.perf_counter() - t0, 1),
            "cpu_seconds": round(time.process_time() - c0, 1),
            **scores(docs, answers, fields),
        }
        print(json.dumps(control, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
