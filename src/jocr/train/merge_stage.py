"""`jocr train merge`: merge candidate checkpoints with merge weights searched on the validation split.

Each trial merges the candidates' state dicts (linear or SLERP), loads the result into one model and scores
it greedily on the same `eval.pages` validation pages (never test pages); the search spends at most
`merge.budget` trials (see `jocr.train.merge.search_merge`), so the evaluation budget is
budget x eval.pages pages. The objective is `evaluate.merge_score`: the mean of the unit-test pass rate
and 1 - edit distance.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from jocr.train.checkpoint import save_model_dir
from jocr.train.config import TrainConfig
from jocr.train.evaluate import eval_pages, evaluate_model, merge_score
from jocr.train.merge import MergeTrial, search_merge
from jocr.train.run import ResumableRun


def run_merge(cfg: TrainConfig, log=print) -> Path:
    from jocr.model import OCRModel
    from jocr.tokenizer import Tokenizer

    run = ResumableRun(cfg, log)
    cands = [Path(c) for c in cfg.merge.candidates]
    if len(cands) < 1:
        raise ValueError("merge.candidates must list at least one model directory")
    for c in cands:
        if not (c / "config.json").is_file():
            raise FileNotFoundError(f"merge candidate {c} has no config.json")
    run_dir, runlog = run.dir, run.runlog
    tokenizer = Tokenizer.from_dir(cands[0])
    model = OCRModel.from_pretrained(cands[0], dtype=torch.float32).eval()
    states = [OCRModel.from_pretrained(c, dtype=torch.float32).state_dict() for c in cands]
    pages = eval_pages(cfg.eval.pages, cfg.eval.profile, cfg.eval.split, cfg.eval.degrade)
    log(
        f"merge: {len(cands)} candidates, method {cfg.merge.method}, budget {cfg.merge.budget} x "
        f"{len(pages)} {cfg.eval.split} pages"
    )

    def score(state: dict[str, torch.Tensor]) -> float:
        model.load_state_dict(state)
        summary, _, _ = evaluate_model(
            model, tokenizer, pages, cfg.eval.max_tokens, cfg.eval.batch_size, cfg.data.prompt
        )
        score.last = summary
        return merge_score(summary)

    def record(trial: MergeTrial) -> None:
        runlog.write(
            kind="merge_trial",
            weights=trial.weights,
            method=trial.method,
            score=trial.score,
            **{k: v for k, v in score.last.items() if isinstance(v, (int, float))},
        )
        log(
            f"  weights {trial.weights}: score {trial.score:.4f} (pass {score.last['pass_rate']:.3f}, "
            f"edit {score.last['edit']:.3f})"
        )

    t0 = time.time()
    best_state, result = search_merge(states, score, cfg.merge.method, cfg.merge.budget, record)
    model.load_state_dict(best_state)
    out = save_model_dir(model, tokenizer, run_dir / "final")
    summary = {
        "candidates": [str(c) for c in cands],
        "method": cfg.merge.method,
        "best_weights": result.best.weights,
        "best_score": result.best.score,
        "trials": [t.__dict__ for t in result.trials],
        "eval_pages": len(pages),
        "seconds": round(time.time() - t0, 1),
    }
    (run_dir / "merge.json").write_text(json.dumps(summary, indent=2) + "\n")
    run.export(model, tokenizer)
    log(f"merge: best weights {result.best.weights} score {result.best.score:.4f} -> {out}")
    return out
