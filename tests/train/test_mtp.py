"""FastMTP head fitting: acceptance rises from chance to high on a predictable verifier; only the head trains;
a resumed run ends where an uninterrupted one does."""

from __future__ import annotations

import pytest
import torch

from jocr.config import OCRConfig
from jocr.engine import Engine, EngineConfig, GenerationRequest
from jocr.model.ocr import OCRModel
from jocr.train.mtp import (
    MTPFitConfig,
    Sequence,
    _batch,
    _pad_states,
    fit_mtp_head,
    mtp_losses,
    verifier_states,
)
from jocr.types import PageViews


@pytest.fixture(autouse=True)
def single_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def predictable_model(seed: int = 0) -> OCRModel:
    """A verifier whose greedy next token is a fixed permutation of the current one (attention and MLPs
    damped), with a random FastMTP head: drafts start at chance level."""
    model = OCRModel(OCRConfig.preset("tiny")).init_weights(seed=seed).eval()
    g = torch.Generator().manual_seed(seed)
    vocab, d = model.config.decoder.vocab_size, model.config.decoder.hidden_size
    with torch.no_grad():
        emb = torch.randn(vocab, d, generator=g)
        emb = emb / emb.norm(dim=-1, keepdim=True) * d**0.5
        model.model.embed_tokens.weight.copy_(emb)
        perm = torch.randperm(vocab - 11, generator=g) + 11
        perm = torch.cat([perm[:11], perm])[:vocab]
        head = torch.zeros(vocab, d)
        head[perm] = emb
        model.lm_head.weight.copy_(head * 0.5)
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.mul_(0.1)
            for name, p in layer.mlp.named_parameters():
                if "down_proj" in name:
                    p.mul_(0.1)
    return model


def _prompts(n: int, seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(11, 500, (4,), generator=g).tolist() for _ in range(n)]


def test_fit_raises_acceptance_and_trains_only_the_head(tmp_path):
    model = predictable_model()
    frozen_before = {n: p.clone() for n, p in model.named_parameters() if not n.startswith("mtp_module")}
    cfg = MTPFitConfig(steps=150, batch_size=8, lr=1e-2, warmup=10, max_new_tokens=32, eval_fraction=0.2)
    stats = fit_mtp_head(model, _prompts(64), cfg, log=lambda *_: None)
    assert stats["before"]["acceptance_tf"][0] < 0.1
    # Held-out sequences: teacher-forced chained acceptance, and what the speculative engine measures.
    assert stats["acceptance_tf"][0] > 0.9 and stats["acceptance_tf"][2] > 0.7
    assert stats["acceptance"][0] > 0.9 and stats["tau"] > 3.0
    for n, p in model.named_parameters():
        if n in frozen_before:
            assert torch.equal(p, frozen_before[n]), n
    # The fitted head drafts for a model it never saw these prompts of; output stays the verifier's.
    reqs = [GenerationRequest(p, max_tokens=16) for p in _prompts(4, seed=7)]
    spec = Engine(model, EngineConfig(drafter="mtp", num_draft_tokens=3)).generate(reqs)
    plain = Engine(model, EngineConfig(drafter="none")).generate(reqs)
    assert [r.token_ids for r in spec] == [r.token_ids for r in plain]


def test_resume_continues_to_the_same_head(tmp_path):
    base = dict(steps=20, batch_size=4, lr=3e-3, max_new_tokens=12, eval_with_engine=False, save_every=5)
    prompts = _prompts(8)
    straight = predictable_model()
    fit_mtp_head(straight, prompts, MTPFitConfig(**base), log=lambda *_: None)
    ckpt = str(tmp_path / "ckpt")

    def crash(line: str) -> None:  # interrupt the run at step 10, before that step's save
        if "step 10/" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit_mtp_head(
            predictable_model(), prompts, MTPFitConfig(log_every=10, checkpoint_dir=ckpt, **base), log=crash
        )
    again = predictable_model()  # a fresh process rebuilds the model; the head comes from the checkpoint
    logs = []
    fit_mtp_head(again, prompts, MTPFitConfig(log_every=10, checkpoint_dir=ckpt, **base), log=logs.append)
    assert any("resumed at step 5" in line for line in logs)
    for (n, a), (_, b) in zip(straight.mtp_module.named_parameters(), again.mtp_module.named_parameters()):
        assert torch.allclose(a, b, atol=1e-6), n


def test_kept_verifier_states_give_the_losses_of_a_fresh_forward():
    """The head trains on verifier states computed once (other batches, other padding); its losses and
    acceptance counts must be those of running the verifier on the very batch, page images included."""
    model = predictable_model()
    cfg = model.config
    g = torch.Generator().manual_seed(5)
    size = cfg.vision.base_size
    views = [PageViews(torch.rand(3, size, size, generator=g) * 2 - 1, None, (1, 1))]
    image_prompt = [0] + [cfg.image_token_id] * cfg.image_token_count() + [12, 13]
    seqs = [
        Sequence(image_prompt + torch.randint(11, 500, (9,), generator=g).tolist(), len(image_prompt), views),
        Sequence([0, 20, 21] + torch.randint(11, 500, (5,), generator=g).tolist(), 3, None),
        Sequence([0, 30] + torch.randint(11, 500, (14,), generator=g).tolist(), 2, None),
    ]
    states = verifier_states(model, seqs, batch_size=2, pad_id=0)  # batches [0, 1] and [2]
    assert [s.shape[0] for s in states] == [len(s.ids) - 1 for s in seqs]
    for pick in ([0, 1, 2], [2, 0], [1]):
        ids, ok, images = _batch([seqs[i] for i in pick], 0, model.device)
        with torch.no_grad():
            fresh, fresh_hits, fresh_anchors = mtp_losses(model, ids, ok, images, 3)
            kept_state = _pad_states([states[i] for i in pick], ids.shape[1] - 1)
            kept, kept_hits, kept_anchors = mtp_losses(model, ids, ok, None, 3, kept_state)
        assert torch.allclose(torch.stack(fresh), torch.stack(kept), atol=1e-5), pick
        assert (fresh_hits, fresh_anchors) == (kept_hits, kept_anchors)


def test_fit_without_kept_states_ends_at_the_same_head():
    base = dict(steps=12, batch_size=4, lr=3e-3, max_new_tokens=12, eval_with_engine=False)
    kept, fresh = predictable_model(), predictable_model()
    logs = []
    fit_mtp_head(kept, _prompts(8), MTPFitConfig(**base), log=logs.append)
    fit_mtp_head(fresh, _prompts(8), MTPFitConfig(state_cache_mb=0, **base), log=lambda *_: None)
    assert any("verifier states of" in line for line in logs)
    for (n, a), (_, b) in zip(kept.mtp_module.named_parameters(), fresh.mtp_module.named_parameters()):
        assert torch.allclose(a, b, atol=1e-5), n


def test_resumed_sequences_keep_their_page_images(tmp_path):
    model = predictable_model()
    cfg = model.config
    size = cfg.vision.base_size
    views = [
        PageViews(torch.rand(3, size, size, generator=torch.Generator().manual_seed(2)) * 2 - 1, None, (1, 1))
    ]
    prompt = [0] + [cfg.image_token_id] * cfg.image_token_count() + [12]
    base = dict(steps=0, batch_size=2, max_new_tokens=6, eval_with_engine=False, checkpoint_dir=str(tmp_path))
    first = fit_mtp_head(model, [(prompt, views)] * 2, MTPFitConfig(**base), log=lambda *_: None)
    logs = []
    again = fit_mtp_head(model, [(prompt, views)] * 2, MTPFitConfig(**base), log=logs.append)
    assert any("resumed 2 distilled sequences" in line for line in logs)
    assert again["acceptance_tf"] == first["acceptance_tf"]
