"""Can a page's block boxes be trusted for drawing? Counts, over real PDF pages, the blocks whose box is
missing (while their lines have boxes), not inside the page, or not covering one of their lines (an
anchored block's runs; `jocr.layout.draw.box_problems`), for the page trees that `jocr parse` makes.

    .venv/bin/python benchmarks/boxes.py                    # default parse (bundled models), both sets
    .venv/bin/python benchmarks/boxes.py --mode lines       # the line source alone (text layer / OCR)
    .venv/bin/python benchmarks/boxes.py --set vector --json out.json

Sets: the olmOCR-Bench sample (tests/data/olmocr-bench-sample/pdfs, every page) and the frozen vector set
(data/frozen-test/vector/pdfs, `jocr synth --frozen vector`). `--mode parse` runs `jocr.parse` with its
defaults (anchored model on PDF pages with a text layer, OCR lines or the image model otherwise);
`--mode lines` builds each page's tree from its line source alone (`jocr.lines.source.page_lines` and the
rules over lines), no model. Prints one row per set and tree source, then every problem found.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from jocr.documents.pages import LoadOptions, open_source
from jocr.layout.draw import box_problems
from jocr.layout.line_rules import lines_tree
from jocr.lines.source import page_lines

ROOT = Path(__file__).resolve().parents[1]
SETS = {
    "olmocr": ROOT / "tests" / "data" / "olmocr-bench-sample" / "pdfs",
    "vector": ROOT / "data" / "frozen-test" / "vector" / "pdfs",
}


def set_pdfs(name: str) -> list[Path]:
    return sorted(SETS[name].rglob("*.pdf"))


def line_trees(path: Path) -> list:
    """(page number, tree or None) for every page of `path`, from its line source alone."""
    out = []
    with open_source(str(path), LoadOptions()) as source:
        for index in range(source.num_pages):
            image = source.render(index)
            lines = page_lines(source, index, image, ocr="auto")
            if lines is None or not lines.usable:
                out.append((index + 1, None))
                continue
            out.append((index + 1, lines_tree(lines.lines, lines.width, lines.height, page=index + 1)))
    return out


def parsed_trees(path: Path, model) -> list:
    import jocr

    doc = jocr.parse(str(path), model=model)
    return [(page.page, page.tree) for page in doc.pages]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("parse", "lines"), default="parse")
    parser.add_argument("--set", choices=(*SETS, "both"), default="both")
    parser.add_argument("--json", type=Path, help="also write the counts and problems here")
    args = parser.parse_args(argv)

    model = None
    if args.mode == "parse":
        from jocr.pipeline import load_model

        model = load_model(None)
    names = list(SETS) if args.set == "both" else [args.set]
    rows: dict[tuple[str, str], Counter] = {}
    problems: list[str] = []
    started = time.perf_counter()
    for name in names:
        for path in set_pdfs(name):
            trees = parsed_trees(path, model) if model is not None else line_trees(path)
            for page, tree in trees:
                kind = tree.source if tree is not None else "none"
                row = rows.setdefault((name, kind), Counter())
                row["pages"] += 1
                if tree is None:
                    continue
                found = box_problems(tree)
                row["blocks"] += len(tree.blocks)
                row["boxed"] += sum(b.bbox is not None for b in tree.blocks)
                row["runs"] += sum(len(b.lines) for b in tree.blocks)
                row["no box"] += sum(": no box" in p for p in found)
                row["outside"] += sum("not inside" in p for p in found)
                row["uncovered"] += sum("does not cover" in p for p in found)
                problems += [f"{path.relative_to(ROOT)} p{page}: {p}" for p in found]
    elapsed = time.perf_counter() - started

    columns = ("pages", "blocks", "boxed", "runs", "no box", "outside", "uncovered")
    print(f"mode {args.mode}, {elapsed:.0f} s")
    print("| set | tree source | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for (name, kind), row in sorted(rows.items()):
        print(f"| {name} | {kind} | " + " | ".join(str(row[c]) for c in columns) + " |")
    for line in problems:
        print(line)
    if args.json:
        table = [{"set": n, "source": k, **{c: r[c] for c in columns}} for (n, k), r in sorted(rows.items())]
        args.json.write_text(json.dumps({"mode": args.mode, "rows": table, "problems": problems}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
