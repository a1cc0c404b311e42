"""Training examples for asking a page (docs/asking.md, "Training data"), from `jocr.synth.docqa` documents.

Each example goes through the path `jocr ask` takes: the page image, the question as the prompt text and
the anchor of the page's PDF text layer after it (`jocr.pipeline.ask.question_ids`, i.e.
`PageRequestBuilder.prompt_ids`), then the target and EOS. A document gives one example per question
and one extraction example (`extract_prompt` of its fields -> the fields as a JSON object). A chart of
`jocr.synth.charts` gives a caption example besides (`caption_sample_parts`): the chart's crop, the caption
prompt and the crop's own anchor -> the reference caption, typed (a caption is not a span of the page).

Target form (docs/asking.md, "Answers"). An answer that lies in the page's runs is written as references
to the anchor runs that hold it, `@i` (or `@i @j` / `@i@j` for a value across consecutive runs, in order),
the form the member writes when it reads a page: its copy mechanism is a choice among the page's runs,
which it has learnt, where typing the characters is not. The value is cut from the resolved runs by
`jocr.pipeline.ask_answers.answer_value` (a leading `label:` dropped, or the words the question names),
the one rule `jocr ask` reads the answer with (`answer_text`), so `answer_text(target, anchor, question)`
gives the answer back (`reference_answer`). An extractive answer no run cut holds (the middle of a
sentence) is typed as the anchor prints it (`copied_answer`); a computed answer (a count, the largest
item) is typed unless it is text a run holds (the largest item's name), since a number that happens to
equal a cell would point at the wrong thing. The extraction target is compact JSON of field -> value in
the same form (the field's name as the question), null where a field is absent.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jocr.checks.qa import normalise_answer
from jocr.lines.references import anchor_runs
from jocr.pipeline.ask import FieldSpec, extract_prompt
from jocr.pipeline.ask_answers import answer_value
from jocr.pipeline.ask_focus import focus_window

EXTRACT_KIND = "fields"
MAX_ANSWER_RUNS = 4  # the most consecutive runs an answer's references span (a value over a line break)


@dataclass(frozen=True)
class QAExample:
    """One question on one page: the prompt text, the target, and what it was built from."""

    question: str
    target: str
    kind: str  # "extractive", "computed" or EXTRACT_KIND
    answers: tuple[str, ...] = ()


def copied_answer(answer: str, anchor_text: str | None) -> str:
    """The answer as the anchor prints it: the first run's stretch that equals `answer` exactly, else one
    that equals it up to case and spacing (the run's characters then win), else `answer` itself."""
    if not anchor_text:
        return answer
    runs = list(anchor_runs(anchor_text).values())
    if any(answer in run for run in runs):
        return answer
    wanted = normalise_answer(answer)
    for run in runs:
        words = run.split()
        for i in range(len(words)):
            for j in range(i + 1, len(words) + 1):
                piece = " ".join(words[i:j])
                if normalise_answer(piece) == wanted:
                    return piece
    return answer


def reference_answer(answer: str, anchor_text: str | None, question: str = "") -> str | None:
    """`answer` as references to the anchor's runs: the first run, else the first run of up to
    MAX_ANSWER_RUNS consecutive runs (joined by a space, `@3 @4`, or by nothing, `@3@4`, as references
    resolve), whose `answer_value` under `question` equals it exactly, else up to case and spacing
    (`normalise_answer`). None when none does, or for an anchor without runs."""
    if not anchor_text or not answer.strip():
        return None
    runs = [(n, t) for n, t in anchor_runs(anchor_text).items() if not (" ... " in t and len(t) > 8)]
    wanted = normalise_answer(answer)
    candidates = []  # (references, resolved text), single runs first
    for size in range(1, MAX_ANSWER_RUNS + 1):
        for start in range(len(runs) - size + 1):
            span = runs[start : start + size]
            if any(b[0] != a[0] + 1 for a, b in zip(span, span[1:])):
                continue
            for sep in (" ", "") if size > 1 else (" ",):
                refs = sep.join(f"@{n}" for n, _ in span)
                candidates.append((refs, answer_value(sep.join(t for _, t in span), question)))
    for refs, value in candidates:
        if value == answer:
            return refs
    for refs, value in candidates:
        if normalise_answer(value) == wanted:
            return refs
    return None


def _names_text(answer: str) -> bool:
    """Whether a computed answer is text (holds a letter or a CJK character) rather than a number."""
    return any(ch.isalpha() for ch in answer)


def docqa_examples(record: dict[str, Any], anchor_text: str | None) -> list[QAExample]:
    """A `docqa_<split>.jsonl` record's examples: one per question, then the extraction example, with
    targets in the form of the module docstring."""
    out = []
    for q in record.get("questions", []):
        answers = tuple(q["answers"])
        kind = q.get("kind", "extractive")
        target = None
        if kind == "extractive" or _names_text(answers[0]):
            target = reference_answer(answers[0], anchor_text, q["question"])
        if target is None:
            target = copied_answer(answers[0], anchor_text) if kind == "extractive" else answers[0]
        out.append(QAExample(q["question"], target, kind, answers))
    fields = record.get("fields") or {}
    if fields:
        prompt = extract_prompt([FieldSpec(name) for name in fields])
        values = {
            n: (reference_answer(v, anchor_text, n) or copied_answer(v, anchor_text)) if v else None
            for n, v in fields.items()
        }
        target = json.dumps(values, ensure_ascii=False, separators=(",", ":"))
        out.append(QAExample(prompt, target, EXTRACT_KIND, ()))
    return out


def read_records(directories: str | list[str]) -> list[tuple[Path, dict[str, Any]]]:
    """(folder, record) for every document in the `docqa_*.jsonl` of the folders (`jocr synth --profile
    docqa`), in a fixed order."""
    out = []
    for directory in [directories] if isinstance(directories, str) else directories:
        root = Path(directory)
        files = sorted(root.glob("docqa_*.jsonl"))
        if not files:
            raise ValueError(f"data.docqa_dir {root} holds no docqa_*.jsonl (jocr synth DIR --profile docqa)")
        for path in files:
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    out.append((root, json.loads(line)))
    return out


def _cached_records(maker, directories: str | list[str]) -> list[tuple[Path, dict[str, Any]]]:
    """`read_records(directories)`, read once per sample maker and folder list."""
    key = tuple([directories] if isinstance(directories, str) else directories)
    cache = maker.__dict__.setdefault("_docqa_records", {})
    if key not in cache:
        cache[key] = read_records(list(key))
    return cache[key]


def _draw(seed: int, count: int) -> int:
    """The index of the document (or figure) sample `seed` takes among `count`: drawn by the seed, not
    `seed % count`, since consecutive samples have consecutive seeds and would walk the folders' documents in
    order (hundreds of one folder's kind in a row when `data.docqa_dir` lists several)."""
    return random.Random(f"docqa-record/{seed}").randrange(count)


def docqa_sample_parts(maker, index: int, seed: int, directories: str | list[str] | None = None):
    """(page image, question, anchor or None, target) of training sample `index` for `SampleMaker`: a
    document drawn by `seed` from `directories` (default `data.docqa_dir`; `data.charts_dir` for the chart
    and table documents), its PDF read as `jocr ask` reads it (`page_anchor` "on", the maker's anchor
    budget; `anchor_dropout` of them on the image alone), one of its examples drawn."""
    from jocr.documents.pages import LoadOptions, open_source
    from jocr.lines.anchor import ANCHOR_VERSION, page_anchor

    cfg = maker.cfg
    records = _cached_records(maker, directories or cfg.docqa_dir)
    root, record = records[_draw(seed, len(records))]
    drop = random.Random(f"docqa-dropout/{cfg.seed}/{index}").random() < cfg.anchor_dropout
    with open_source(str(root / record["files"]["pdf"]), LoadOptions()) as source:
        image = source.render(0)
        layer = None if drop else source.text_layer(0)  # read once: the anchor and a focused window
        decision = (
            None
            if drop
            else page_anchor(
                source, 0, "on", ANCHOR_VERSION, maker.tokenizer, cfg.anchor_max_tokens, layer=layer
            )
        )
    anchor = decision.texts[0] if decision is not None and decision.anchored else None
    examples = docqa_examples(record, anchor)
    pick = random.Random(f"docqa-example/{cfg.seed}/{index}").randrange(len(examples))
    focus = random.Random(f"docqa-focus/{cfg.seed}/{index}").random() < cfg.docqa_focus
    if focus and anchor is not None and examples[pick].kind != EXTRACT_KIND:
        window = focus_window(
            decision.windows, layer, examples[pick].question, maker.tokenizer, cfg.anchor_max_tokens
        )
        if window is not None:  # the question's targets for the window it is asked over
            anchor = window.text
            examples = docqa_examples(record, anchor)
    example = examples[pick]
    return image, example.question, anchor, example.target


def figure_captions(records: list[tuple[Path, dict[str, Any]]]) -> list[tuple[Path, dict[str, Any], dict]]:
    """(folder, record, figure) for every figure with a reference caption (`jocr.synth.charts` charts)."""
    return [(root, r, f) for root, r in records for f in r.get("figures", []) if f.get("caption")]


def caption_sample_parts(maker, index: int, seed: int):
    """(crop image, prompt, anchor or None, caption) of caption sample `index` for `SampleMaker`: a figure of
    `data.charts_dir` drawn by `seed`, its page rendered as `jocr parse` renders it and cut at the figure's
    box (`jocr.layout.elements.page_scale`, as the caption task crops a region), the anchor of the runs
    inside the box (`jocr.lines.anchor.region_anchor`, the maker's budget; `anchor_dropout` of them on the
    crop alone), the prompt `PROMPTS["caption"]` verbatim, the reference caption as the target."""
    from jocr.documents.pages import LoadOptions, open_source
    from jocr.layout.elements import page_scale
    from jocr.lines.anchor import region_anchor
    from jocr.tokenizer import PROMPTS

    cfg = maker.cfg
    cache = maker.__dict__.setdefault("_figure_captions", {})
    key = tuple([cfg.charts_dir] if isinstance(cfg.charts_dir, str) else cfg.charts_dir)
    if key not in cache:
        cache[key] = figure_captions(_cached_records(maker, cfg.charts_dir))
    if not cache[key]:
        raise ValueError(
            f"data.charts_dir {cfg.charts_dir} holds no figure captions (jocr synth --profile docqa-charts)"
        )
    root, record, figure = cache[key][_draw(seed, len(cache[key]))]
    drop = random.Random(f"caption-dropout/{cfg.seed}/{index}").random() < cfg.anchor_dropout
    box = tuple(float(v) for v in figure["box"])
    with open_source(str(root / record["files"]["pdf"]), LoadOptions()) as source:
        page = source.render(0)
        scale = page_scale(source, 0, page)
        image = page.crop(tuple(round(v * scale) for v in box))
        layer = None if drop else source.text_layer(0)
    anchor = None if layer is None else region_anchor(layer, box, maker.tokenizer, cfg.anchor_max_tokens)
    return image, PROMPTS["caption"], anchor, figure["caption"]
