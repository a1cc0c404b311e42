"""Runs vLLM on a jocr checkpoint and writes the greedy tokens and spec-decode metrics as JSON.

    python vllm_runner.py CHECKPOINT OUT.json --ks 0,1,2,3 --pages 4 --max-tokens 48 [--guard]

Run by the vllm-marked tests in a subprocess (with the interpreter that runs them) so that vLLM's process-wide
state (thread binding, distributed groups, Prometheus counters) stays out of the test process. One LLM per k,
created in turn in this one process.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

from jocr.integrations.vllm import CPU_ENV  # imports no vLLM, which must see this environment first

for key, value in CPU_ENV.items():
    os.environ.setdefault(key, value)


def time_engine(args, ks: list[int]) -> dict:
    """jocr's own engine on the same pages and prompts (batch = all pages), before vLLM binds the threads."""
    from vllm_fixtures import pages, prompts

    from jocr.documents.preprocess import preprocess_image, views_token_count
    from jocr.engine import Engine, EngineConfig, GenerationRequest, GuardConfig
    from jocr.model.ocr import OCRModel
    from jocr.tokenizer import Tokenizer

    model = OCRModel.from_pretrained(args.checkpoint)
    tok = Tokenizer.from_dir(args.checkpoint)
    guard = GuardConfig(ngram_size=0, loop_detection=False)
    requests = []
    for image, text in zip(pages(args.pages), prompts(args.pages)):
        views = preprocess_image(image, model.config.vision)
        ids = tok.build_prompt(text, [views_token_count(views, model.config.vision)])
        req = GenerationRequest(prompt_ids=ids, images=[views], max_tokens=args.max_tokens, guard=guard)
        requests.append(req)
    out = {}
    for k in ks:
        config = EngineConfig(
            drafter="mtp" if k else "none", num_draft_tokens=k, max_batch_size=args.pages, guard=guard
        )
        engine = Engine(model, config)
        start = time.perf_counter()
        results = engine.generate(requests)
        out[str(k)] = {"tokens": [r.token_ids for r in results], "generate_s": time.perf_counter() - start}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("out")
    parser.add_argument("--ks", default="0")
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--ngram-size", type=int, default=0, help="repetition guard n (0: off)")
    parser.add_argument("--window", type=int, default=90)
    parser.add_argument("--logprobs", type=int, default=0, help="top logprobs to record per token")
    parser.add_argument("--engine", action="store_true", help="also time jocr's engine (run first) per k")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))
    from vllm import LLM
    from vllm.distributed.parallel_state import destroy_distributed_environment, destroy_model_parallel
    from vllm_fixtures import pages, prompts

    from jocr.integrations.vllm import (
        register,
        spec_decode_metrics,
        vllm_llm_kwargs,
        vllm_prompt,
        vllm_sampling_params,
    )

    register()
    inputs = [
        vllm_prompt(args.checkpoint, image, text)
        for image, text in zip(pages(args.pages), prompts(args.pages))
    ]
    params = vllm_sampling_params(
        max_tokens=args.max_tokens,
        model=args.checkpoint,
        ngram_size=args.ngram_size,
        window=args.window,
        logprobs=args.logprobs or None,
    )
    results = {}
    if args.engine:
        results["engine"] = time_engine(args, [int(x) for x in args.ks.split(",")])
    for k in (int(x) for x in args.ks.split(",")):
        start = time.perf_counter()
        llm = LLM(
            **vllm_llm_kwargs(
                args.checkpoint,
                num_speculative_tokens=k,
                enforce_eager=True,
                distributed_executor_backend="uni",
                disable_log_stats=False,
                max_model_len=1024,
                seed=0,
            )
        )
        startup = time.perf_counter() - start
        baseline = spec_decode_metrics(llm)
        start = time.perf_counter()
        outputs = llm.generate(inputs, params, use_tqdm=False)
        elapsed = time.perf_counter() - start
        results[str(k)] = {
            "prompt_ids": [list(o.prompt_token_ids) for o in outputs],
            "tokens": [list(o.outputs[0].token_ids) for o in outputs],
            "text": [o.outputs[0].text for o in outputs],
            # Per page, per generated token: {token id: logprob} of the top candidates.
            "logprobs": [
                [
                    {int(t): float(lp.logprob) for t, lp in step.items()}
                    for step in (o.outputs[0].logprobs or [])
                ]
                for o in outputs
            ],
            "metrics": spec_decode_metrics(llm, baseline) if k else None,
            "startup_s": startup,
            "generate_s": elapsed,
        }
        del llm
        gc.collect()
        destroy_model_parallel()
        destroy_distributed_environment()
    Path(args.out).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
