"""GRPO reward: perfect pages score 1, loops score 0, floors keep partial credit, graded terms move the right
way,
and the TRL / verl entry points agree with the page reward."""

from __future__ import annotations

import json
import random

import pytest

from jocr.checks.reward import (
    RewardConfig,
    answer_reward,
    answer_rewards,
    caption_reward,
    caption_rewards,
    compute_score,
    fields_reward,
    fields_rewards,
    page_reward,
    reward,
    reward_terms,
)

REF = (
    "# Results\n\nWe measured the throughput of the system on three machines and report the mean.\n\n"
    "<table><tr><th>Machine</th><th>Pages/s</th></tr><tr><td>A100</td><td>2.57</td></tr>"
    "<tr><td>L4</td><td>1.10</td></tr></table>\n\n"
    "The cost follows $$c = \\frac{\\tau}{S}$$ where tau is the acceptance length.\n"
)
TESTS = [
    {"pdf": "p.pdf", "page": 1, "id": "t1", "type": "present", "text": "throughput of the system"},
    {
        "pdf": "p.pdf",
        "page": 1,
        "id": "t2",
        "type": "table",
        "cell": "2.57",
        "left": "A100",
        "top_heading": "Pages/s",
    },
    {"pdf": "p.pdf", "page": 1, "id": "t3", "type": "math", "math": "c = \\frac{\\tau}{S}"},
]


def _noisy(text: str, rate: float, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcxyz") if ch.isalpha() and rng.random() < rate else ch for ch in text)


def test_perfect_page_scores_one_and_all_terms_one():
    terms = reward_terms(REF, REF, TESTS)
    assert terms["reward"] == pytest.approx(1.0)
    assert all(v == pytest.approx(1.0) for v in terms.values())


def test_degenerate_loop_scores_zero_whatever_else():
    looping = REF + " and the" * 40
    terms = reward_terms(looping, REF, TESTS)
    assert terms["repetition"] == 0.0 and terms["reward"] == 0.0
    assert terms["text"] > 0.3 and terms["tests"] == 1.0


def test_floors_keep_partial_credit():
    terms = reward_terms("", REF, TESTS)
    cfg = RewardConfig()
    assert terms["reward"] > 0.0
    assert terms["reward"] == pytest.approx(
        cfg.text_floor
        * cfg.table_floor
        * cfg.formula_floor
        * cfg.tests_floor
        * cfg.length_floor
        * terms["repetition"],
        rel=0.2,
    )


def test_graded_terms_decrease_with_damage():
    light, heavy = _noisy(REF, 0.05), _noisy(REF, 0.3)
    r_light, r_heavy = reward_terms(light, REF, TESTS), reward_terms(heavy, REF, TESTS)
    assert 1.0 > r_light["text"] > r_heavy["text"]
    assert 1.0 >= r_light["reward"] > r_heavy["reward"] > 0.0
    no_table = REF.split("<table>")[0] + REF.split("</table>")[1]
    assert reward_terms(no_table, REF)["table"] == 0.0
    broken = REF.replace("<td>2.57</td>", "<td>2.75</td>")
    assert 0.8 < reward_terms(broken, REF)["table"] < 1.0
    assert reward_terms(REF.replace("\\tau", "\\sigma"), REF)["formula"] < 1.0


def test_tests_term_is_graded_pass_fraction():
    wrong_cell = REF.replace("<td>2.57</td>", "<td>9.99</td>")
    terms = reward_terms(wrong_cell, None, TESTS)
    assert 0.5 < terms["tests"] < 1.0


def test_trl_and_verl_entry_points():
    completions = [REF, [{"role": "assistant", "content": _noisy(REF, 0.2)}], ""]
    scores = reward(completions, reference=[REF] * 3, tests=[TESTS] * 3)
    assert scores[0] == pytest.approx(1.0) and 0 < scores[2] < scores[1] < 1
    assert scores[1] == pytest.approx(page_reward(_noisy(REF, 0.2), REF, TESTS))
    gt = json.dumps({"reference": REF, "tests": "\n".join(json.dumps(t) for t in TESTS)})
    assert compute_score("jocr-synth", REF, gt) == pytest.approx(1.0)
    assert compute_score("jocr-synth", REF, REF) == pytest.approx(1.0)


def test_caption_reward_is_rouge_l_and_zero_for_a_loop():
    ref = "A bar chart of revenue (million USD) across 4 quarters. Q3 is the largest at 42."
    assert caption_reward(ref, ref) == pytest.approx(1.0)
    partial = caption_reward("A bar chart of revenue across quarters.", ref)
    assert 0.0 < partial < 1.0
    assert caption_reward("Q3 Q3 " * 200, ref) == 0.0  # a degenerate loop
    assert caption_rewards([ref, [{"role": "assistant", "content": "x"}]], caption=[ref, ref]) == [
        pytest.approx(1.0),
        0.0,
    ]
    assert compute_score("jocr-captions", ref, json.dumps({"caption": ref})) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="caption"):
        caption_rewards([ref])


def test_answer_and_fields_rewards_are_anls_and_field_f1_and_zero_for_a_loop():
    assert answer_reward("$288.62", ["$288.62"]) == pytest.approx(1.0)
    assert answer_reward("$288.6", ["$288.62"]) == pytest.approx(1 - 1 / 7)  # ANLS, above its threshold
    assert answer_reward("Orion Tools", ["R-2023-37366"]) == 0.0
    truth = {"invoice_number": "INV-2031", "total": "$1,234.50", "due_date": None}
    assert fields_reward('{"invoice_number": "INV-2031", "total": 1234.5}', truth) == pytest.approx(1.0)
    half = fields_reward('{"invoice_number": "INV-2031", "total": 99, "due_date": null}', truth)
    assert half == pytest.approx(0.5)  # precision 1/2, recall 1/2
    looping = '{"invoice_number": "INV-2031", "note": "' + "ab " * 300 + '"}'  # F1 0.5 without the loop
    assert fields_reward(looping, truth) == 0.0
    assert fields_reward("not json", truth) == fields_reward("[1, 2]", truth) == 0.0
    assert fields_reward("{}", {"a": None}) == pytest.approx(1.0)  # nothing to find, nothing given
    columns = {"answers": [["A"], ["B"]], "fields": [truth, truth]}
    assert answer_rewards(["A", [{"role": "assistant", "content": "x"}]], **columns) == [1.0, 0.0]
    assert fields_rewards(["{}", '{"invoice_number": "INV-2031"}'], **columns)[0] == 0.0
    assert compute_score("jocr-ask", "A", {"answers": ["A"]}) == pytest.approx(1.0)
    assert (
        compute_score("jocr-ask", '{"total": 1234.5}', json.dumps({"fields": {"total": "$1,234.50"}})) == 1.0
    )
    with pytest.raises(ValueError, match="answers"):
        answer_rewards(["A"], answers=[])
