import math

import torch

from jocr.train import IGNORE_INDEX
from jocr.train.vision_aux import BagOfTokensHead, bag_of_tokens_loss, bag_targets


def test_bag_targets_count_answer_tokens_only():
    labels = torch.tensor(
        [[IGNORE_INDEX, 5, 7, 5, 1], [IGNORE_INDEX, IGNORE_INDEX, 1, IGNORE_INDEX, IGNORE_INDEX]]
    )
    bag = bag_targets(labels, vocab_size=10, min_id=4)
    assert torch.allclose(bag[0, 5], torch.tensor(2 / 3)) and torch.allclose(bag[0, 7], torch.tensor(1 / 3))
    assert bag[0, 1] == 0 and bag[1].sum() == 0  # EOS (a special id) never counts


def test_loss_is_minimised_by_informative_features():
    """A constant encoder cannot beat the entropy of the average bag; informative features can."""
    torch.manual_seed(0)
    labels = torch.tensor([[5, 5, 6], [7, 8, 8]])
    informative = torch.zeros(2, 3, 4)
    informative[0, :, 0] = 1.0
    informative[1, :, 1] = 1.0
    constant = torch.ones(2, 3, 4)
    losses = {}
    for name, feats in {"informative": informative, "constant": constant}.items():
        head = BagOfTokensHead(4, 10)
        opt = torch.optim.Adam(head.parameters(), lr=0.1)
        for _ in range(200):
            loss = bag_of_tokens_loss(head, feats, labels, min_id=4)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses[name] = loss.item()
    # the best a constant encoder can do is the cross-entropy to the mean bag
    mean_bag = torch.tensor([0, 0, 0, 0, 0, 1 / 3, 1 / 6, 1 / 6, 1 / 3, 0])
    floor = -sum(t * math.log(m) for t, m in zip([0] * 5 + [2 / 3, 1 / 3, 0, 0, 0], mean_bag) if t > 0) / 2
    floor += -sum(t * math.log(m) for t, m in zip([0] * 7 + [1 / 3, 2 / 3, 0], mean_bag) if t > 0) / 2
    assert losses["constant"] > floor - 0.05
    assert losses["informative"] < losses["constant"] - 0.3


def _spelling_head():
    """A one-slot GridCTCHead whose logits follow its one-hot input features (feature k -> class k)."""
    from jocr.train.vision_aux import ALPHABET, GridCTCHead

    classes = len(ALPHABET) + 2
    head = GridCTCHead(classes, slots=1)
    with torch.no_grad():
        head.proj.weight.copy_(20.0 * torch.eye(classes))
        head.proj.bias.zero_()
    return head


def _grid(text: str, head) -> torch.Tensor:
    """(1, N, C) one-hot grid that spells `text`, with '_' as the blank."""
    from jocr.train.vision_aux import ALPHABET

    ids = [head.blank if ch == "_" else ALPHABET.index(ch) for ch in text]
    return torch.nn.functional.one_hot(torch.tensor(ids), head.classes).float()[None]


def test_visible_text_keeps_what_the_page_prints():
    from jocr.train.vision_aux import visible_text

    markdown = (
        "# Budget Survey\n\n<table><tr><th>Name</th><th>Cost</th></tr><tr><td>Adams</td><td>$487.71</td>"
        "</tr><tr><td>Young</td><td>$8,293.67</td></tr></table>\n\n- Busy battery: 60,684\n\n"
        "$$\\log_{5} g=a$$\n\nThe strategy and $O(n \\log n)$ holds.\n\n1. Rossi, York (1955)"
    )
    assert visible_text(markdown) == (
        "Budget Survey Name Cost Adams $487.71 Young $8,293.67 Busy battery: 60,684 The strategy and holds. "
        "1. Rossi, York (1955)"
    )


def test_grid_ctc_reads_the_page_in_raster_order():
    from jocr.train.vision_aux import grid_ctc_loss

    head = _spelling_head()
    good = grid_ctc_loss(head, _grid("_a_b_b_a__", head), ["abba"]).item()
    bad = grid_ctc_loss(head, _grid("_b_a_a_b__", head), ["abba"]).item()
    assert good < 0.01
    assert bad > 5.0


def test_grid_ctc_skips_texts_it_cannot_spell():
    from jocr.train.vision_aux import grid_ctc_loss

    head = _spelling_head()
    feats = _grid("_a_b", head).expand(3, -1, -1)  # (3, 4, C)
    loss = grid_ctc_loss(head, feats, ["ab", "ababab", ""])  # too long for 4 steps: zero, not inf
    assert math.isfinite(loss.item()) and loss.item() < 0.01
    assert float(grid_ctc_loss(head, feats[2:], [""])) == 0.0
