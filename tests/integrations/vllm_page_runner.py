"""Runs vLLM on one page given as prompt ids (the payload benchmarks/fullsize.py hands fullsize_vllm.py) and
writes vLLM's expanded prompt ids and greedy tokens as JSON.

    python vllm_page_runner.py CHECKPOINT PAYLOAD.json OUT.json --max-tokens 24
    python vllm_page_runner.py CHECKPOINT - OUT.json --processor-only   # the processor only, no weights

PAYLOAD holds "image" (a file) and "page" (BOS, one `<image>`, the text ids). vLLM's CPU settings are
those of fullsize_vllm.py, with fp32 weights so the tokens compare exactly with the engine's.
--processor-only writes {"error": message or null} from building vLLM's multimodal processor for the
checkpoint (config and tokenizer only). Run by the vllm-marked tests in a subprocess, as vllm_runner.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from jocr.integrations.vllm import CPU_ENV  # imports no vLLM, which must see this environment first

for key, value in CPU_ENV.items():
    os.environ.setdefault(key, value)


def processor_error(checkpoint: str) -> str | None:
    from vllm.config import ModelConfig
    from vllm.multimodal import MULTIMODAL_REGISTRY

    from jocr.integrations.vllm import vllm_llm_kwargs

    kwargs = vllm_llm_kwargs(checkpoint, num_speculative_tokens=0)
    names = ("model", "tokenizer", "dtype", "max_model_len", "hf_overrides", "limit_mm_per_prompt")
    config = ModelConfig(**{name: kwargs[name] for name in names})
    try:
        MULTIMODAL_REGISTRY.create_processor(config)
    except Exception as exc:  # any failure: the test reads its message
        return f"{type(exc).__name__}: {exc}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("payload")
    parser.add_argument("out")
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--processor-only", action="store_true")
    args = parser.parse_args()

    from jocr.integrations.vllm import register, vllm_llm_kwargs

    register()
    if args.processor_only:
        Path(args.out).write_text(json.dumps({"error": processor_error(args.checkpoint)}))
        return 0

    from PIL import Image
    from vllm import LLM, SamplingParams

    payload = json.loads(Path(args.payload).read_text())
    kwargs = vllm_llm_kwargs(
        args.checkpoint,
        num_speculative_tokens=0,
        enforce_eager=True,
        distributed_executor_backend="uni",
        max_model_len=args.max_model_len,
        seed=0,
    )
    kwargs.pop("logits_processors", None)  # no repetition guard, as fullsize_vllm.py
    llm = LLM(**kwargs)
    image = Image.open(payload["image"]).convert("RGB")
    page = {"prompt_token_ids": payload["page"], "multi_modal_data": {"image": image}}
    params = SamplingParams(temperature=0.0, max_tokens=args.max_tokens, ignore_eos=True, detokenize=False)
    (out,) = llm.generate([page], params, use_tqdm=False)
    result = {"prompt_ids": list(out.prompt_token_ids), "tokens": list(out.outputs[0].token_ids)}
    Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
