"""ANLS (DocVQA definition), exact match, extraction field F1 with value normalisation, caption similarity."""

from __future__ import annotations

import pytest

from jocr.checks.qa import (
    anls,
    anls_one,
    caption_similarity,
    caption_tokens,
    exact_match,
    field_scores,
    normalise_value,
)


def test_anls_is_one_minus_normalised_distance_below_the_threshold():
    assert anls_one("Total Due", ["total  due"]) == 1.0  # case and whitespace do not count
    assert anls_one("1,234.5O", ["1,234.50"]) == pytest.approx(1 - 1 / 8)  # one letter O for a zero
    assert anls_one("fourteen", ["14"]) == 0.0  # NL >= 0.5 scores nothing
    assert anls_one("abcd", ["abxy"]) == 0.0  # NL exactly 0.5 is not below the threshold
    assert anls_one("abcd", ["zzzz", "abcx"]) == pytest.approx(0.75)  # the best gold answer counts


def test_anls_over_questions_and_its_errors():
    assert anls(["a", "b"], [["a"], ["c"]]) == 0.5
    assert anls([], []) == 0.0
    with pytest.raises(ValueError, match="2 predictions for 1 questions"):
        anls(["a", "b"], [["a"]])


def test_exact_match_in_comparison_form():
    assert exact_match(" INVOICE-42 ", ["invoice-42"]) == 1.0
    assert exact_match("invoice 42", ["invoice-42"]) == 0.0
    assert exact_match("ＡＢＣ", ["abc"]) == 1.0  # full-width folded


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("$1,234.50", "1234.5"),
        ("USD 12", "12.00"),
        ("¥ 300", "300元"),
        ("007", "7"),
        ("-0.0", "0"),
        ("2024-03-05", "5 March 2024"),
        ("March 5th, 2024", "2024/3/5"),
        ("2024年3月5日", "2024-03-05"),
        ("ACME  Corp", "acme corp"),
    ],
)
def test_values_written_differently_normalise_the_same(a, b):
    assert normalise_value(a) == normalise_value(b)


@pytest.mark.parametrize(("a", "b"), [("1234.5", "1234.6"), ("2024-03-05", "2024-05-03"), ("12", "-12")])
def test_different_values_stay_different(a, b):
    assert normalise_value(a) != normalise_value(b)


def test_absent_values_and_impossible_dates():
    assert normalise_value(None) is None and normalise_value("  ") is None
    assert normalise_value("2024-02-30") == "2024-02-30"  # not a date: compared as text
    assert normalise_value(True) == "true"


def test_field_scores_count_right_wrong_missing_and_invented_values():
    truths = [{"number": "INV-1", "total": "$10.00", "date": None}, {"number": "INV-2", "total": "5"}]
    preds = [{"number": "inv-1", "total": "10", "date": "2024-01-01"}, {"number": "INV-3"}]
    scores = field_scores(preds, truths)
    # right: number and total of the first; invented: the first's date; wrong: the second's number;
    # missing: the second's total.
    assert (scores.true_positives, scores.predicted, scores.expected) == (2, 4, 4)
    assert scores.precision == 0.5 and scores.recall == 0.5 and scores.f1 == 0.5


def test_field_scores_of_nothing_to_find():
    empty = field_scores([{"a": None}], [{"a": None}])
    assert empty.f1 == 1.0
    assert field_scores([{"a": "x"}], [{"a": None}]).f1 == 0.0
    with pytest.raises(ValueError):
        field_scores([{}], [])


def test_caption_similarity_is_rouge_l_f1():
    f1 = 2 * 0.8 * 1.0 / 1.8  # LCS 4 of 5 predicted tokens, of 4 reference tokens
    assert caption_similarity("A bar chart of sales", "bar chart of sales") == pytest.approx(f1)
    # By characters in Chinese: 销售图 in common.
    assert caption_similarity("销售柱状图", "销售折线图") == pytest.approx(0.6)
    assert caption_similarity("", "") == 1.0 and caption_similarity("x", "") == 0.0
    # Order counts, unlike a bag of words: the LCS of the swapped sentence is 3 of 5 tokens.
    assert caption_similarity("A is larger than B", "B is larger than A") == pytest.approx(0.6)
    assert caption_similarity("Q3 is the LARGEST at 42.", "q3 is the largest at 42") == 1.0


def test_caption_tokens_split_chinese_from_latin_and_digits():
    tokens = caption_tokens("柱状图：2019年Revenue（USD）")
    assert tokens == ["柱", "状", "图", "2019", "年", "revenue", "usd"]
