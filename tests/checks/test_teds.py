"""TEDS: the reference examples, APTED vs the fast alignment bound, and speed on a large table."""

from __future__ import annotations

import random
import time

import pytest

from jocr.checks.teds import TedsConfig, table_tree, teds, teds_trees


def _table(rows: list[list[str]]) -> str:
    return (
        "<table>" + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows) + "</table>"
    )


GT = _table([["Year", "4.5%"], ["2024", "7"]])


def test_reference_examples():
    # TEDS (Zhong et al., arXiv 1911.10683) on a small table: one cell 4.5% -> 4.6% gives 0.9583; dropping
    # one row gives 0.5.
    assert teds(GT.replace("4.5%", "4.6%"), GT) == pytest.approx(0.9583, abs=1e-4)
    assert teds(_table([["Year", "4.5%"]]), GT) == pytest.approx(0.5)
    assert teds(GT.replace("4.5%", "4.6%"), GT, structure_only=True) == 1.0
    assert teds(GT, GT) == 1.0
    assert teds("no table here", GT) == 0.0


def test_normalisation_th_thead_attributes():
    styled = GT.replace("<table>", '<table class="x"><thead>').replace(
        "<td>Year</td>", '<th style="a">Year</th>'
    )
    assert teds(styled, GT) == 1.0
    spans = GT.replace("<td>Year</td>", '<td colspan="2">Year</td>')
    assert teds(spans, GT, structure_only=True) < 1.0


def _mutate(rows: list[list[str]], rng: random.Random, n_ops: int) -> list[list[str]]:
    rows = [list(r) for r in rows]
    for _ in range(n_ops):
        op = rng.choice(["cell", "del_row", "ins_row", "del_cell"])
        r = rng.randrange(len(rows))
        if op == "cell":
            c = rng.randrange(len(rows[r]))
            rows[r][c] = rows[r][c][::-1] + "x"
        elif op == "del_row" and len(rows) > 1:
            del rows[r]
        elif op == "ins_row":
            rows.insert(r, [f"n{k}" for k in range(len(rows[0]))])
        elif op == "del_cell" and len(rows[r]) > 1:
            del rows[r][rng.randrange(len(rows[r]))]
    return rows


@pytest.mark.parametrize("n_ops", [1, 3])
def test_alignment_bound_against_apted(n_ops):
    rng = random.Random(n_ops)
    exact_cfg, bound_cfg = TedsConfig(max_exact_nodes=10**6), TedsConfig(max_exact_nodes=0)
    for _ in range(25):
        rows = [
            [f"r{i}c{j}v{rng.randint(0, 99)}" for j in range(rng.randint(2, 4))]
            for i in range(rng.randint(2, 5))
        ]
        gt, pred = table_tree(_table(rows)), table_tree(_table(_mutate(rows, rng, n_ops)))
        exact = teds_trees(pred, gt, config=exact_cfg)
        bound = teds_trees(pred, gt, config=bound_cfg)
        assert bound <= exact + 1e-9  # an upper bound on the distance is a lower bound on TEDS
        if n_ops == 1:  # a single changed cell, inserted/deleted row or deleted cell: the bound is exact
            assert bound == pytest.approx(exact, abs=1e-9)


def test_large_table_is_fast():
    rows = [[f"cell {i} {j}" for j in range(20)] for i in range(500)]
    pred = [list(r) for r in rows]
    pred[10][3] = "changed"
    del pred[100]
    start = time.process_time()
    score = teds(_table(pred), _table(rows))
    assert time.process_time() - start < 2.0
    assert 0.99 < score < 1.0
