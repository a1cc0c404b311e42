"""Scores for asking a document: ANLS and exact match for answers, field-level precision/recall/F1 for
key-information extraction, and a caption similarity (ROUGE-L F1). Each returns a float in [0, 1], so the
same functions score a benchmark and grade a GRPO rollout (`jocr.checks.reward`'s convention).

ANLS is the DocVQA definition (Biten et al., "Scene Text Visual Question Answering", 2019): per question,
the best over its gold answers of `1 - NL` where NL, the Levenshtein distance over the longer string's
length, is below the threshold (0.5), else 0; strings compared lower-cased with whitespace collapsed, as
the DocVQA evaluation does.

Extraction compares values after normalising what people write differently for the same value: numbers and
amounts (currency signs, thousands separators, trailing zeros), dates in unambiguous spellings (ISO,
"5 March 2024", "March 5, 2024", "2024年3月5日"), full-width characters and case.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rapidfuzz.distance import LCSseq, Levenshtein

from jocr.cjk import WORDS

ANLS_THRESHOLD = 0.5
_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_CURRENCY_SIGN = r"(?:[$€£¥₹]|usd|eur|gbp|cny|rmb|jpy|元)"
_CURRENCY = re.compile(rf"^{_CURRENCY_SIGN}\s*|\s*{_CURRENCY_SIGN}$")
_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
_ISO_DATE = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_ZH_DATE = re.compile(r"^(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日$")
_DAY_MONTH_YEAR = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]+)\.?,?\s+(\d{4})$")
_MONTH_DAY_YEAR = re.compile(r"^([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")


def normalise_answer(text: str) -> str:
    """Lower case, full-width forms folded (NFKC), whitespace collapsed: DocVQA's comparison form."""
    return " ".join(unicodedata.normalize("NFKC", str(text)).lower().split())


def anls_one(prediction: str, answers: Sequence[str], threshold: float = ANLS_THRESHOLD) -> float:
    """One question's ANLS: the best `1 - NL` over its gold answers, 0 where NL >= threshold."""
    pred = normalise_answer(prediction)
    best = 0.0
    for answer in answers:
        gold = normalise_answer(answer)
        longest = max(len(gold), len(pred))
        distance = Levenshtein.distance(gold, pred) / longest if longest else 0.0
        best = max(best, 1.0 - distance if distance < threshold else 0.0)
    return best


def anls(
    predictions: Sequence[str], answers: Sequence[Sequence[str]], threshold: float = ANLS_THRESHOLD
) -> float:
    """Mean ANLS over questions; `answers[i]` lists question i's accepted answers."""
    if len(predictions) != len(answers):
        raise ValueError(f"{len(predictions)} predictions for {len(answers)} questions")
    if not answers:
        return 0.0
    return sum(anls_one(p, a, threshold) for p, a in zip(predictions, answers)) / len(answers)


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 when the prediction equals one of the answers in comparison form, else 0.0."""
    pred = normalise_answer(prediction)
    return float(any(pred == normalise_answer(a) for a in answers))


def _date(text: str) -> str | None:
    for pattern, order in (
        (_ISO_DATE, "ymd"),
        (_ZH_DATE, "ymd"),
        (_DAY_MONTH_YEAR, "dmy"),
        (_MONTH_DAY_YEAR, "mdy"),
    ):
        m = pattern.match(text)
        if not m:
            continue
        parts = dict(zip(order, m.groups()))
        month = parts["m"]
        month_number = int(month) if month.isdigit() else _MONTHS.get(month)
        try:
            return dt.date(int(parts["y"]), month_number or 0, int(parts["d"])).isoformat()
        except ValueError:
            return None
    return None


def _number(text: str) -> str | None:
    bare = _CURRENCY.sub("", text).strip().replace(" ", "")
    if not _NUMBER.match(bare):
        return None
    value = bare.replace(",", "").lstrip("+")
    negative = value.startswith("-")
    whole, _, fraction = value.lstrip("-").partition(".")
    fraction = fraction.rstrip("0")
    digits = (whole.lstrip("0") or "0") + ("." + fraction if fraction else "")
    return ("-" if negative and digits != "0" else "") + digits


def normalise_value(value: object) -> str | None:
    """A field value in comparison form: None for an absent value (None or blank), an ISO date for an
    unambiguous date, a plain decimal for a number or amount, else the answer's comparison form."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    text = normalise_answer(value)
    if not text:
        return None
    return _date(text) or _number(text) or text


@dataclass(frozen=True)
class FieldScores:
    """Extraction scores over a set of documents: counts and the F1 they give."""

    true_positives: int
    predicted: int  # values the extractor gave (not None)
    expected: int  # values the ground truth has (not None)

    @property
    def precision(self) -> float:
        return self.true_positives / self.predicted if self.predicted else float(self.expected == 0)

    @property
    def recall(self) -> float:
        return self.true_positives / self.expected if self.expected else float(self.predicted == 0)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def field_scores(
    predictions: Iterable[Mapping[str, object]], truths: Iterable[Mapping[str, object]]
) -> FieldScores:
    """Field-level counts over documents: a predicted value is right when the ground truth has the same
    field with the same normalised value; a value given where the truth has none, or a wrong one, counts
    against precision, a true value missed or wrong against recall."""
    tp = predicted = expected = 0
    for prediction, truth in zip(predictions, truths, strict=True):
        for name in set(prediction) | set(truth):
            pred = normalise_value(prediction.get(name))
            gold = normalise_value(truth.get(name))
            predicted += pred is not None
            expected += gold is not None
            tp += pred is not None and pred == gold
    return FieldScores(tp, predicted, expected)


def caption_tokens(text: str) -> list[str]:
    """A caption's tokens for `caption_similarity`: words (letters and digits, lower-cased, NFKC-folded) and
    single CJK characters, in order, as ROUGE scores Chinese by characters."""
    return WORDS.findall(normalise_answer(text))


def caption_similarity(prediction: str, reference: str) -> float:
    """ROUGE-L F1 (Lin, "ROUGE: A Package for Automatic Evaluation of Summaries", 2004): the longest common
    subsequence of the two captions' tokens (`caption_tokens`) over the prediction's length (precision) and
    the reference's (recall), their harmonic mean (beta 1, as the `rouge-score` package reports). Word order
    counts, unlike a bag of words: "A is larger than B" and "B is larger than A" differ. 1.0 for two empty
    captions, 0.0 when exactly one is empty."""
    pred, gold = caption_tokens(prediction), caption_tokens(reference)
    if not pred or not gold:
        return float(pred == gold)
    common = LCSseq.similarity(pred, gold)
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)
