"""Supervised fine-tuning (and robustness fine-tuning): image -> Markdown cross-entropy on synthetic pages.

`kind: sft` trains from scratch (or from `init`) on the curriculum in `data.stages`; `kind: robust` is the
same loop started from the SFT model with degraded twins in the data (synth `degrade=True`), as in the
jina-ocr-v1 recipe's robustness round. Loss is on the answer tokens only (labels -100 on BOS, image
placeholders and the prompt). The run resumes from <run_dir>/checkpoint (model, optimizer, step, next data
index), writes a checkpoint every `checkpoint_every_min` minutes and on SIGTERM/SIGINT, logs to log.jsonl
and redraws curves.png at every checkpoint.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from jocr.train import IGNORE_INDEX
from jocr.train.config import TrainConfig
from jocr.train.data import SampleStream, add_input_noise, collate
from jocr.train.heads import VisionHeads
from jocr.train.run import ResumableRun


def tokenizer_file(cfg: TrainConfig) -> Path:
    """The run's tokenizer.json: the `init` model's own when starting from one, else tokenizer.path."""
    own = Path(cfg.init) / "tokenizer.json" if cfg.init else None
    return own if own is not None and own.is_file() else Path(cfg.tokenizer.path)


def ensure_tokenizer(cfg: TrainConfig, log=print):
    """The run's tokenizer (`tokenizer_file`), trained as a BPE on synthetic text first when tokenizer.path
    does not exist."""
    from jocr.tokenizer import DEFAULT_PROMPT, PROMPTS, Tokenizer
    from jocr.train.bpe import save_tokenizer, synth_corpus, train_bpe

    path = tokenizer_file(cfg)
    if not path.is_file():
        t0 = time.time()
        extra = [cfg.data.prompt or DEFAULT_PROMPT, *PROMPTS.values()] * 20
        corpus = synth_corpus(cfg.tokenizer.corpus_pages, cfg.tokenizer.profiles, extra=extra)
        save_tokenizer(train_bpe(corpus, cfg.tokenizer.vocab_size), path)
        log(
            f"trained a {cfg.tokenizer.vocab_size}-token BPE on {cfg.tokenizer.corpus_pages} pages "
            f"in {time.time() - t0:.0f}s -> {path}"
        )
    return Tokenizer.from_file(path)


def build_model(cfg: TrainConfig, tokenizer):
    """A fresh model from cfg.model (ids and vocabulary taken from the tokenizer) or the `init` model."""
    from jocr.config import OCRConfig
    from jocr.model import OCRModel

    if cfg.init:
        return OCRModel.from_pretrained(cfg.init, dtype=torch.float32)
    data = cfg.model_dict()
    if not data:
        raise ValueError(
            "the config needs `model`/`model_file` (an OCRConfig mapping) or `init` (a model dir)"
        )
    preset = data.pop("preset", None)
    base = OCRConfig.preset(preset).to_dict() if preset else {}
    base.pop("model_type", None)
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    base.setdefault("decoder", {})["vocab_size"] = tokenizer.vocab_size
    base.update(
        bos_token_id=tokenizer.bos_id,
        eos_token_id=tokenizer.eos_id,
        pad_token_id=tokenizer.pad_id,
        image_token_id=tokenizer.image_id,
    )
    config = OCRConfig.from_dict({"model_type": "jocr", **base})
    model = OCRModel(config).init_weights(seed=cfg.seed)
    if cfg.init_vision:
        load_vision(model, Path(cfg.init_vision))
    return model


def load_vision(model, model_dir: Path) -> None:
    """Copy the vision-side weights (DeepEncoder, projector, layout separators) of the model in `model_dir`
    into `model`, on which a new decoder and vocabulary start (`init_vision`; same vision config required)."""
    from safetensors.torch import load_file

    from jocr.config import OCRConfig
    from jocr.model.params import VISION_PREFIXES

    source = OCRConfig.load(model_dir / "config.json").vision
    if source != model.config.vision:
        raise ValueError(f"init_vision: {model_dir} has a different vision config than this run's model")
    weights = {
        k: v for k, v in load_file(model_dir / "model.safetensors").items() if k.startswith(VISION_PREFIXES)
    }
    missing = [k for k in model.state_dict() if k.startswith(VISION_PREFIXES) and k not in weights]
    if missing:
        raise ValueError(f"init_vision: {model_dir} lacks {len(missing)} vision weights, e.g. {missing[0]}")
    model.load_state_dict(weights, strict=False)


# The reading head of a finished stage, saved beside its model so that a stage started from it (`init`)
# keeps the head instead of starting a new one; the model loader ignores the file.


def answer_loss(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Mean next-token cross-entropy over answer positions; also (correct count, token count).

    logits: (B, T, V) float32; labels: (B, T) with IGNORE_INDEX outside the answer.
    """
    shift_labels = labels[:, 1:]  # (B, T-1): position t predicts token t+1
    keep = shift_labels != IGNORE_INDEX  # (B, T-1)
    picked = logits[:, :-1][keep]  # (N, V)
    targets = shift_labels[keep]  # (N,)
    loss = F.cross_entropy(picked, targets)
    correct = (picked.detach().argmax(-1) == targets).sum()
    return loss, correct, int(targets.numel())


def batch_loss(model, batch, per_sample: bool = False) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Answer-token loss of one collated batch; also (correct count, token count). The lm_head runs on
    answer positions only: the image placeholders and the prompt are most of each sequence. `per_sample`:
    the mean over rows of each row's token mean (`data.answer_loss_per_sample`), else the token mean."""
    out = model(batch["input_ids"], images=batch["images"], num_logits_to_keep=1)
    shift_labels = batch["labels"][:, 1:]  # (B, T-1)
    keep = shift_labels != IGNORE_INDEX  # (B, T-1)
    hidden = out.normed_hidden_states[:, :-1][keep]  # (N, D)
    logits = model.lm_head(hidden).float()  # (N, V)
    targets = shift_labels[keep]  # (N,)
    if per_sample:
        counts = keep.sum(1)  # (B,)
        rows = keep.nonzero()[:, 0]  # (N,): each answer position's row
        weights = 1.0 / (counts[rows].float() * (counts > 0).sum())  # (N,): each row's tokens sum to 1/rows
        loss = (F.cross_entropy(logits, targets, reduction="none") * weights).sum()
    else:
        loss = F.cross_entropy(logits, targets)
    correct = (logits.detach().argmax(-1) == targets).sum()
    return loss, correct, int(targets.numel())


def make_optimizer(model, cfg: TrainConfig, params=None) -> torch.optim.Optimizer:
    """AdamW; no weight decay on norms, biases, embeddings-like vectors (ndim < 2)."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if params is not None:
        keep = {id(p) for p in params}
        named = [(n, p) for n, p in named if id(p) in keep]
    decay = [p for _, p in named if p.ndim >= 2]
    no_decay = [p for _, p in named if p.ndim < 2]
    groups = [
        {"params": decay, "weight_decay": cfg.optim.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.optim.lr, betas=(cfg.optim.beta1, cfg.optim.beta2), fused=False)


def zero_mean_convs(model, names: list[str]) -> None:
    """Project the named conv weights (O, I, kh, kw) onto spatially zero-mean filters per (O, I) channel.

    A zero-mean filter does not respond to a flat input, so the page background (the same on every page)
    cannot be amplified into the image-independent constant that collapsed the first from-scratch run.
    """
    if not names:
        return
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in names:
            if name not in params:
                raise ValueError(f"optim.zero_mean_convs: no parameter named {name!r}")
            w = params[name]
            if w.dim() != 4 or w.shape[-1] * w.shape[-2] < 2:
                raise ValueError(f"optim.zero_mean_convs: {name} is not a spatial conv weight")
            w.sub_(w.mean(dim=(2, 3), keepdim=True))


def _new_window() -> dict[str, float]:
    """Running sums of one log interval (reset after every log line)."""
    sums = dict.fromkeys(("loss", "aux", "ctc", "glyph", "fine_acc", "grid_acc", "wait"), 0.0)
    sums |= dict.fromkeys(("correct", "tokens"), 0)
    return sums | {"samples": 0, "steps": 0, "t": time.time()}


def train_sft(cfg: TrainConfig, log=print) -> Path:
    """Run (or resume) an SFT / robustness stage; returns the model directory it finished with."""
    keys = ["loss", "token_acc", "vision_ctc", "glyph", "glyph_grid_acc", "lr", "samples_per_s"]
    run = ResumableRun(cfg, log, curve_keys=keys)
    tokenizer = ensure_tokenizer(cfg, log)
    if run.resumed:
        from jocr.model import OCRModel

        model = OCRModel.from_pretrained(run.checkpoint_dir, dtype=torch.float32)
        log(f"resuming {run.dir} at step {run.state['step']} (next sample {run.state['next_index']})")
    else:
        model = build_model(cfg, tokenizer)
    state = run.begin({"step": 0, "next_index": 0, "samples": 0, "elapsed": 0.0})
    if cfg.data.anchored:
        # The model is trained with anchors: its config says so, so `--anchor auto` gives it them.
        from jocr.config import AnchorConfig
        from jocr.lines.anchor import ANCHOR_VERSION

        model.config.anchor = AnchorConfig(
            version=ANCHOR_VERSION, max_tokens=cfg.data.anchor_max_tokens, ocr=cfg.data.ocr_anchored
        )
    if cfg.data.formula_crops:  # the page pipeline then has it read formula regions of pixel pages
        model.config.elements.formula = True
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    heads = VisionHeads(model, cfg.data, state, cfg.init or cfg.init_vision)
    optimizer = make_optimizer(model, cfg)
    for head in heads.heads:
        optimizer.add_param_group({"params": list(head.parameters()), "weight_decay": 0.0})
    zero_mean_convs(model, cfg.optim.zero_mean_convs)
    clip_params = list(model.parameters()) + heads.parameters()
    run.restore(optimizer, seed=cfg.seed + state["step"])
    log(f"{cfg.kind}: {n_params / 1e6:.2f}M parameters, batch {cfg.batch_size}, max_steps {cfg.max_steps}")

    stream = SampleStream(
        cfg.data,
        str(tokenizer_file(cfg)),
        model.config.vision,
        start=state["next_index"],
        workers=cfg.workers,
    )
    step = state["step"]
    window = _new_window()
    try:
        with run.stop_flag():
            while run.keep_going(step):
                t_wait = time.time()
                samples = [next(stream) for _ in range(cfg.batch_size)]
                window["wait"] += time.time() - t_wait
                batch = collate(samples, tokenizer.pad_id)
                if cfg.data.input_noise > 0:
                    n_special = tokenizer.image_id + 1  # never inject BOS/EOS/PAD/<image>
                    batch["input_ids"] = add_input_noise(
                        batch["input_ids"],
                        batch["labels"],
                        cfg.data.input_noise,
                        n_special,
                        tokenizer.vocab_size,
                    )
                lr = cfg.optim.lr_at(step, cfg.max_steps)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                if cfg.data.answer_weight > 0:
                    loss, correct, n_tok = batch_loss(model, batch, cfg.data.answer_loss_per_sample)
                else:  # vision-only stage: the projector tap sees the encoder's output
                    model.encode_images([views for row in batch["images"] for views in row])
                    loss, correct, n_tok = torch.zeros(()), 0, 0
                parts = heads.losses(batch, len(samples), tokenizer, window)
                total = heads.add_weighted(cfg.data.answer_weight * loss, parts)
                optimizer.zero_grad(set_to_none=True)
                total.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(clip_params, cfg.optim.grad_clip)
                if not math.isfinite(total.item()):
                    raise RuntimeError(f"non-finite loss at step {step}; lower the learning rate")
                optimizer.step()
                zero_mean_convs(model, cfg.optim.zero_mean_convs)
                step += 1
                state["next_index"] = samples[-1].index + 1
                state["samples"] += len(samples)
                window["loss"] += loss.item()
                for key in ("aux", "ctc", "glyph"):
                    window[key] += parts[key].item() if key in parts else 0.0
                window["correct"] += int(correct)
                window["tokens"] += n_tok
                window["samples"] += len(samples)
                window["steps"] += 1
                if step % cfg.log_every == 0 or step == cfg.max_steps:
                    _log_window(run, log, step, lr, grad_norm, state, window, stream)
                    window = _new_window()
                run.after_step(step, model, tokenizer, optimizer, heads.save_state)
    finally:
        stream.close()
        heads.close()
    run.checkpoint(step, model, tokenizer, optimizer, heads.save_state)
    if stream.errors:
        log(f"{len(stream.errors)} samples failed to render, e.g. {stream.errors[0]}")
    return run.finish(step, model, tokenizer, heads.save_files)


def _log_window(run: ResumableRun, log, step, lr, grad_norm, state, window, stream) -> None:
    """One log.jsonl record and log line for the steps since the last one."""
    dt = time.time() - window["t"]
    rec = {
        "step": step,
        "loss": window["loss"] / window["steps"],
        "token_acc": window["correct"] / max(1, window["tokens"]),
        "vision_aux": window["aux"] / window["steps"],
        "vision_ctc": window["ctc"] / window["steps"],
        "glyph": window["glyph"] / window["steps"],
        "glyph_fine_acc": window["fine_acc"] / window["steps"],
        "glyph_grid_acc": window["grid_acc"] / window["steps"],
        "lr": lr,
        "grad_norm": float(grad_norm),
        "samples": state["samples"],
        "samples_per_s": window["samples"] / dt,
        "data_wait_s": window["wait"],
        "answer_tokens_per_sample": window["tokens"] / max(1, window["samples"]),
        "filters": stream.filter_stats,
    }
    run.runlog.write(**rec)
    log(
        f"step {step} loss {rec['loss']:.4f} acc {rec['token_acc']:.3f} "
        f"aux {rec['vision_aux']:.3f} ctc {rec['vision_ctc']:.3f} glyph {rec['glyph']:.3f} "
        f"(acc {rec['glyph_fine_acc']:.3f}/{rec['glyph_grid_acc']:.3f}) lr {lr:.2e} "
        f"{rec['samples_per_s']:.2f} samples/s (data wait {window['wait']:.1f}s)"
    )
