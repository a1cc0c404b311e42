"""What the answer targets of a docqa training set look like: the shape `jocr.pipeline.ask_decoding` keeps.

    .venv/bin/python benchmarks/answer_targets.py runs/docqa-train [--documents N] [--model models/anchored]

Builds every example's target as training does (`jocr.train.docqa_data.docqa_examples`, the anchor of the
page's PDF text layer as `docqa_sample_parts` reads it) and prints, per answer kind (a run reference, a typed
computed answer, an extraction's JSON), the target lengths in tokens (EOS included) with the model's
tokenizer, their first characters, whether any target holds a line break, and the most references one
answer names. It also prints the token length of the answers typed (the image-only samples' targets).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

from jocr.documents.pages import LoadOptions, open_source
from jocr.lines.anchor import ANCHOR_VERSION, page_anchor
from jocr.lines.references import referenced_numbers
from jocr.tokenizer import Tokenizer
from jocr.train.docqa_data import EXTRACT_KIND, docqa_examples, read_records

ANCHOR_TOKENS = 1400  # configs/sft-docqa-ref.yaml's data.anchor_max_tokens


def _kind(kind: str, target: str) -> str:
    if kind == EXTRACT_KIND:
        return "extraction"
    return "reference" if referenced_numbers(target) else f"typed {kind}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="a `jocr synth --profile docqa --split train` folder")
    parser.add_argument("--documents", type=int, default=0, help="the first N documents only (0: all)")
    parser.add_argument("--model", default="models/anchored", help="the model whose tokenizer counts tokens")
    args = parser.parse_args()
    tok = Tokenizer.from_dir(args.model)
    records = read_records(args.directory)
    records = records[: args.documents] if args.documents else records
    lengths: dict[str, list[int]] = collections.defaultdict(list)
    first: collections.Counter = collections.Counter()
    typed: list[int] = []
    line_breaks = most_runs = 0
    for root, record in records:
        with open_source(str(root / record["files"]["pdf"]), LoadOptions()) as source:
            decision = page_anchor(source, 0, "on", ANCHOR_VERSION, tok, ANCHOR_TOKENS)
        anchor = decision.texts[0] if decision.anchored else None
        for example in docqa_examples(record, anchor):
            kind = _kind(example.kind, example.target)
            lengths[kind].append(len(tok.encode(example.target)) + 1)
            first[f"{kind}: {example.target[:1]!r}"] += 1
            line_breaks += "\n" in example.target
            if kind != "extraction":
                most_runs = max(most_runs, len(referenced_numbers(example.target)))
        typed += [len(tok.encode(q["answers"][0])) + 1 for q in record.get("questions", [])]
    out = {
        "documents": len(records),
        "targets with a line break": line_breaks,
        "most references in one answer": most_runs,
        "tokens with EOS (count, median, max)": {
            k: [len(v), sorted(v)[len(v) // 2], max(v)] for k, v in sorted(lengths.items())
        },
        "answers typed: tokens with EOS, max": max(typed, default=0),
        "first characters": dict(first.most_common()),
    }
    print(json.dumps(out, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
