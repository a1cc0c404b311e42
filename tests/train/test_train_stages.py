"""GRPO, merge and MTP stages end to end on a tiny random model and fake pages (fast, CPU)."""

import json

import torch

from jocr.train.checkpoint import save_model_dir
from jocr.train.config import TrainConfig
from jocr.train.curves import read_log


def _model_dir(tmp_path, name, model_cfg, tok_path, seed):
    from jocr.tokenizer import Tokenizer
    from jocr.train.sft import build_model

    cfg = TrainConfig.from_dict({"model": model_cfg, "tokenizer": {"path": str(tok_path)}, "seed": seed})
    tok = Tokenizer.from_file(tok_path)
    return save_model_dir(build_model(cfg, tok), tok, tmp_path / name)


def _base(tmp_path, kind, **kw):
    data = {
        "kind": kind,
        "run_dir": str(tmp_path / f"run_{kind}"),
        "data": {"prompt": "OCR.", "stages": [{"samples": 100}]},
        "eval": {"pages": 2, "max_tokens": 6, "batch_size": 4},
        "threads": 1,
    }
    data.update(kw)
    return TrainConfig.from_dict(data)


def _grpo_cfg(tmp_path, init, trainable: list[str], kl_coef: float) -> TrainConfig:
    """Two GRPO steps of 2 pages x 3 completions at a large lr, so that any trainable weight moves."""
    grpo = {"group_size": 3, "pages_per_step": 2, "max_tokens": 6, "kl_coef": kl_coef, "trainable": trainable}
    return _base(
        tmp_path, "grpo", init=str(init), max_steps=2, optim={"lr": 1e-2, "warmup_steps": 0}, grpo=grpo
    )


def test_grpo_trains_only_the_selected_parameters(tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg):
    from jocr.model import OCRModel
    from jocr.train.grpo import train_grpo

    init = _model_dir(tmp_path, "init", tiny_model_cfg, byte_tokenizer_path, 0)
    out = train_grpo(
        _grpo_cfg(tmp_path, init, ["model.layers", "lm_head"], kl_coef=0.05), log=lambda *a: None
    )
    recs = read_log(tmp_path / "run_grpo" / "log.jsonl")
    assert [r["step"] for r in recs] == [1, 2]
    assert all(0.0 <= r["reward"] <= 1.0 for r in recs)
    before = OCRModel.from_pretrained(init).state_dict()
    after = OCRModel.from_pretrained(out).state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before if k.startswith("model.sam_model"))
    if any(r["informative_groups"] for r in recs):
        assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith("model.layers"))


def test_merge_stage_never_loses_to_a_candidate(tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg):
    from jocr.train.merge_stage import run_merge

    a = _model_dir(tmp_path, "a", tiny_model_cfg, byte_tokenizer_path, 1)
    b = _model_dir(tmp_path, "b", tiny_model_cfg, byte_tokenizer_path, 2)
    cfg = _base(tmp_path, "merge", merge={"candidates": [str(a), str(b)], "method": "slerp", "budget": 3})
    out = run_merge(cfg, log=lambda *a: None)
    summary = json.loads((tmp_path / "run_merge" / "merge.json").read_text())
    scores = [t["score"] for t in summary["trials"]]
    assert len(scores) == 3 and summary["best_score"] == max(scores) >= max(scores[:2])
    assert (out / "model.safetensors").is_file()


def test_mtp_stage_fits_the_head_and_reports_acceptance(
    tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg
):
    from jocr.train.mtp_stage import run_mtp_fit

    model_cfg = dict(tiny_model_cfg, mtp={"enabled": True, "num_steps": 3})
    init = _model_dir(tmp_path, "init", model_cfg, byte_tokenizer_path, 0)
    cfg = _base(
        tmp_path, "mtp", init=str(init), mtp={"pages": 4, "steps": 3, "batch_size": 2, "max_tokens": 6}
    )
    out = run_mtp_fit(cfg, log=lambda *a: None)
    stats = json.loads((tmp_path / "run_mtp" / "mtp_stats.json").read_text())
    assert stats["steps"] == 3
    assert (out / "model.safetensors").is_file()


def test_export_keeps_the_model_card(tmp_path, byte_tokenizer_path, tiny_model_cfg):
    first = _model_dir(tmp_path, "models", tiny_model_cfg, byte_tokenizer_path, 0)
    (first / "README.md").write_text("# card\n")
    (first / "stale.bin").write_text("x")
    again = _model_dir(tmp_path, "models", tiny_model_cfg, byte_tokenizer_path, 1)
    assert (again / "README.md").read_text() == "# card\n"
    assert not (again / "stale.bin").exists() and (again / "model.safetensors").is_file()


def test_greedy_in_group_puts_the_greedy_reading_first(
    tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg
):
    from jocr.documents.preprocess import preprocess_image, views_token_count
    from jocr.engine import Engine, EngineConfig, GenerationRequest
    from jocr.model import OCRModel
    from jocr.tokenizer import Tokenizer
    from jocr.train.grpo import sample_rollouts

    init = _model_dir(tmp_path, "init", tiny_model_cfg, byte_tokenizer_path, 3)
    model, tok = OCRModel.from_pretrained(init).eval(), Tokenizer.from_dir(init)
    cfg = _base(
        tmp_path,
        "grpo",
        init=str(init),
        grpo={"group_size": 3, "max_tokens": 8, "temperature": 1.5, "greedy_in_group": True},
    )
    pages = [fake_synth(s) for s in (11, 12)]
    engine = Engine(model, EngineConfig())
    groups = sample_rollouts(engine, tok, model.config.vision, pages, cfg, seed=0)
    for page, group in zip(pages, groups):
        assert [r.greedy for r in group] == [True, False, False]
        views = preprocess_image(page.image, model.config.vision)
        prompt = tok.build_prompt("OCR.", views_token_count(views, model.config.vision))
        request = GenerationRequest(prompt, [views], max_tokens=8, stop_token_ids=[tok.eos_id])
        (greedy,) = engine.generate([request])
        assert group[0].completion_ids[: len(greedy.token_ids)] == [int(t) for t in greedy.token_ids]
        assert any(r.completion_ids != group[0].completion_ids for r in group[1:])  # the others sample


def test_grpo_can_train_the_vision_encoder(tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg):
    """With the vision encoder trainable the policy forward encodes pages with gradients (not the shared,
    no-grad embeddings), so the encoder's weights move and the decoder-only parameters left out stay."""
    from jocr.model import OCRModel
    from jocr.train.grpo import train_grpo

    init = _model_dir(tmp_path, "init", tiny_model_cfg, byte_tokenizer_path, 0)
    vision = ["model.sam_model", "model.vision_model", "model.projector"]
    out = train_grpo(_grpo_cfg(tmp_path, init, vision, kl_coef=0.0), log=lambda *a: None)
    recs = read_log(tmp_path / "run_grpo" / "log.jsonl")
    assert any(r["informative_groups"] for r in recs)
    before = OCRModel.from_pretrained(init).state_dict()
    after = OCRModel.from_pretrained(out).state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before if k.startswith(("model.layers", "lm_head")))
    assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith("model.sam_model"))
    assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith("model.projector"))


def test_grpo_raises_its_reward_on_a_toy_task(
    tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg, monkeypatch
):
    """The whole loop (sampling, advantages, clipped loss, optimiser) climbs a reward it can reach: the share
    of lowercase ASCII letters in the reading, about 10% of a random byte model's tokens. A sign error or
    advantages paired with the wrong rollouts would make it fall or wander instead."""
    import jocr.train.grpo as grpo_mod

    def lowercase_share(markdown: str, page) -> float:
        return sum(c.isascii() and c.islower() for c in markdown) / max(len(markdown), 1)

    monkeypatch.setattr(grpo_mod, "page_reward", lowercase_share)
    init = _model_dir(tmp_path, "init", tiny_model_cfg, byte_tokenizer_path, 0)
    grpo = {"group_size": 6, "pages_per_step": 2, "max_tokens": 8, "temperature": 1.0, "kl_coef": 0.0}
    cfg = _base(
        tmp_path, "grpo", init=str(init), max_steps=30, optim={"lr": 3e-3, "warmup_steps": 0}, grpo=grpo
    )
    grpo_mod.train_grpo(cfg, log=lambda *a: None)
    rewards = [r["reward"] for r in read_log(tmp_path / "run_grpo" / "log.jsonl")]
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert first < 0.3 and last > first + 0.25, (first, last)


def test_grpo_page_pool_reads_the_same_pages_every_epoch(
    tmp_path, monkeypatch, fake_synth, byte_tokenizer_path, tiny_model_cfg
):
    """With page_pool = 2 and 2 pages per step, every step reads the same two pages; without it each step
    reads new ones."""
    import jocr.synth
    from jocr.train.grpo import train_grpo

    seen: list[int] = []

    def recording(seed, profile, degrade):
        seen.append(seed)
        return fake_synth(seed, profile, degrade)

    monkeypatch.setattr(jocr.synth, "generate_page", recording)
    init = _model_dir(tmp_path, "init", tiny_model_cfg, byte_tokenizer_path, 0)
    cfg = _grpo_cfg(tmp_path, init, ["lm_head"], kl_coef=0.0)
    cfg.max_steps, cfg.grpo.page_pool = 3, 2
    train_grpo(cfg, log=lambda *a: None)
    assert len(seen) == 6 and seen[:2] == seen[2:4] == seen[4:] and seen[0] != seen[1]
    seen.clear()
    cfg = _grpo_cfg(tmp_path / "fresh", init, ["lm_head"], kl_coef=0.0)
    cfg.max_steps = 2
    train_grpo(cfg, log=lambda *a: None)
    assert len(set(seen)) == 4


def test_grpo_hard_below_keeps_only_pages_the_greedy_reading_fails(
    tmp_path, fake_synth, byte_tokenizer_path, tiny_model_cfg
):
    """Screening reads more pages than it keeps, every kept page's greedy reading scores below the bound,
    and a bound no page can meet is a clear error, not an endless screen."""
    import pytest

    from jocr.model import OCRModel
    from jocr.tokenizer import Tokenizer
    from jocr.train.evaluate import greedy_outputs
    from jocr.train.grpo import draw_pages, page_reward

    init = _model_dir(tmp_path, "init", tiny_model_cfg, byte_tokenizer_path, 0)
    model, tok = OCRModel.from_pretrained(init).eval(), Tokenizer.from_dir(init)
    cfg = _grpo_cfg(tmp_path, init, ["lm_head"], kl_coef=0.0)
    state = {"next_index": 0}
    rewards = []
    for _ in range(3):
        pages, _ = draw_pages(cfg, state, model, tok, fake_synth)
        outs = greedy_outputs(model, tok, [p.image for p in pages], "OCR.", cfg.grpo.max_tokens, 4)
        rewards += [page_reward(text, p) for p, (text, _, _) in zip(pages, outs)]
    bound = sorted(rewards)[len(rewards) // 2] + 1e-9  # about half of these pages fall below it
    cfg.grpo.hard_below = bound
    state = {"next_index": 0}
    pages, screened = draw_pages(cfg, state, model, tok, fake_synth)
    outs = greedy_outputs(model, tok, [p.image for p in pages], "OCR.", cfg.grpo.max_tokens, 4)
    assert len(pages) == cfg.grpo.pages_per_step and len(screened) > len(pages)
    assert sum(r < bound for r in screened) >= len(pages)
    assert all(page_reward(text, p) < bound for p, (text, _, _) in zip(pages, outs))
    cfg.grpo.hard_below = 0.0
    with pytest.raises(RuntimeError, match="hard_below"):
        draw_pages(cfg, state, model, tok, fake_synth)
