"""GRPO rewards: a product of graded, deterministic checks against a reference page and its unit tests.

Each term is a score in [0, 1] that measures partial correctness; every term except repetition is lifted onto
[floor, 1] (`floor + (1 - floor) * score`) so that one weak aspect does not erase the signal from the others,
while a degenerate loop (repetition score 0) zeroes the reward whatever else the page gets right (the recipe
in the jina-ocr-v1 report, post-training). Terms that do not apply (no tables in the reference, no
tests) are 1.

Terms: `text` (1 - normalised edit distance of the normalised page text), `table` (TEDS of optimally matched
tables, computed with the fast alignment bound), `formula` (edit similarity of matched display formulas after
OmniDocBench normalisation), `tests` (mean graded score of the page's olmOCR-style unit tests, which is the
pass fraction when every test is all-or-nothing), `length` (output length against the reference's) and
`repetition`.

Three entry points: `page_reward` / `reward_terms` for one page, `reward` in the TRL reward-function form, and
`compute_score` in the verl form.

Captions (the `caption` task on a figure's crop) have their own reward, `caption_reward` (one caption) and
`caption_rewards` (TRL form, a `caption` column): `jocr.checks.qa.caption_similarity` (ROUGE-L F1) against
the reference caption, times the repetition term, so a looping caption scores 0 whatever words it shares.
`compute_score` takes a ground truth `{"caption": ...}` the same way.

Asking has two: `answer_reward` (one question: `jocr.checks.qa.anls_one` of the answer text, run references
already resolved, against the accepted answers) and `fields_reward` (one extraction: the field F1 of the
answer's JSON object against the true fields, `jocr.checks.qa.field_scores`; an answer that is not a JSON
object scores 0), each times the repetition term; `answer_rewards` / `fields_rewards` in the TRL form
(`answers` / `fields` columns), and `compute_score` with `{"answers": [...]}` or `{"fields": {...}}`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rapidfuzz.distance import Levenshtein

from jocr.checks.omnidoc import assign, normalize_formula
from jocr.checks.qa import anls_one, caption_similarity, field_scores
from jocr.checks.repetition import RepetitionConfig, repetition_score
from jocr.checks.teds import TedsConfig, table_tree, teds_trees
from jocr.checks.text import normalize_text
from jocr.checks.unittests import BaseTest, load_test


@dataclass(frozen=True)
class RewardConfig:
    """Floors of the graded terms and the length band. Repetition has no floor by design."""

    text_floor: float = 0.1
    table_floor: float = 0.1
    formula_floor: float = 0.1
    tests_floor: float = 0.1
    length_floor: float = 0.1
    length_band: tuple[float, float] = (0.7, 1.4)  # output/reference length ratios that get full credit
    teds: TedsConfig = field(default_factory=lambda: TedsConfig(max_exact_nodes=0))
    repetition: RepetitionConfig = field(default_factory=RepetitionConfig)


_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)
_DISPLAY = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]", re.S)
_TAG = re.compile(r"<[^>]+>")
_PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")


def _tables(markdown: str) -> list[str]:
    """HTML tables, plus Markdown pipe tables converted to HTML."""
    found = _TABLE.findall(markdown)
    block: list[str] = []
    for line in markdown.split("\n") + [""]:
        if _PIPE_ROW.match(line):
            block.append(line)
            continue
        if len(block) >= 2:
            rows = [
                "<tr>" + "".join(f"<td>{c.strip()}</td>" for c in row.strip().strip("|").split("|")) + "</tr>"
                for row in block
                if not set(row.replace("|", "").strip()) <= set("-: ")
            ]
            found.append("<table>" + "".join(rows) + "</table>")
        block = []
    return found


def _formulas(markdown: str) -> list[str]:
    return [normalize_formula(a or b) for a, b in _DISPLAY.findall(markdown)]


def _plain(markdown: str) -> str:
    """Page text for the text term: tags dropped, olmOCR normalisation (emphasis, whitespace, quotes)."""
    return normalize_text(_TAG.sub(" ", markdown)) or ""


def _floored(score: float, floor: float) -> float:
    return floor + (1.0 - floor) * max(0.0, min(1.0, score))


def text_score(prediction: str, reference: str) -> float:
    return Levenshtein.normalized_similarity(_plain(prediction), _plain(reference))


@lru_cache(maxsize=1024)
def _table_trees(markdown: str) -> tuple:
    """Parsed tables of a page (memoised: a GRPO group scores many completions against one reference)."""
    return tuple(t for t in (table_tree(h) for h in _tables(markdown)) if t is not None)


def table_score(prediction: str, reference: str, config: TedsConfig | None = None) -> float | None:
    """Mean TEDS over the reference's tables after optimal matching (None if the reference has no table); by
    default with the fast alignment bound (`TedsConfig(max_exact_nodes=0)`)."""
    config = config or TedsConfig(max_exact_nodes=0)
    ref = list(_table_trees(reference))
    pred = list(_table_trees(prediction))
    if not ref:
        return None if not pred else 0.5  # tables invented where there are none: half credit
    if not pred:
        return 0.0
    sims = [[teds_trees(p, r, False, config) for p in pred] for r in ref]
    pairs = assign([[1.0 - s for s in row] for row in sims])
    return sum(sims[r][c] for r, c in pairs) / len(ref)


def formula_score(prediction: str, reference: str) -> float | None:
    """Mean edit similarity of matched display formulas (None if the reference has none)."""
    ref, pred = _formulas(reference), _formulas(prediction)
    if not ref:
        return None
    if not pred:
        return 0.0
    sims = [[Levenshtein.normalized_similarity(p, r) for p in pred] for r in ref]
    pairs = assign([[1.0 - s for s in row] for row in sims])
    return sum(sims[r][c] for r, c in pairs) / len(ref)


def tests_score(prediction: str, tests: Sequence[BaseTest]) -> float | None:
    if not tests:
        return None
    total = 0.0
    for test in tests:
        try:
            total += test.run(prediction).score
        except Exception:  # a test that cannot run on this output counts as failed
            pass
    return total / len(tests)


def length_score(prediction: str, reference: str, band: tuple[float, float] = (0.7, 1.4)) -> float:
    """1 inside the band of length ratios, falling linearly to 0 at ratio 0 and at twice the upper bound."""
    ref_len = len(reference.strip())
    if ref_len == 0:
        return 1.0 if not prediction.strip() else 0.0
    ratio = len(prediction.strip()) / ref_len
    lo, hi = band
    if ratio < lo:
        return ratio / lo
    if ratio > hi:
        return max(0.0, 1.0 - (ratio - hi) / hi)
    return 1.0


def _as_tests(tests: Iterable[BaseTest | dict | str] | None) -> list[BaseTest]:
    if not tests:
        return []
    if isinstance(tests, str):  # a JSONL blob
        tests = [line for line in tests.splitlines() if line.strip()]
    return [t if isinstance(t, BaseTest) else load_test(t) for t in tests]


def reward_terms(
    prediction: str,
    reference: str | None = None,
    tests: Iterable[BaseTest | dict | str] | None = None,
    config: RewardConfig = RewardConfig(),
) -> dict[str, float]:
    """Every term in [0, 1] before floors (a term that does not apply is 1) and the final `reward`."""
    terms: dict[str, float] = {"text": 1.0, "table": 1.0, "formula": 1.0, "tests": 1.0, "length": 1.0}
    if reference is not None:
        terms["text"] = text_score(prediction, reference)
        table = table_score(prediction, reference, config.teds)
        formula = formula_score(prediction, reference)
        terms["table"] = 1.0 if table is None else table
        terms["formula"] = 1.0 if formula is None else formula
        terms["length"] = length_score(prediction, reference, config.length_band)
    loaded = _as_tests(tests)
    score = tests_score(prediction, loaded)
    terms["tests"] = 1.0 if score is None else score
    terms["repetition"] = repetition_score(prediction, config.repetition)
    floors = {
        "text": config.text_floor,
        "table": config.table_floor,
        "formula": config.formula_floor,
        "tests": config.tests_floor,
        "length": config.length_floor,
    }
    value = terms["repetition"]
    for name, floor in floors.items():
        value *= _floored(terms[name], floor)
    terms["reward"] = value
    return terms


def page_reward(
    prediction: str,
    reference: str | None = None,
    tests: Iterable[BaseTest | dict | str] | None = None,
    config: RewardConfig = RewardConfig(),
) -> float:
    """The product reward in [0, 1] for one page."""
    return reward_terms(prediction, reference, tests, config)["reward"]


def _completion_text(completion: Any) -> str:
    """TRL passes strings (standard format) or lists of chat messages (conversational format)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return str(completion)


def reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """TRL reward function: `reference` and `tests` come as dataset columns (one entry per completion)."""
    n = len(completions)
    references = kwargs.get("reference") or kwargs.get("references") or [None] * n
    tests = kwargs.get("tests") or [None] * n
    return [page_reward(_completion_text(c), references[i], tests[i]) for i, c in enumerate(completions)]


def caption_reward(prediction: str, reference: str, config: RewardConfig = RewardConfig()) -> float:
    """One caption's reward in [0, 1]: its ROUGE-L F1 against `reference`, zeroed by a degenerate loop."""
    return caption_similarity(prediction, reference) * repetition_score(prediction, config.repetition)


def caption_rewards(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """TRL reward function for captions: the reference captions come as the `caption` column."""
    captions = kwargs.get("caption") or kwargs.get("captions")
    if captions is None or len(captions) != len(completions):
        raise ValueError("caption_rewards needs a `caption` column with one reference per completion")
    return [caption_reward(_completion_text(c), str(r)) for c, r in zip(completions, captions)]


def answer_reward(prediction: str, answers: Sequence[str], config: RewardConfig = RewardConfig()) -> float:
    """One answer's reward in [0, 1]: its ANLS against the accepted `answers`, zeroed by a degenerate loop."""
    return anls_one(prediction, list(answers)) * repetition_score(prediction, config.repetition)


def fields_reward(prediction: str, fields: dict, config: RewardConfig = RewardConfig()) -> float:
    """One extraction's reward in [0, 1]: the field F1 of the answer's JSON object against `fields` (name ->
    true value, None where the page has none), zeroed by a degenerate loop; 0 for an answer that is not a
    JSON object. Nothing to find and nothing given scores 1."""
    try:
        values = json.loads(prediction)
    except (json.JSONDecodeError, RecursionError):
        return 0.0
    if not isinstance(values, dict):
        return 0.0
    return field_scores([values], [fields]).f1 * repetition_score(prediction, config.repetition)


def _column(kwargs: dict, name: str, n: int, function: str) -> list:
    column = kwargs.get(name)
    if column is None or len(column) != n:
        raise ValueError(f"{function} needs a `{name}` column with one entry per completion")
    return list(column)


def answer_rewards(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """TRL reward function for questions: each completion's accepted answers come as the `answers` column."""
    answers = _column(kwargs, "answers", len(completions), "answer_rewards")
    return [answer_reward(_completion_text(c), a) for c, a in zip(completions, answers)]


def fields_rewards(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """TRL reward function for extraction: each completion's true fields come as the `fields` column."""
    fields = _column(kwargs, "fields", len(completions), "fields_rewards")
    return [fields_reward(_completion_text(c), f) for c, f in zip(completions, fields)]


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None
) -> float:
    """verl reward: `ground_truth` is the reference Markdown, or a dict (or JSON object) with `reference`
    and/or `tests` (a list of test objects or a JSONL string), or with `caption` (`caption_reward`),
    `answers` (`answer_reward`) or `fields` (`fields_reward`)."""
    reference, tests = None, None
    if isinstance(ground_truth, str):
        stripped = ground_truth.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            try:
                ground_truth = json.loads(stripped)
            except json.JSONDecodeError:
                pass
    if isinstance(ground_truth, dict) and "caption" in ground_truth:
        return caption_reward(solution_str, str(ground_truth["caption"]))
    if isinstance(ground_truth, dict) and "answers" in ground_truth:
        return answer_reward(solution_str, ground_truth["answers"])
    if isinstance(ground_truth, dict) and "fields" in ground_truth:
        return fields_reward(solution_str, ground_truth["fields"])
    if isinstance(ground_truth, dict):
        reference, tests = ground_truth.get("reference"), ground_truth.get("tests")
    else:
        reference = ground_truth
    if extra_info and tests is None:
        tests = extra_info.get("tests")
    return page_reward(solution_str, reference, tests)
