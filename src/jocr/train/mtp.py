"""Fit the FastMTP draft head by self-distillation on the verifier's own greedy outputs (FastMTP, arXiv
2509.18362): only the head trains, K = 3 recursive steps, step loss weights
0.51 / 0.31 / 0.18. Called last in the training recipe (`jocr train mtp`), on the final verifier.

Alignment (the convention engine/drafters.py drafts with): for a sequence x with verifier states h,
step 1 takes the pair (h_i, x_{i+1}) at position i and predicts x_{i+2}; step s > 1 takes the head's own
state from step s - 1 at the same anchor i and x_{i+s} at position i + s - 1, and predicts x_{i+s+1}.
Teacher forcing runs each step over the whole sequence at once (plain causal attention, no cache).

Data: every prompt (with its page images) is decoded greedily by the engine with the verifier alone; the
targets are those tokens (plus EOS when the verifier stopped), so the head learns exactly what verification
will accept. Loss only on generated positions. Resumable: `checkpoint_dir` keeps the distilled sequences
and the head/optimizer state; a rerun continues from the last save.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from jocr.engine import Engine, EngineConfig, GenerationRequest


@dataclass
class MTPFitConfig:
    steps: int = 1000
    batch_size: int = 8
    lr: float = 3e-4
    weight_decay: float = 0.0
    warmup: int = 20
    num_steps: int = 3  # K recursive draft steps trained
    step_weights: tuple[float, ...] = (0.51, 0.31, 0.18)
    max_new_tokens: int = 512  # greedy continuation per prompt
    generate_batch_size: int = 16
    eval_fraction: float = 0.1  # sequences held out for the acceptance report
    # The verifier is frozen, so its states for the training sequences are computed once and kept when they
    # fit in this many MiB; each step then runs the head only, not the whole model with its page images.
    # Above it they are recomputed every step.
    state_cache_mb: float = 2048.0
    eval_with_engine: bool = True  # also measure acceptance and tau with the real speculative engine
    checkpoint_dir: str | None = None
    save_every: int = 200
    log_every: int = 50
    seed: int = 0

    def validate(self) -> MTPFitConfig:
        if self.num_steps < 1 or len(self.step_weights) < self.num_steps:
            raise ValueError("need one step weight per trained draft step")
        if self.steps < 0 or self.batch_size < 1:
            raise ValueError("steps must be >= 0 and batch_size >= 1")
        return self


@dataclass
class Sequence:
    ids: list[int]  # prompt + greedy output (+ EOS)
    prompt_len: int
    images: list | None


def _as_request(item, max_new_tokens: int) -> GenerationRequest:
    if isinstance(item, GenerationRequest):
        return GenerationRequest(prompt_ids=item.prompt_ids, images=item.images, max_tokens=max_new_tokens)
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], (list, tuple)):
        return GenerationRequest(prompt_ids=list(item[0]), images=item[1], max_tokens=max_new_tokens)
    return GenerationRequest(prompt_ids=list(item), max_tokens=max_new_tokens)


def distill_sequences(model, prompts, cfg: MTPFitConfig, log=print) -> list[Sequence]:
    """Greedy outputs of the verifier alone for every prompt."""
    engine = Engine(model, EngineConfig(drafter="none", max_batch_size=cfg.generate_batch_size))
    requests = [_as_request(p, cfg.max_new_tokens) for p in prompts]
    t0 = time.perf_counter()
    results = engine.generate(requests)
    seqs = []
    for req, res in zip(requests, results):
        tail = [engine.eos_id] if res.finish_reason == "stop" and res.stop_string is None else []
        seqs.append(Sequence(list(req.prompt_ids) + res.token_ids + tail, len(req.prompt_ids), req.images))
    tokens = sum(len(s.ids) - s.prompt_len for s in seqs)
    log(f"mtp: distilled {len(seqs)} sequences, {tokens} target tokens in {time.perf_counter() - t0:.1f} s")
    return seqs


def _batch(seqs: list[Sequence], pad_id: int, device):
    width = max(len(s.ids) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    # target_ok[b, j]: x[b, j] is a generated token (a training target), not prompt or padding.
    target_ok = torch.zeros(len(seqs), width, dtype=torch.bool)
    for b, s in enumerate(seqs):
        ids[b, : len(s.ids)] = torch.tensor(s.ids)
        target_ok[b, s.prompt_len : len(s.ids)] = True
    images = [s.images for s in seqs]
    return ids.to(device), target_ok.to(device), (images if any(images) else None)


def verifier_states(model, seqs: list[Sequence], batch_size: int, pad_id: int) -> list[torch.Tensor]:
    """The verifier's feedback state at every position but the last, (len(ids) - 1, D) per sequence."""
    states = []
    model.eval()
    with torch.no_grad():
        for i in range(0, len(seqs), batch_size):
            chunk = seqs[i : i + batch_size]
            ids, _, images = _batch(chunk, pad_id, model.device)
            full = model.mtp_feedback(model(ids, images=images))  # (B, T, D)
            states += [full[b, : len(s.ids) - 1].clone() for b, s in enumerate(chunk)]
    return states


def _pad_states(states: list[torch.Tensor], width: int) -> torch.Tensor:
    """Per-sequence states (L_b, D) -> (B, width, D), zero-padded (padding is never a target)."""
    out = states[0].new_zeros(len(states), width, states[0].shape[-1])
    for b, s in enumerate(states):
        out[b, : s.shape[0]] = s
    return out


def mtp_losses(
    model,
    ids: torch.Tensor,
    target_ok: torch.Tensor,
    images,
    num_steps: int,
    state: torch.Tensor | None = None,  # (B, T-1, D) precomputed verifier states (verifier_states)
):
    """Per-step cross-entropy and per-step chained exact-match counts (teacher forcing).

    ids, target_ok: (B, T). Returns (losses[s], correct_chain[s], anchors) where correct_chain[s] counts
    anchors whose drafts 1..s+1 were all right (what speculative verification would accept).
    """
    b, t = ids.shape
    if state is None:
        with torch.no_grad():
            out = model(ids, images=images)
            state = model.mtp_feedback(out)[:, : t - 1]  # (B, T-1, D)
    positions = torch.arange(t - 1, device=ids.device)[None].expand(b, t - 1)  # (B, T-1)
    losses, correct = [], []
    chain = None
    anchor_ok = target_ok[:, 2:]  # anchors i whose step-1 target x_{i+2} is generated
    for s in range(num_steps):
        length = t - 1 - s  # inputs of step s+1
        ids_in = ids[:, s + 1 : s + 1 + length]  # x_{i+s+1}
        step = model.mtp_step(state, ids_in, positions[:, :length] + s, None)
        n_out = t - 2 - s  # outputs with a target x_{i+s+2}
        if n_out <= 0:
            break
        logits = step.logits[:, :n_out]  # (B, n_out, V)
        target = ids[:, s + 2 :]  # (B, n_out)
        ok = target_ok[:, s + 2 :]
        loss = F.cross_entropy(logits[ok], target[ok]) if ok.any() else logits.sum() * 0
        losses.append(loss)
        hit = (logits.argmax(-1) == target) & ok  # (B, n_out)
        chain = hit if chain is None else chain[:, :n_out] & hit
        correct.append(int(chain[:, :n_out].sum()))
        state = model.mtp_feedback(step)[:, : length - 1]
    return losses, correct, int(anchor_ok.sum())


def _head_params(model):
    return [p for p in model.mtp_module.parameters()]


def _save(path: Path, model, opt, step: int, cfg: MTPFitConfig, history: list) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "head": model.mtp_module.state_dict(),
            "opt": opt.state_dict(),
            "step": step,
            "config": asdict(cfg),
            "history": history,
        },
        tmp,
    )
    tmp.replace(path)


def evaluate_acceptance(model, seqs: list[Sequence], cfg: MTPFitConfig, pad_id: int) -> dict:
    """Teacher-forced chained acceptance per draft position on held-out sequences."""
    totals = [0] * cfg.num_steps
    anchors = 0
    model.eval()
    with torch.no_grad():
        for i in range(0, len(seqs), cfg.batch_size):
            ids, ok, images = _batch(seqs[i : i + cfg.batch_size], pad_id, model.device)
            _, correct, n = mtp_losses(model, ids, ok, images, cfg.num_steps)
            anchors += n
            for s, c in enumerate(correct):
                totals[s] += c
    return {"acceptance_tf": [c / anchors if anchors else 0.0 for c in totals], "anchors": anchors}


def fit_mtp_head(model, prompts_with_images, cfg: MTPFitConfig | None = None, log=print) -> dict:
    """Fit `model.mtp_module` on the verifier's greedy outputs for `prompts_with_images` (each a list of
    prompt ids, a (prompt_ids, images) pair or a GenerationRequest). Returns statistics, including the
    acceptance per draft position before and after fitting."""
    cfg = (cfg or MTPFitConfig()).validate()
    if getattr(model, "mtp_module", None) is None:
        raise ValueError("the model has no FastMTP head to fit (config.mtp.enabled is false)")
    pad_id = int(getattr(model.config, "pad_token_id", 0))
    ckpt_dir = Path(cfg.checkpoint_dir) if cfg.checkpoint_dir else None
    data_path = ckpt_dir / "mtp_data.pt" if ckpt_dir else None
    state_path = ckpt_dir / "mtp_state.pt" if ckpt_dir else None
    if ckpt_dir:
        ckpt_dir.mkdir(parents=True, exist_ok=True)
    if data_path is not None and data_path.exists():
        seqs = [Sequence(**s) for s in torch.load(data_path, weights_only=False)]
        log(f"mtp: resumed {len(seqs)} distilled sequences from {data_path}")
    else:
        seqs = distill_sequences(model, list(prompts_with_images), cfg, log)
        if data_path is not None:
            # vars, not asdict: asdict would turn the PageViews of image prompts into plain dicts
            torch.save([vars(s) for s in seqs], data_path)
    seqs = [s for s in seqs if len(s.ids) - s.prompt_len >= 2]
    if not seqs:
        raise ValueError("no prompt produced at least two tokens to learn from")
    n_eval = max(1, int(len(seqs) * cfg.eval_fraction)) if len(seqs) > 1 else 0
    eval_seqs, train_seqs = seqs[:n_eval], seqs[n_eval:] or seqs
    eval_seqs = eval_seqs or train_seqs

    frozen = {n: p.requires_grad for n, p in model.named_parameters()}
    for p in model.parameters():
        p.requires_grad_(False)
    params = _head_params(model)
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    step, history = 0, []
    if state_path is not None and state_path.exists():
        saved = torch.load(state_path, weights_only=False)
        model.mtp_module.load_state_dict(saved["head"])
        opt.load_state_dict(saved["opt"])
        step, history = saved["step"], saved["history"]
        log(f"mtp: resumed at step {step}")
    before = evaluate_acceptance(model, eval_seqs, cfg, pad_id) if step == 0 else None
    weights = cfg.step_weights[: cfg.num_steps]
    t0 = time.perf_counter()
    states = None
    d = model.config.decoder.hidden_size
    cache_mb = sum(len(s.ids) - 1 for s in train_seqs) * d * params[0].element_size() / 2**20
    if step < cfg.steps and cache_mb <= cfg.state_cache_mb:
        states = verifier_states(model, train_seqs, cfg.batch_size, pad_id)
        log(f"mtp: verifier states of {len(train_seqs)} sequences kept ({cache_mb:.0f} MiB)")
    try:
        model.train()
        while step < cfg.steps:
            lr = cfg.lr * min(1.0, (step + 1) / max(1, cfg.warmup))
            lr *= 0.5 * (1 + math.cos(math.pi * step / max(1, cfg.steps)))
            for group in opt.param_groups:
                group["lr"] = lr
            # Batches depend on (seed, step) only: a resumed run sees the batches an uninterrupted one would.
            gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
            pick = torch.randint(0, len(train_seqs), (cfg.batch_size,), generator=gen).tolist()
            ids, ok, images = _batch([train_seqs[i] for i in pick], pad_id, model.device)
            state = None if states is None else _pad_states([states[i] for i in pick], ids.shape[1] - 1)
            losses, correct, anchors = mtp_losses(model, ids, ok, images, cfg.num_steps, state)
            loss = sum(w * loss_s for w, loss_s in zip(weights, losses))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            step += 1
            if step % cfg.log_every == 0 or step == cfg.steps:
                acc = [round(c / max(1, anchors), 3) for c in correct]
                history.append({"step": step, "loss": float(loss.detach()), "acc": acc})
                log(f"mtp: step {step}/{cfg.steps} loss {float(loss.detach()):.4f} train acceptance {acc}")
            if state_path is not None and (step % cfg.save_every == 0 or step == cfg.steps):
                _save(state_path, model, opt, step, cfg, history)
    finally:
        model.eval()
        for n, p in model.named_parameters():
            p.requires_grad_(frozen[n])
    stats = {
        "steps": step,
        "sequences": len(seqs),
        "target_tokens": sum(len(s.ids) - s.prompt_len for s in seqs),
        "train_s": time.perf_counter() - t0,
        "history": history,
        "before": before,
        **evaluate_acceptance(model, eval_seqs, cfg, pad_id),
    }
    if cfg.eval_with_engine:
        engine = Engine(model, EngineConfig(drafter="mtp", num_draft_tokens=cfg.num_steps))
        engine.generate(
            [
                GenerationRequest(s.ids[: s.prompt_len], s.images, max_tokens=cfg.max_new_tokens)
                for s in eval_seqs
            ]
        )
        stats["acceptance"] = engine.stats.acceptance
        stats["tau"] = engine.stats.tau
    log(f"mtp: acceptance per position {stats.get('acceptance', stats['acceptance_tf'])}")
    return stats
