import pytest
import torch

from jocr.config import OCRConfig
from jocr.model.ocr import OCRModel
from jocr.train import IGNORE_INDEX
from jocr.train.grpo import (
    Rollout,
    group_advantages,
    grpo_loss,
    rollout_batch,
    select_trainable,
    shared_image_embeds,
    token_logprobs,
)
from jocr.types import PageViews


def test_group_advantages_are_centred_and_scaled_per_group():
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5]])
    a = group_advantages(r)
    assert torch.allclose(a[0], torch.tensor([1.0, -1.0, -1.0, 1.0]), atol=1e-3)
    assert torch.all(a[1] == 0)  # an uninformative group carries no signal
    assert torch.allclose(group_advantages(r, std_normalise=False)[0], torch.tensor([0.5, -0.5, -0.5, 0.5]))


def test_on_policy_loss_gradient_is_advantage_weighted_logprob():
    logits = torch.randn(2, 3, requires_grad=True)
    logp = torch.log_softmax(logits, -1)  # (B=2, L=3) stand-in for per-token log-probs
    mask = torch.tensor([[True, True, False], [True, True, True]])
    adv = torch.tensor([2.0, -1.0])
    loss, stats = grpo_loss(logp, logp.detach(), adv, mask, clip_eps=0.2)
    loss.backward()
    g1 = logits.grad.clone()
    logits.grad = None
    manual = -(adv[:, None] * torch.log_softmax(logits, -1) * mask).sum() / mask.sum()
    manual.backward()
    assert torch.allclose(g1, logits.grad, atol=1e-6)
    assert stats["clip_frac"] == 0.0


def test_clipping_stops_the_gradient_past_the_trust_region():
    logp = torch.tensor([[0.0]], requires_grad=True)
    old = torch.tensor([[-1.0]])  # ratio e = 2.7 > 1.2 with a positive advantage: clipped, no gradient
    loss, stats = grpo_loss(logp, old, torch.tensor([1.0]), torch.tensor([[True]]), clip_eps=0.2)
    loss.backward()
    assert logp.grad.abs().item() == 0.0 and stats["clip_frac"] == 1.0


def test_kl_term_is_zero_at_the_reference_and_positive_elsewhere():
    logp = torch.tensor([[-1.0, -2.0]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    _, s0 = grpo_loss(logp, logp, torch.zeros(1), mask, 0.2, ref_logp=logp, kl_coef=0.1)
    _, s1 = grpo_loss(logp, logp, torch.zeros(1), mask, 0.2, ref_logp=logp - 0.5, kl_coef=0.1)
    assert s0["kl"] == pytest.approx(0.0) and s1["kl"] > 0


def test_select_trainable_freezes_the_rest():
    model = torch.nn.ModuleDict({"vision": torch.nn.Linear(2, 2), "decoder": torch.nn.Linear(2, 2)})
    params = select_trainable(model, ["decoder"])
    assert len(params) == 2
    assert not model["vision"].weight.requires_grad and model["decoder"].weight.requires_grad
    with pytest.raises(ValueError):
        select_trainable(model, ["nothing"])


def test_rollout_batch_labels_only_the_completion():
    r = [
        Rollout([0, 3, 3, 9], [5, 6, 1], None, 1.0, "", "stop"),
        Rollout([0, 3, 3, 9], [7, 1], None, 0.0, "", "stop"),
    ]
    ids, labels, images = rollout_batch(r, pad_id=2)
    assert ids.tolist() == [[0, 3, 3, 9, 5, 6, 1], [0, 3, 3, 9, 7, 1, 2]]
    assert labels.tolist()[1] == [IGNORE_INDEX] * 4 + [7, 1, IGNORE_INDEX]
    assert len(images) == 2


def test_shared_image_embeds_give_the_logprobs_of_encoding_every_row():
    """GRPO encodes each page once for its whole group; the policy's log-probabilities must not change."""
    model = OCRModel(OCRConfig.preset("tiny")).init_weights(seed=0)
    cfg = model.config
    g = torch.Generator().manual_seed(0)
    size = cfg.vision.base_size
    pages = [PageViews(torch.rand(3, size, size, generator=g) * 2 - 1, None, (1, 1)) for _ in range(2)]
    prompt = [0] + [cfg.image_token_id] * cfg.image_token_count() + [12]
    rollouts = [
        Rollout(prompt, torch.randint(11, 500, (n,), generator=g).tolist(), pages[i % 2], 0.0, "", "stop")
        for i, n in enumerate([5, 3, 7, 4])
    ]
    ids, labels, images = rollout_batch(rollouts, pad_id=0)
    embeds = shared_image_embeds(model, rollouts)
    assert embeds[0][0] is embeds[2][0] and embeds[1][0] is embeds[3][0]  # one encoding per page
    with torch.no_grad():
        fresh = token_logprobs(model, ids, images, labels)
        shared = token_logprobs(model, ids, images, labels, embeds)
    assert torch.allclose(fresh, shared, atol=1e-5)
    assert (fresh != 0).sum() == sum(len(r.completion_ids) for r in rollouts)


def test_logprobs_are_those_of_the_sampling_temperature():
    model = OCRModel(OCRConfig.preset("tiny")).init_weights(seed=1)
    ids = torch.tensor([[0, 17, 18, 19, 20, 21]])
    labels = torch.tensor([[IGNORE_INDEX, IGNORE_INDEX, 18, 19, 20, 21]])
    with torch.no_grad():
        logits = model(ids).logits[0, :-1]  # (T-1, V)
        for t in (1.0, 0.7):
            want = torch.log_softmax(logits / t, dim=-1)[torch.arange(5), labels[0, 1:].clamp_min(0)]
            want[0] = 0.0  # position 0 scores a prompt token
            got = token_logprobs(model, ids, None, labels, temperature=t)[0]
            assert torch.allclose(got, want, atol=1e-5), t
