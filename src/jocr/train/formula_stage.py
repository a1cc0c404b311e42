"""`jocr train formula --config configs/formula-reader.yaml`: trains the formula reader, from scratch or on
from a saved reader (`init`; docs/training.md, "The formula reader").

Data: the run's crop shards of each source (`jocr.train.formula_data`: `crops` mathtext crops in `crops/`,
`katex_crops` KaTeX crops in `katex-crops/`, `long_crops` long KaTeX formulas in `katex-long-crops/`,
`faces_crops` KaTeX crops in other typefaces in `katex-faces-crops/`), drawn first where missing. A run from
`init` keeps the saved reader's vocabulary and appends the tokens its data adds (new embedding rows start
small, as from scratch). Batches hold strips of similar width (each pool of `batch * 64` shuffled crops sorted
by width, then cut), so padding stays small. AdamW with a linear warm-up and a cosine decay; loss on every
target token and EOS. Every `checkpoint_every` steps the run folder gets `checkpoint.pt` (weights, optimiser,
step, data order), so a run stopped anywhere resumes there; every `eval_every` steps a snapshot
(`snapshots/step_NNNNNN`, the reader's own format) and its greedy exact match on `eval_crops` crops no
training crop shares a seed with; the log (`train.log`) has a line per `log_every` steps.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from jocr.model.formula_reader import (
    SPECIALS,
    FormulaReader,
    FormulaReaderConfig,
    LatexVocab,
    latex_tokens,
    save_formula_reader,
)

EVAL_SEED_BASE = 190_000_000  # validation crops: apart from training (formula_data.CROP_SEED_BASE)
KATEX_EVAL_SEED_BASE = 290_000_000  # KaTeX validation crops: apart from formula_data.KATEX_SEED_BASE
LONG_EVAL_SEED_BASE = 390_000_000  # long ones: apart from formula_data.KATEX_LONG_SEED_BASE
FACES_EVAL_SEED_BASE = 490_000_000  # other faces': apart from formula_data.KATEX_FACES_SEED_BASE
# Each KaTeX source of a run: the config entry counting its crops, the source (its shards in
# `<source>-crops/`), its validation crops' seed base and their name in the log (kept in `<name>-eval.pkl`).
KATEX_RUNS = (
    ("katex_crops", "katex", KATEX_EVAL_SEED_BASE, "katex"),
    ("long_crops", "katex-long", LONG_EVAL_SEED_BASE, "long"),
    ("faces_crops", "katex-faces", FACES_EVAL_SEED_BASE, "faces"),
)


@dataclass
class FormulaTrainConfig:
    run_dir: str = "runs/formula-reader"
    crops: int = 120_000
    katex_crops: int = 0
    long_crops: int = 0
    faces_crops: int = 0
    init: str = ""  # a saved reader to train on from ("": from scratch)
    shard_size: int = 2_000
    render_workers: int = 2
    batch: int = 32
    lr: float = 1e-3
    warmup: int = 300
    max_steps: int = 8_000
    min_lr: float = 1e-5
    clip: float = 1.0
    threads: int = 2
    seed: int = 0
    log_every: int = 20
    checkpoint_every: int = 200
    eval_every: int = 1_000
    eval_crops: int = 200
    model: dict = field(default_factory=dict)  # FormulaReaderConfig entries (its vocab is built here)

    @classmethod
    def load(cls, path, overrides: dict | None = None) -> FormulaTrainConfig:
        import yaml

        from jocr.train.config import apply_overrides

        data = yaml.safe_load(Path(path).read_text()) or {}
        if data.pop("kind", "formula") != "formula":
            raise ValueError("not a formula reader config (kind must be 'formula')")
        apply_overrides(data, overrides)
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown entries: {', '.join(sorted(unknown))}")
        return cls(**data)


def build_vocab(latex: list[str], start: list[str] | None = None) -> list[str]:
    """`start` (default: specials, then printable ASCII), then every other token of the training LaTeX by
    frequency."""
    from collections import Counter

    counts = Counter(t for text in latex for t in latex_tokens(text))
    head = list(start) if start else [*SPECIALS, *(chr(c) for c in range(32, 127))]
    known = set(head)
    rest = sorted((t for t in counts if t not in known), key=lambda t: (-counts[t], t))
    return [*head, *rest]


def _from_init(directory: str, config: FormulaReaderConfig) -> FormulaReader:
    """A reader of `config` holding the saved reader's weights; its vocabulary is the saved one's with new
    tokens after it (their embedding rows keep their fresh initialisation)."""
    from jocr.model.formula_reader import load_formula_reader

    saved, _ = load_formula_reader(directory)
    old = len(saved.config.vocab)
    if config.vocab[:old] != saved.config.vocab:
        raise ValueError(f"the run's vocabulary does not begin with {directory}'s")
    model = FormulaReader(config)
    state = saved.state_dict()
    embed = model.embed.weight.detach().clone()
    embed[:old] = state["embed.weight"]
    state["embed.weight"] = embed
    model.load_state_dict(state)
    return model


def _batches(widths: list[int], batch: int, rng: random.Random) -> list[list[int]]:
    order = list(range(len(widths)))
    rng.shuffle(order)
    pool, out = batch * 64, []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda k: widths[k])
        out.extend(chunk[i : i + batch] for i in range(0, len(chunk) - batch + 1, batch))
    rng.shuffle(out)
    return out


def _lr(cfg: FormulaTrainConfig, step: int) -> float:
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.max_steps - cfg.warmup))
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))


def _targets(vocab: LatexVocab, latex: list[str], limit: int) -> torch.Tensor:
    rows = [vocab.encode(text)[:limit] for text in latex]
    out = torch.full((len(rows), max(map(len, rows))), vocab.pad, dtype=torch.long)
    for k, row in enumerate(rows):
        out[k, : len(row)] = torch.tensor(row)
    return out  # (B, T)


def evaluate(model: FormulaReader, vocab: LatexVocab, crops: list, max_tokens: int = 160) -> dict:
    """Greedy exact match (and the share finished) on (strip, LaTeX) pairs."""
    from jocr.engine.formula import read_strips

    readings = read_strips(model, vocab, [s for s, _ in crops], max_tokens)
    exact = sum(r.latex == latex for r, (_, latex) in zip(readings, crops))
    return {"exact": exact / len(crops), "finished": sum(r.finished for r in readings) / len(crops)}


def _eval_crops(n: int) -> list:
    from jocr.train.formula_data import strip_and_latex

    return [strip_and_latex(EVAL_SEED_BASE + k) for k in range(n)]


def _katex_eval_crops(run: Path, n: int, source: str, base: int, name: str) -> list:
    """A KaTeX source's validation crops, typeset once and kept in the run folder."""
    import pickle

    from jocr.train.formula_data import katex_config, katex_strips

    path = run / f"{name}-eval.pkl"
    if not path.exists():
        path.write_bytes(pickle.dumps(katex_strips((base + k for k in range(n)), katex_config(source))))
    return pickle.loads(path.read_bytes())


def train_formula_reader(cfg: FormulaTrainConfig) -> Path:
    """Runs (or resumes) the training; returns the final snapshot's folder."""
    from jocr.train.formula_data import load_shards, render_shards

    torch.set_num_threads(cfg.threads)
    run = Path(cfg.run_dir)
    run.mkdir(parents=True, exist_ok=True)
    log = (run / "train.log").open("a")

    def say(text: str) -> None:
        log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {text}\n")
        log.flush()

    crops = load_shards(render_shards(run / "crops", cfg.crops, cfg.render_workers, cfg.shard_size))
    crops = crops[: cfg.crops]
    for entry, source, _, _ in KATEX_RUNS:
        if count := getattr(cfg, entry):
            shards = render_shards(run / f"{source}-crops", count, cfg.render_workers, cfg.shard_size, source)
            crops += load_shards(shards)[:count]
    vocab_path = run / "vocab.json"
    if not vocab_path.exists():
        start = json.loads((Path(cfg.init) / "config.json").read_text())["vocab"] if cfg.init else None
        vocab_path.write_text(
            json.dumps(build_vocab([latex for _, latex in crops], start), ensure_ascii=False)
        )
    model_cfg = FormulaReaderConfig(**{**cfg.model, "vocab": json.loads(vocab_path.read_text())})
    vocab = LatexVocab(model_cfg.vocab)
    torch.manual_seed(cfg.seed)
    model = _from_init(cfg.init, model_cfg) if cfg.init else FormulaReader(model_cfg)
    optim = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    step, epoch = 0, 0
    checkpoint = run / "checkpoint.pt"
    if checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])
        step, epoch = state["step"], state["epoch"]
        say(f"resumed at step {step}")
    else:
        say(f"start: {len(crops)} crops, vocab {len(vocab.tokens)}, config {json.dumps(asdict(cfg))}")
    held = {"exact": _eval_crops(cfg.eval_crops)}
    for entry, source, base, name in KATEX_RUNS:
        if getattr(cfg, entry):
            held[f"{name}_exact"] = _katex_eval_crops(run, cfg.eval_crops, source, base, name)
    widths = [strip.shape[1] for strip, _ in crops]
    from jocr.engine.formula import strips_batch

    seen, clock, losses, accs = 0, time.perf_counter(), [], []
    while step < cfg.max_steps:
        batches = _batches(widths, cfg.batch, random.Random(f"{cfg.seed}/{epoch}"))
        per_epoch = len(batches)
        for index in range(step - epoch * per_epoch, per_epoch):
            if step >= cfg.max_steps:
                break
            model.train()
            chosen = [crops[k] for k in batches[index]]
            images, lengths = strips_batch([s for s, _ in chosen])
            ids = _targets(vocab, [latex for _, latex in chosen], model_cfg.max_tokens)  # (B, T)
            logits = model(images, lengths, ids[:, :-1])  # (B, T-1, V)
            labels = ids[:, 1:].masked_fill(ids[:, 1:] == vocab.pad, -100)  # (B, T-1)
            loss = F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100
            )
            for group in optim.param_groups:
                group["lr"] = _lr(cfg, step)
            optim.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            optim.step()
            step += 1
            seen += len(chosen)
            mask = labels != -100
            losses.append(loss.item())
            accs.append(((logits.argmax(-1) == labels) & mask).sum().item() / max(1, mask.sum().item()))
            if step % cfg.log_every == 0:
                rate = seen / (time.perf_counter() - clock)
                say(f"step {step} loss {sum(losses) / len(losses):.4f} token_acc {sum(accs) / len(accs):.4f} "
                    f"lr {_lr(cfg, step):.2e} samples/s {rate:.1f}")  # fmt: skip
                seen, clock, losses, accs = 0, time.perf_counter(), [], []
            if step % cfg.checkpoint_every == 0 or step == cfg.max_steps:
                tmp = checkpoint.with_suffix(".tmp")
                torch.save({"model": model.state_dict(), "optim": optim.state_dict(), "step": step,
                            "epoch": epoch if index + 1 < per_epoch else epoch + 1}, tmp)  # fmt: skip
                tmp.replace(checkpoint)
            if step % cfg.eval_every == 0 or step == cfg.max_steps:
                snap = run / "snapshots" / f"step_{step:06d}"
                save_formula_reader(model, snap)
                scores = {name: evaluate(model, vocab, rows)["exact"] for name, rows in held.items()}
                say(f"eval step {step} " + " ".join(f"{name} {value:.3f}" for name, value in scores.items()))
                clock = time.perf_counter()
        else:
            epoch += 1
    final = run / "final"
    save_formula_reader(model, final)
    say(f"done at step {step}")
    return final
