"""Held-out scoring helpers: the paired pass-rate difference and its standard error."""

import random

from jocr.train.evaluate import paired_difference


def test_paired_difference_matches_a_bootstrap_over_pages():
    rng = random.Random(0)
    a, b = [], []
    for _ in range(300):
        total = rng.randint(2, 7)
        passed = rng.randint(0, total)
        flip = rng.choice([-1, 0, 0, 0, 1, 1])  # b passes a little more often, per page
        a.append((passed, total))
        b.append((min(total, max(0, passed + flip)), total))
    delta, se = paired_difference(a, b)
    assert delta == (sum(p for p, _ in b) - sum(p for p, _ in a)) / sum(t for _, t in a)
    boot = []
    for _ in range(2000):
        idx = [rng.randrange(len(a)) for _ in a]
        total = sum(a[i][1] for i in idx)
        boot.append(sum(b[i][0] - a[i][0] for i in idx) / total)
    mean = sum(boot) / len(boot)
    boot_se = (sum((x - mean) ** 2 for x in boot) / (len(boot) - 1)) ** 0.5
    assert abs(se - boot_se) < 0.1 * boot_se
    assert paired_difference(a, a) == (0.0, 0.0)


def test_heldout_test_pages_follow_the_frozen_range():
    from jocr.synth import FROZEN_TEST_SETS, global_seed
    from jocr.train.evaluate import frozen_test_pages, heldout_test_pages

    spec = FROZEN_TEST_SETS["cpu-small"]
    first_after = global_seed(spec["split"], spec["seed"] + spec["pages"])
    held = heldout_test_pages("cpu-small", 2)
    assert [p.meta["name"] for p in held] == [f"cpu-small_{first_after + i}" for i in range(2)]
    (last_frozen,) = frozen_test_pages("cpu-small")[-1:]
    assert last_frozen.meta["name"] == f"cpu-small_{first_after - 1}"
