"""`--engine vllm`: each inference actor holds one `vllm.LLM` over a jocr checkpoint (`pip install
'jocr[batch,vllm]'`; docs/vllm.md for the model side). On GPUs give each actor `--gpus-per-actor 1`: Ray
sets CUDA_VISIBLE_DEVICES for the actor, and vLLM batches the pages of each Ray batch itself (continuous
batching, paged KV cache). The retry policy is stages.PageReader's; `--page-timeout` is the jocr engine's
alone (`LLM.generate` has no per-request deadline).

Actors rather than `ray.data.llm`'s processor: jocr's prompt is token ids with one image, its Markdown needs
the page size for grounding boxes, and retries re-send single pages with their own sampling parameters,
which a plain `LLM.generate` call per batch gives directly.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from jocr.bulk.stages import Attempt, PageJob, PageReader, page_attempt, retry_seed


class VllmPageReader(PageReader):
    def load(self):
        from jocr.config import OCRConfig
        from jocr.documents.request import PageRequestBuilder
        from jocr.integrations.vllm import CPU_ENV, register, vllm_llm_kwargs
        from jocr.pipeline import default_model_dir
        from jocr.tokenizer import Tokenizer

        if not self.settings.device.startswith("cuda"):
            for key, value in CPU_ENV.items():
                os.environ.setdefault(key, value)
        try:
            from vllm import LLM
        except ImportError as exc:
            raise ImportError(f"--engine vllm needs vLLM: pip install 'jocr[vllm]' ({exc})") from exc
        register()
        path = Path(self.settings.model) if self.settings.model else default_model_dir()
        spec = self.settings.spec
        # "auto": the checkpoint's FastMTP head at k = 3 (vllm_llm_kwargs' default) when it has one.
        if spec == "auto":
            spec = 3 if OCRConfig.load(path).mtp.enabled else 0
        overrides = dict(self.settings.vllm_kwargs)
        if self.settings.device.startswith("cuda"):
            overrides.setdefault("dtype", "bfloat16")  # vllm_llm_kwargs' float32 is for the CPU build
        kwargs = vllm_llm_kwargs(path, num_speculative_tokens=int(spec), **overrides)
        self.llm = LLM(**kwargs)
        tokenizer = Tokenizer.from_dir(path)
        self.td_ids = tuple(tokenizer.td_ids)
        self.vision = OCRConfig.load(path).vision
        return PageRequestBuilder(tokenizer, self.vision, self.settings.prompt)

    def prepare(self, job: PageJob) -> None:
        from jocr.documents.preprocess import image_tokens_for_size

        # vLLM preprocesses the image (the plugin's processor, through the same builder) and expands the one
        # `<image>` placeholder to the page's token count. One prompt per anchor window.
        job.prompt_ids = [self.builder.prompt_ids([1], anchor=a) for a in job.anchors]
        job.result.image_tokens = image_tokens_for_size(job.image.size[0], job.image.size[1], self.vision)

    def generate(self, jobs: list[PageJob], temperature: float, attempt: int) -> list[Attempt]:
        from jocr.integrations.vllm import vllm_sampling_params

        owners = [(job, ids) for job in jobs for ids in job.prompt_ids]
        prompts = [{"prompt_token_ids": ids, "multi_modal_data": {"image": j.image}} for j, ids in owners]
        params = [
            vllm_sampling_params(
                self.settings.max_tokens,
                whitelist_ids=self.td_ids,
                temperature=temperature,
                seed=retry_seed(j.row["doc_id"], j.row["page"], attempt) if temperature else None,
            )
            for j, _ in owners
        ]
        started = time.perf_counter()
        try:
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
        except Exception as exc:  # the batch failed as a whole: each of its pages records why
            error = f"generation failed ({' '.join(str(exc).split())[:200]})"
            elapsed = time.perf_counter() - started
            return [
                Attempt(None, None, f"{j.row['doc_id']}: page {j.row['page']}: {error}", elapsed, temperature)
                for j in jobs
            ]
        elapsed = time.perf_counter() - started
        parts: dict[int, list] = {id(job): [] for job in jobs}
        for (job, _), output in zip(owners, outputs):
            completion = output.outputs[0]
            if completion.finish_reason not in ("stop", "length"):  # "abort": the engine dropped it
                parts[id(job)].append(
                    f"{job.row['doc_id']}: page {job.row['page']}: generation {completion.finish_reason}"
                )
                continue
            parts[id(job)].append((list(completion.token_ids), completion.finish_reason, elapsed))
        return [page_attempt(parts[id(job)], temperature) for job in jobs]
