"""Agreement of jocr.checks with the official olmOCR-Bench scorer, test by test.

Three steps (see docs/checks.md):

1. `perturb SAMPLE_DIR BENCH_DIR`: copy the benchmark (pdfs, JSONL) and write candidate folders: the original
   `olmocr_pipeline` Markdown plus perturbed copies (reordered paragraphs, dropped lines, character noise,
   broken tables, edited math, repetition tails, emphasis noise), each seeded and reproducible.
2. `official BENCH_DIR OUT_JSON`: run the official test classes on every (test, candidate) pair. Run it with a
   Python that can import `olmocr` (a throwaway environment; jocr is not imported in this mode). The verdicts
   are committed as tests/checks/data/olmocr_official_verdicts.json so the suite needs no olmocr install.
3. `compare BENCH_DIR OUT_JSON`: run jocr.checks on the same pairs and print the agreement table and every
   disagreement.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import shutil
import sys

CANDIDATE = "olmocr_pipeline"


# -----------------------------------------------------------------------------------------------
# perturbations
def _paragraphs(md: str) -> list[str]:
    return re.split(r"\n\s*\n", md)


def reorder_paragraphs(md: str, rng: random.Random) -> str:
    paras = _paragraphs(md)
    rng.shuffle(paras)
    return "\n\n".join(paras)


def drop_lines(md: str, rng: random.Random, rate: float = 0.25) -> str:
    return "\n".join(line for line in md.split("\n") if rng.random() >= rate)


def char_noise(md: str, rng: random.Random, rate: float = 0.02) -> str:
    out = []
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 .,-"
    for ch in md:
        r = rng.random()
        if r < rate / 3:
            continue  # deletion
        if r < 2 * rate / 3:
            out.append(rng.choice(alphabet))  # substitution
            continue
        out.append(ch)
        if r < rate:
            out.append(rng.choice(alphabet))  # insertion
    return "".join(out)


def break_tables(md: str, rng: random.Random) -> str:
    """Damage HTML and Markdown tables: drop closing tags, delete or swap rows, swap cells, unclose tables."""

    def html_table(m: re.Match) -> str:
        t = m.group(0)
        rows = re.findall(r"<tr\b.*?</tr>", t, flags=re.S)
        ops = rng.sample(["drop_close", "del_row", "swap_rows", "swap_cells", "unclose", "colspan"], 3)
        if "del_row" in ops and len(rows) > 2:
            t = t.replace(rng.choice(rows[1:]), "", 1)
        if "swap_rows" in ops and len(rows) > 3:
            a, b = rng.sample(range(1, len(rows)), 2)
            t = t.replace(rows[a], "\0A\0", 1).replace(rows[b], rows[a], 1).replace("\0A\0", rows[b], 1)
        if "swap_cells" in ops:
            cells = re.findall(r"<td\b[^>]*>.*?</td>", t, flags=re.S)
            if len(cells) > 2:
                i = rng.randrange(len(cells) - 1)
                t = t.replace(cells[i] + cells[i + 1], cells[i + 1] + cells[i], 1)
        if "drop_close" in ops:
            t = re.sub(r"</td>", lambda mm: "" if rng.random() < 0.3 else mm.group(0), t)
        if "colspan" in ops:
            t = t.replace("<td>", '<td colspan="2">', 1)
        if "unclose" in ops:
            t = t.replace("</table>", "")
        return t

    md = re.sub(r"<table\b.*?</table>", html_table, md, flags=re.S)
    lines = md.split("\n")
    for i, line in enumerate(lines):
        if line.count("|") >= 3 and rng.random() < 0.3:
            cells = line.split("|")
            if len(cells) > 3:
                a, b = rng.sample(range(1, len(cells) - 1), 2)
                cells[a], cells[b] = cells[b], cells[a]
                lines[i] = "|".join(cells)
    return "\n".join(lines)


_MATH_EDITS = [
    (r"\\left\s*", ""),
    (r"\\right\s*", ""),
    (r"\\,", ""),
    (r"(?<=[a-z]) (?=[a-z])", r" \\, "),
    (r"\\mathrm\{([^{}]*)\}", r"\\text{\1}"),
    (r"\\operatorname\{([^{}]*)\}", r"\\mathrm{\1}"),
    (r"\^\{(\w)\}", r"^\1"),
    (r"_(\w)", r"_{\1}"),
    (r"\\frac", r"\\dfrac"),
    (r"=", r"+"),
    (r"\\alpha", r"a"),
    (r"x", r"y"),
    (r"\(", r"\\left("),
]


def edit_math(md: str, rng: random.Random) -> str:
    """Apply visually neutral and harmful edits inside formulas; sometimes convert or drop delimiters."""

    def one(m: re.Match) -> str:
        body = m.group(2)
        for pattern, repl in rng.sample(_MATH_EDITS, 3):
            body = re.sub(pattern, repl, body)
        open_, close = m.group(1), m.group(3)
        r = rng.random()
        if r < 0.15:
            open_, close = "$$", "$$"
        elif r < 0.2:
            open_, close = "", ""
        return open_ + body + close

    return re.sub(r"(\\\(|\\\[|\$\$)(.+?)(\\\)|\\\]|\$\$)", one, md, flags=re.S)


def repetition_tail(md: str, rng: random.Random) -> str:
    unit = rng.choice(
        ["ab", "\n| | |", " the", "1. ", "<td></td>", "..", "x", "Figure 3 shows the results. "]
    )
    return md.rstrip() + " " + unit * rng.choice([10, 35, 80])


def emphasis_noise(md: str, rng: random.Random) -> str:
    words = md.split(" ")
    for i, w in enumerate(words):
        r = rng.random()
        if r < 0.05 and w.strip():
            words[i] = f"**{w}**"
        elif r < 0.08 and w.strip():
            words[i] = f"_{w}_"
        elif r < 0.1:
            words[i] = w.replace("'", "\u2019").replace('"', "\u201c")
        elif r < 0.11:
            words[i] = w + "<br>"
    return " ".join(words)


PERTURBATIONS = {
    "reorder": reorder_paragraphs,
    "droplines": drop_lines,
    "charnoise": char_noise,
    "tables": break_tables,
    "math": edit_math,
    "repeat": repetition_tail,
    "emphasis": emphasis_noise,
}


def perturb(sample_dir: str, bench_dir: str, seeds: int = 2) -> None:
    os.makedirs(bench_dir, exist_ok=True)
    for name in ("pdfs", CANDIDATE):
        shutil.copytree(os.path.join(sample_dir, name), os.path.join(bench_dir, name), dirs_exist_ok=True)
    for jsonl in glob.glob(os.path.join(sample_dir, "*.jsonl")):
        shutil.copy(jsonl, bench_dir)
    src = os.path.join(sample_dir, CANDIDATE)
    for path in sorted(glob.glob(os.path.join(src, "**/*.md"), recursive=True)):
        rel = os.path.relpath(path, src)
        with open(path, encoding="utf-8") as f:
            md = f.read()
        for name, fn in PERTURBATIONS.items():
            for seed in range(seeds):
                rng = random.Random(f"{name}/{seed}/{rel}")
                out = os.path.join(bench_dir, f"{name}{seed}", rel)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with open(out, "w", encoding="utf-8") as f:
                    f.write(fn(md, rng))


# ------------------------------------------------------------------------------------------ shared
# enumeration
def _pairs(bench_dir: str, load_tests, make_baseline):
    """(candidate, test, markdown path) for every test, with a baseline test added for PDFs that have none."""
    tests = []
    for jsonl in sorted(glob.glob(os.path.join(bench_dir, "*.jsonl"))):
        tests.extend(load_tests(jsonl))
    pdfs = sorted(
        os.path.relpath(p, os.path.join(bench_dir, "pdfs"))
        for p in glob.glob(os.path.join(bench_dir, "pdfs", "**/*.pdf"), recursive=True)
    )
    for pdf in pdfs:
        if not any(t.type == "baseline" and t.pdf == pdf for t in tests):
            tests.append(make_baseline(pdf))
    candidates = sorted(
        e for e in os.listdir(bench_dir) if e != "pdfs" and os.path.isdir(os.path.join(bench_dir, e))
    )
    for cand in candidates:
        for test in tests:
            stem = os.path.splitext(test.pdf)[0]
            files = sorted(
                glob.glob(os.path.join(bench_dir, cand, f"{glob.escape(stem)}_pg{test.page}_repeat*.md"))
            )
            if files:
                yield cand, test, files[0]


def official(bench_dir: str, out_json: str) -> None:
    from olmocr.bench.tests import BaselineTest, load_tests  # the official scorer (throwaway environment)

    verdicts: dict[str, dict[str, bool]] = {}
    for cand, test, path in _pairs(
        bench_dir,
        load_tests,
        lambda pdf: BaselineTest(id=f"{pdf}_baseline", pdf=pdf, page=1, type="baseline"),
    ):
        with open(path, encoding="utf-8") as f:
            md = f.read()
        try:
            passed, _ = test.run(md)
        except Exception:
            passed = False
        verdicts.setdefault(cand, {})[test.id] = bool(passed)
    with open(out_json, "w") as f:
        json.dump(verdicts, f, indent=1, sort_keys=True)
    os._exit(0)  # the official math renderer keeps browser threads alive


def compare(bench_dir: str, official_json: str) -> int:
    from jocr.checks.unittests import BaselineTest, load_tests

    with open(official_json) as f:
        ref = json.load(f)
    rows: dict[str, list[int]] = {}
    by_type: dict[str, list[int]] = {}
    disagreements = []
    for cand, test, path in _pairs(
        bench_dir,
        load_tests,
        lambda pdf: BaselineTest(id=f"{pdf}_baseline", pdf=pdf, page=1, type="baseline"),
    ):
        if test.id not in ref.get(cand, {}):
            continue
        with open(path, encoding="utf-8") as f:
            ours = test.run(f.read()).passed
        theirs = ref[cand][test.id]
        for key, table in ((cand, rows), (test.type, by_type)):
            agree, total = table.setdefault(key, [0, 0])
            table[key] = [agree + (ours == theirs), total + 1]
        if ours != theirs:
            disagreements.append((cand, test.id, test.type, theirs, ours))
    print("| candidate | pairs | agree | rate |\n|---|---|---|---|")
    for key, (agree, total) in sorted(rows.items()):
        print(f"| {key} | {total} | {agree} | {agree / total:.3f} |")
    agree = sum(a for a, _ in rows.values())
    total = sum(t for _, t in rows.values())
    print(f"| **all** | {total} | {agree} | {agree / total:.4f} |\n")
    print("| test type | pairs | agree | rate |\n|---|---|---|---|")
    for key, (a, t) in sorted(by_type.items()):
        print(f"| {key} | {t} | {a} | {a / t:.3f} |")
    print("\nDisagreements (candidate, test, type, official, jocr):")
    for d in disagreements:
        print("  ", *d)
    return 0


# ----------------------------------------------------------------------------------------- formula-pair level
def math_pairs(sample_dir: str, out_json: str) -> None:
    """(reference, candidate) formula pairs: each math test's reference under every single edit and every pair
    of edits, plus the formulas the pipeline wrote on the same page."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from jocr.checks.math import extract_formulas

    pairs = []
    for jsonl in sorted(glob.glob(os.path.join(sample_dir, "*.jsonl"))):
        with open(jsonl, encoding="utf-8") as f:
            tests = [json.loads(line) for line in f if line.strip()]
        for t in tests:
            if t["type"] != "math":
                continue
            ref = t["math"]
            variants = {ref}
            for i, (pa, ra) in enumerate(_MATH_EDITS):
                one = re.sub(pa, ra, ref)
                variants.add(one)
                for pb, rb in _MATH_EDITS[i + 1 :]:
                    variants.add(re.sub(pb, rb, one))
            stem = os.path.splitext(t["pdf"])[0]
            for md_path in glob.glob(
                os.path.join(sample_dir, CANDIDATE, f"{glob.escape(stem)}_pg*_repeat*.md")
            ):
                with open(md_path, encoding="utf-8") as f:
                    variants.update(extract_formulas(f.read()))
            pairs.extend([ref, v] for v in sorted(variants))
    with open(out_json, "w") as f:
        json.dump(pairs, f, indent=0)


def official_math(pairs_json: str, out_json: str) -> None:
    from olmocr.bench.katex.render import compare_rendered_equations, render_equation

    with open(pairs_json) as f:
        pairs = json.load(f)
    verdicts = []
    for ref, cand in pairs:
        r, h = render_equation(ref), render_equation(cand)
        ok = ref == cand or (not r.error and bool(compare_rendered_equations(r, h)) if not h.error else False)
        verdicts.append(bool(ok))
    with open(out_json, "w") as f:
        json.dump(verdicts, f)
    os._exit(0)


def compare_math(pairs_json: str, official_json: str) -> int:
    from jocr.checks.math import formulas_match

    with open(pairs_json) as f:
        pairs = json.load(f)
    with open(official_json) as f:
        ref = json.load(f)
    agree = 0
    for (r, c), theirs in zip(pairs, ref):
        ours = formulas_match(r, c)
        agree += ours == theirs
        if ours != theirs:
            print(f"  disagree: official={theirs} jocr={ours}\n    ref:  {r}\n    cand: {c}")
    print(
        f"formula pairs: {len(pairs)}, agree {agree} ({agree / len(pairs):.4f}), official passes {sum(ref)}"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("perturb")
    p.add_argument("sample_dir")
    p.add_argument("bench_dir")
    p.add_argument("--seeds", type=int, default=2)
    p = sub.add_parser("official")
    p.add_argument("bench_dir")
    p.add_argument("out_json")
    p = sub.add_parser("compare")
    p.add_argument("bench_dir")
    p.add_argument("official_json")
    for name in ("mathpairs", "official-math", "compare-math"):
        p = sub.add_parser(name)
        p.add_argument("in_path")
        p.add_argument("out_path")
    args = parser.parse_args()
    if args.cmd == "mathpairs":
        math_pairs(args.in_path, args.out_path)
        return 0
    if args.cmd == "official-math":
        official_math(args.in_path, args.out_path)
        return 0
    if args.cmd == "compare-math":
        return compare_math(args.in_path, args.out_path)
    if args.cmd == "perturb":
        perturb(args.sample_dir, args.bench_dir, args.seeds)
        return 0
    if args.cmd == "official":
        official(args.bench_dir, args.out_json)
        return 0
    return compare(args.bench_dir, args.official_json)


if __name__ == "__main__":
    sys.exit(main())
