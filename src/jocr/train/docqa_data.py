"""Training examples for asking a page (docs/asking.md, "Training data"), from `jocr.synth.docqa` documents.

Each example goes through the path `jocr ask` takes: the page image, the question as the prompt text and
the anchor of the page's PDF text layer after it (`jocr.pipeline.ask.question_ids`, i.e.
`PageRequestBuilder.prompt_ids`), then the target and EOS. A document gives one example per question
and one extraction example (`extract_prompt` of its fields -> the fields as a JSON object).

Target form. An extractive answer (a span of the page) is written as the exact text the anchor holds (the
answer copied from the run it lies in, `copied_answer`), not as a run reference: an answer is most often
part of a run ("Invoice number: INV-2031" holds "INV-2031"), which `@i` cannot name without offsets, and
copying text that stands in the prompt is what the reference lookup drafter and prompt lookup draft
cheaply. `jocr.pipeline.ask.answer_text` (references resolved, whitespace stripped) of a target gives the
answer back exactly. A computed answer (a count, the largest item) is its text; the extraction target is
compact JSON of field -> value as printed, null where a field is absent.
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

EXTRACT_KIND = "fields"


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


def docqa_examples(record: dict[str, Any], anchor_text: str | None) -> list[QAExample]:
    """A `docqa_<split>.jsonl` record's examples: one per question, then the extraction example."""
    out = []
    for q in record.get("questions", []):
        answers = tuple(q["answers"])
        target = copied_answer(answers[0], anchor_text) if q.get("kind") == "extractive" else answers[0]
        out.append(QAExample(q["question"], target, q.get("kind", "extractive"), answers))
    fields = record.get("fields") or {}
    if fields:
        prompt = extract_prompt([FieldSpec(name) for name in fields])
        values = {n: copied_answer(v, anchor_text) if v else None for n, v in fields.items()}
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


def docqa_sample_parts(maker, index: int, seed: int):
    """(page image, question, anchor or None, target) of training sample `index` for `SampleMaker`: a
    document drawn by `seed`, its PDF read as `jocr ask` reads it (`page_anchor` "on", the maker's anchor
    budget; `anchor_dropout` of them on the image alone), one of its examples drawn."""
    from jocr.documents.pages import LoadOptions, open_source
    from jocr.lines.anchor import ANCHOR_VERSION, page_anchor

    cfg = maker.cfg
    if not hasattr(maker, "_docqa_records"):
        maker._docqa_records = read_records(cfg.docqa_dir)
    root, record = maker._docqa_records[seed % len(maker._docqa_records)]
    drop = random.Random(f"docqa-dropout/{cfg.seed}/{index}").random() < cfg.anchor_dropout
    with open_source(str(root / record["files"]["pdf"]), LoadOptions()) as source:
        image = source.render(0)
        decision = (
            None
            if drop
            else page_anchor(source, 0, "on", ANCHOR_VERSION, maker.tokenizer, cfg.anchor_max_tokens)
        )
    anchor = decision.texts[0] if decision is not None and decision.anchored else None
    examples = docqa_examples(record, anchor)
    example = random.Random(f"docqa-example/{cfg.seed}/{index}").choice(examples)
    return image, example.question, anchor, example.target
