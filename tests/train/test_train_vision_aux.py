import math

import torch

from jocr.train.data import IGNORE_INDEX
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
        losses[name] = float(loss)
    # the best a constant encoder can do is the cross-entropy to the mean bag
    mean_bag = torch.tensor([0, 0, 0, 0, 0, 1 / 3, 1 / 6, 1 / 6, 1 / 3, 0])
    floor = -sum(t * math.log(m) for t, m in zip([0] * 5 + [2 / 3, 1 / 3, 0, 0, 0], mean_bag) if t > 0) / 2
    floor += -sum(t * math.log(m) for t, m in zip([0] * 7 + [1 / 3, 2 / 3, 0], mean_bag) if t > 0) / 2
    assert losses["constant"] > floor - 0.05
    assert losses["informative"] < losses["constant"] - 0.3
