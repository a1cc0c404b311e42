"""`jocr train mtp`: fit the FastMTP draft head last, on the final verifier's own greedy outputs.

The fitting itself (self-distillation, K=3, step weights 0.51/0.31/0.18, acceptance per position) is
`jocr.train.mtp.fit_mtp_head`; this stage picks the pages (training split, their own seed range, drawn like
the SFT data), builds the prompts exactly as inference does, and writes the model and the statistics.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from jocr.train.checkpoint import save_model_dir
from jocr.train.config import TrainConfig
from jocr.train.data import sample_plan
from jocr.train.run import ResumableRun

# The MTP head's pages come from their own part of the training split (SFT and GRPO use others).
MTP_INDEX_OFFSET = 7_000_000


def run_mtp_fit(cfg: TrainConfig, log=print) -> Path:
    from jocr.layout.request import PageRequestBuilder
    from jocr.model import OCRModel
    from jocr.synth import generate_page
    from jocr.tokenizer import Tokenizer
    from jocr.train.mtp import MTPFitConfig, fit_mtp_head

    if not cfg.init:
        raise ValueError("mtp needs `init`: the final verifier's model directory")
    run = ResumableRun(cfg, log)
    run_dir = run.dir
    tokenizer = Tokenizer.from_dir(cfg.init)
    model = OCRModel.from_pretrained(cfg.init, dtype=torch.float32).eval()
    builder = PageRequestBuilder(tokenizer, model.config.vision, cfg.data.prompt or None)
    prompts = []
    for i in range(cfg.mtp.pages):
        profile, degrade, seed = sample_plan(cfg.data, MTP_INDEX_OFFSET + i)
        page = builder.page(generate_page(seed, profile, degrade).image)
        prompts.append((page.prompt_ids, [page.views]))
    fit_cfg = MTPFitConfig(
        steps=cfg.mtp.steps,
        batch_size=cfg.mtp.batch_size,
        lr=cfg.mtp.lr,
        num_steps=len(cfg.mtp.step_weights),
        step_weights=tuple(cfg.mtp.step_weights),
        max_new_tokens=cfg.mtp.max_tokens,
        checkpoint_dir=str(run_dir / "mtp"),
        seed=cfg.seed,
    )
    stats = fit_mtp_head(model, prompts, fit_cfg, log=log)
    out = save_model_dir(model, tokenizer, run_dir / "final")
    (run_dir / "mtp_stats.json").write_text(json.dumps(stats, indent=2, default=str) + "\n")
    run.export(model, tokenizer)
    return out
