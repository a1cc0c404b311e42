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
    """Pages through vLLM's offline `LLM.generate`. A bundle's anchored prompts go to its anchored member
    (jocr.pipeline.bundle): one vLLM engine per member, the member's started with its first prompt."""

    def load(self):
        from jocr.config import OCRConfig
        from jocr.integrations.vllm import CPU_ENV, register
        from jocr.layout.request import PageRequestBuilder
        from jocr.pipeline.model import anchored_member
        from jocr.tokenizer import Tokenizer

        if not self.settings.device.startswith("cuda"):
            for key, value in CPU_ENV.items():
                os.environ.setdefault(key, value)
        try:
            import vllm  # noqa: F401
        except ImportError as exc:
            raise ImportError(f"--engine vllm needs vLLM: pip install 'jocr[vllm]' ({exc})") from exc
        register()
        path = self.settings.model_dir()
        self.llm = self.start_llm(path)
        self.member, self.member_llm = anchored_member(path), None
        self.tokenizer = Tokenizer.from_dir(path)
        self.td_ids = tuple(self.tokenizer.td_ids)
        self.vision = OCRConfig.load(path).vision
        return PageRequestBuilder(self.tokenizer, self.vision, self.settings.prompt)

    def start_llm(self, path: Path):
        from vllm import LLM

        from jocr.config import OCRConfig
        from jocr.integrations.vllm import vllm_llm_kwargs

        spec = self.settings.spec
        # "auto": the checkpoint's FastMTP head at k = 3 (vllm_llm_kwargs' default) when it has one.
        if spec == "auto":
            spec = 3 if OCRConfig.load(path).mtp.enabled else 0
        overrides = dict(self.settings.vllm_kwargs)
        if self.settings.device.startswith("cuda"):
            overrides.setdefault("dtype", "bfloat16")  # vllm_llm_kwargs' float32 is for the CPU build
        return LLM(**vllm_llm_kwargs(path, num_speculative_tokens=int(spec), **overrides))

    def llm_for(self, anchored: bool):
        if not anchored or self.member is None:
            return self.llm
        if self.member_llm is None:
            self.member_llm = self.start_llm(self.member)
        return self.member_llm

    def prepare(self, job: PageJob) -> None:
        from jocr.documents.preprocess import image_tokens_for_size

        # vLLM preprocesses the image (the plugin's processor, through the same builder) and expands the one
        # `<image>` placeholder to the page's token count. One prompt per anchor window.
        job.prompt_ids = [self.builder.prompt_ids([1], anchor=a) for a in job.anchor.request_anchors]
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
        outputs, failed = self.generate_by_member(owners, prompts, params)
        elapsed = time.perf_counter() - started
        parts: dict[int, list] = {id(job): [] for job in jobs}
        for i, (job, _) in enumerate(owners):
            if id(job) in failed:
                continue
            completion = outputs[i].outputs[0]
            if completion.finish_reason not in ("stop", "length"):  # "abort": the engine dropped it
                parts[id(job)].append(
                    f"{job.row['doc_id']}: page {job.row['page']}: generation {completion.finish_reason}"
                )
                continue
            parts[id(job)].append((list(completion.token_ids), completion.finish_reason, elapsed))
        return [
            Attempt(
                None,
                None,
                f"{job.row['doc_id']}: page {job.row['page']}: {failed[id(job)]}",
                elapsed,
                temperature,
            )
            if id(job) in failed
            else page_attempt(parts[id(job)], temperature)
            for job in jobs
        ]

    def generate_by_member(self, owners: list, prompts: list, params: list) -> tuple[dict, dict]:
        """Each prompt through the engine of the member it is for: (prompt index -> vLLM output, id(job) ->
        why its member's batch failed as a whole)."""
        groups: dict[bool, list[int]] = {}
        for i, (_, ids) in enumerate(owners):
            # Only a bundle has a second engine to choose: a single checkpoint's prompts are not decoded.
            anchored = self.member is not None and self.tokenizer.is_anchored(ids)
            groups.setdefault(anchored, []).append(i)
        outputs: dict[int, object] = {}
        failed: dict[int, str] = {}
        for anchored, indices in groups.items():
            try:
                done = self.llm_for(anchored).generate(
                    [prompts[i] for i in indices], [params[i] for i in indices], use_tqdm=False
                )
            except Exception as exc:  # each page with a prompt in this batch records why
                for i in indices:
                    failed[id(owners[i][0])] = f"generation failed ({' '.join(str(exc).split())[:200]})"
                continue
            outputs.update(zip(indices, done))
        return outputs, failed
