"""FastMTP head fitting: acceptance rises from chance to high on a predictable verifier; only the head trains;
a resumed run ends where an uninterrupted one does."""

from __future__ import annotations

import pytest
import torch

from jocr.config import OCRConfig
from jocr.engine import Engine, EngineConfig, GenerationRequest
from jocr.model.ocr import OCRModel
from jocr.train.mtp import MTPFitConfig, fit_mtp_head


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
