"""vLLM's CPU backend on the checkpoint of benchmarks/fullsize.py (run by it with --vllm PYTHON).

    PYTHON benchmarks/fullsize_vllm.py CHECKPOINT PAYLOAD_JSON   (image, page and text prompt ids, counts)

CPU settings as in docs/vllm.md (eager, single process, 1 GiB KV cache), the payload's dtype (bf16 like the
checkpoint by default, or fp32), greedy,
EOS ignored, no repetition guard and no speculation. Decode tokens/s at batch 1 and 8 is the difference of two
generations of different lengths (so the prefill cancels); the page is one generation of PAGE_TOKENS tokens
with the image. Prints a JSON line after each figure (the last one holds them all).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from jocr.integrations.vllm import CPU_ENV  # imports no vLLM, which must see this environment first

for key, value in CPU_ENV.items():
    os.environ.setdefault(key, value)


def main() -> int:
    path = sys.argv[1]
    with open(sys.argv[2]) as f:
        payload = json.load(f)
    page_tokens, repeats = int(payload["page_tokens"]), int(payload["repeats"])
    from PIL import Image
    from vllm import LLM, SamplingParams

    from jocr.integrations.vllm import register, vllm_llm_kwargs

    register()
    kwargs = vllm_llm_kwargs(
        path,
        num_speculative_tokens=0,
        enforce_eager=True,
        distributed_executor_backend="uni",
        dtype=payload.get("dtype", "bfloat16"),
    )
    kwargs.pop("logits_processors", None)  # no repetition guard: the same work as the jocr side
    llm = LLM(**kwargs)

    def params(n: int) -> SamplingParams:
        return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True, detokenize=False)

    text = payload["text"]

    def run(inputs, n: int) -> float:
        start = time.perf_counter()
        llm.generate(inputs, params(n), use_tqdm=False)
        return time.perf_counter() - start

    out = {}
    for b in (1, 8):
        inputs = [{"prompt_token_ids": t} for t in text[:b]]
        run(inputs, 2)  # warm-up
        rates = []
        for _ in range(repeats):
            short, long_ = run(inputs, 4), run(inputs, 28)
            rates.append(b * 24 / (long_ - short))
        out[f"tok_s_b{b}"] = statistics.median(rates)
        print(json.dumps(out), flush=True)  # partial results survive a time limit on the page run
    image = Image.open(payload["image"]).convert("RGB")
    page = {"prompt_token_ids": payload["page"], "multi_modal_data": {"image": image}}
    out["page_s"] = run([page], page_tokens)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
