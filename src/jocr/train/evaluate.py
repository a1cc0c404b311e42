"""Held-out evaluation of a reader on synthetic pages: greedy outputs scored with jocr.checks.

Per page: the olmOCR-style unit tests shipped with the page (pass / total), the normalised text edit
distance to the reference Markdown (olmOCR text normalisation, Levenshtein / longer length, as
OmniDocBench reports it), table TEDS against the reference's tables (pages with tables), formula match
(share of reference formulas found, KaTeX MathML equality as olmOCR-Bench's math test), and output length
in tokens next to the reference's own token count. The merge search and benchmarks/accuracy.py use this.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch


@dataclass
class PageScore:
    tests_passed: int
    tests_total: int
    edit: float  # normalised edit distance in [0, 1], lower is better
    teds: float | None  # None when the reference has no table
    formula: float | None  # None when the reference has no formula
    out_tokens: int
    ref_tokens: int
    finish_reason: str = "stop"
    failures: list[str] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        return self.tests_passed / self.tests_total if self.tests_total else 1.0


def formula_match(prediction: str, reference: str) -> float | None:
    """Share of the reference's formulas that some predicted formula matches (exact or same MathML)."""
    from jocr.checks.math import extract_formulas

    refs = extract_formulas(reference)
    if not refs:
        return None
    preds = extract_formulas(prediction)
    hits = 0
    for r in refs:
        if any(r == p for p in preds) or any(_safe_match(r, p) for p in preds):
            hits += 1
    return hits / len(refs)


def _safe_match(reference: str, candidate: str) -> bool:
    from jocr.checks.math import formulas_match

    try:
        return bool(formulas_match(reference, candidate))
    except Exception:  # a formula KaTeX cannot render simply does not match
        return False


def table_teds(prediction: str, reference: str) -> float | None:
    """Mean exact TEDS over the reference's tables after optimal matching (OmniDocBench-style); None when the
    reference has no table, 0 for a reference table with no predicted table."""
    from jocr.checks.reward import table_score
    from jocr.checks.teds import TedsConfig

    if "<table" not in reference.lower() and "|" not in reference:
        return None
    return table_score(prediction, reference, TedsConfig())


def score_page(prediction: str, page, tokenizer, out_tokens: int, finish_reason: str = "stop") -> PageScore:
    from jocr.checks import load_test, run_tests
    from jocr.checks.text import normalize_text, normalized_edit_distance

    tests = [t if hasattr(t, "run") else load_test(t) for t in page.tests]
    results = run_tests(tests, prediction)
    failures = [r.reason for r in results if not r.passed]
    edit = normalized_edit_distance(normalize_text(prediction) or "", normalize_text(page.markdown) or "")
    return PageScore(
        tests_passed=sum(r.passed for r in results),
        tests_total=len(results),
        edit=edit,
        teds=table_teds(prediction, page.markdown),
        formula=formula_match(prediction, page.markdown),
        out_tokens=out_tokens,
        ref_tokens=len(tokenizer.encode(page.markdown.strip())) + 1 if tokenizer is not None else 0,
        finish_reason=finish_reason,
        failures=failures[:3],
    )


def summarise(scores: Sequence[PageScore]) -> dict[str, float]:
    """Aggregate: pass rate over all tests (olmOCR-style), mean page pass rate, mean edit distance, mean TEDS
    and formula match over pages that have them, mean output / reference tokens."""
    n = max(1, len(scores))
    tests = sum(s.tests_total for s in scores)
    teds = [s.teds for s in scores if s.teds is not None]
    form = [s.formula for s in scores if s.formula is not None]
    return {
        "pages": len(scores),
        "tests": tests,
        "pass_rate": sum(s.tests_passed for s in scores) / tests if tests else float("nan"),
        "page_pass_rate": sum(s.pass_rate for s in scores) / n,
        "edit": sum(s.edit for s in scores) / n,
        "teds": sum(teds) / len(teds) if teds else float("nan"),
        "table_pages": len(teds),
        "formula": sum(form) / len(form) if form else float("nan"),
        "formula_pages": len(form),
        "out_tokens": sum(s.out_tokens for s in scores) / n,
        "ref_tokens": sum(s.ref_tokens for s in scores) / n,
        "truncated": sum(s.finish_reason != "stop" for s in scores),
    }


def greedy_outputs(
    model,
    tokenizer,
    images,
    prompt: str | None = None,
    max_tokens: int = 320,
    batch_size: int = 16,
    spec: bool = False,
) -> list[tuple[str, int, str]]:
    """(text, output tokens, finish reason) per PIL image, greedy, through the engine."""
    from jocr.engine import Engine, EngineConfig, GenerationRequest
    from jocr.layout.request import PageRequestBuilder

    builder = PageRequestBuilder(tokenizer, model.config.vision, prompt or None)
    engine = Engine(model, EngineConfig(max_batch_size=batch_size, drafter="mtp" if spec else "none"))
    requests = []
    for image in images:
        page = builder.page(image)
        requests.append(
            GenerationRequest(
                prompt_ids=page.prompt_ids,
                images=[page.views],
                max_tokens=max_tokens,
                temperature=0.0,
                stop_token_ids=(tokenizer.eos_id,),
            )
        )
    out = []
    with torch.no_grad():
        for i in range(0, len(requests), batch_size):
            for res in engine.generate(requests[i : i + batch_size]):
                ids = [int(t) for t in res.token_ids if int(t) != tokenizer.eos_id]
                out.append((builder.text(ids), len(res.token_ids), res.finish_reason))
    return out


def evaluate_model(
    model, tokenizer, pages, max_tokens: int = 320, batch_size: int = 16, prompt: str | None = None
) -> tuple[dict[str, float], list[PageScore], list[str]]:
    """Greedy-decode and score `pages`; returns (summary, per-page scores, outputs)."""
    was_training = model.training
    model.eval()
    t0 = time.time()
    outs = greedy_outputs(model, tokenizer, [p.image for p in pages], prompt, max_tokens, batch_size)
    seconds = time.time() - t0
    scores = [score_page(text, page, tokenizer, n, fin) for (text, n, fin), page in zip(outs, pages)]
    summary = summarise(scores)
    summary["pages_per_s"] = len(pages) / seconds if seconds > 0 else float("nan")
    if was_training:
        model.train()
    return summary, scores, [o[0] for o in outs]


def eval_pages(n: int, profile: str = "cpu-small", split: str = "val", degrade: bool = False, start: int = 0):
    """Pages start .. start+n-1 of a synthetic split (the synth package's disjoint seed ranges)."""
    from jocr.synth import generate_page, global_seed

    return [generate_page(global_seed(split, start + i), profile, degrade) for i in range(n)]


def frozen_test_pages(name: str = "cpu-small", limit: int | None = None) -> list:
    """The synth package's frozen test set (e.g. cpu-small: 200 pages of the test split), or its first
    `limit` pages."""
    from jocr.synth import FROZEN_TEST_SETS

    spec = FROZEN_TEST_SETS[name]
    n = spec["pages"] if limit is None else min(limit, spec["pages"])
    return eval_pages(n, spec["profile"], spec["split"], spec["degrade"], start=spec["seed"])


def heldout_test_pages(name: str = "cpu-small", n: int = 1000) -> list:
    """n pages of a frozen set's split and profile right after its seed range: held out like it (no stage
    reads the test split) and n as large as a small difference between two models needs."""
    from jocr.synth import FROZEN_TEST_SETS

    spec = FROZEN_TEST_SETS[name]
    return eval_pages(n, spec["profile"], spec["split"], spec["degrade"], start=spec["seed"] + spec["pages"])


def paired_difference(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> tuple[float, float]:
    """Pass rate of b minus a over the same pages ((passed, total) per page) and its standard error, with
    pages as the independent units (a page's tests are not independent of each other): the ratio
    estimator's linearised variance, sqrt(n * var(d_i - delta * t_i)) / sum(t)."""
    d = [pb - pa for (pa, _), (pb, _) in zip(a, b)]
    t = [ta for _, ta in a]
    total = sum(t)
    delta = sum(d) / total
    resid = [di - delta * ti for di, ti in zip(d, t)]
    mean = sum(resid) / len(resid)
    var = sum((r - mean) ** 2 for r in resid) / max(1, len(resid) - 1)
    return delta, (len(resid) * var) ** 0.5 / total


def merge_score(summary: dict[str, float]) -> float:
    """The merge search's objective: mean of unit-test pass rate and (1 - edit distance), as the recipe
    searches merge weights on unit-test and edit-distance scores."""
    return 0.5 * summary["pass_rate"] + 0.5 * (1.0 - summary["edit"])
