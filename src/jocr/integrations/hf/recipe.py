"""The vLLM recipe of jina-ocr-v1's announcement, for an exported repository (as `deepseek_ocr_mtp.py`).

    sys.path.insert(0, path_to_the_repository)
    from deepseek_ocr_mtp import DEFAULT_OCR_PROMPT, register, vllm_llm_kwargs, vllm_sampling_params
    register()
    llm = LLM(**vllm_llm_kwargs(path, num_speculative_tokens=3, mtp_heads=1, mtp_recursive=True))
    outputs = llm.chat([{"role": "user", "content": [{"type": "image_pil", "image_pil": image},
                                                     {"type": "text", "text": DEFAULT_OCR_PROMPT}]}],
                       sampling_params=vllm_sampling_params(max_tokens=4096))

The four names (and `vllm_page_prompts` / `vllm_page_markdown` for PDF pages, which an anchored model
reads with their text layer) are jocr's vLLM integration (jocr/integrations/vllm.py, docs/vllm.md: FastMTP
as an EAGLE draft, verified greedily) with two additions for a repository that travels on its own:
- the model argument may be the Hub id the repository was downloaded from: a name that is not a local model
  directory means the repository this file sits in (so `vllm_llm_kwargs("jinaai/jina-ocr-v1", ...)` in the
  announcement's snippet needs no download at run time);
- on vLLM's CPU platform `vllm_llm_kwargs` adds what that platform needs (docs/vllm.md): eager mode, the
  in-process executor, and the environment of `CPU_ENV` where the caller has not set it (a KV cache size for
  the CPU backend and an in-process engine core, which keeps this module's registration in the process that
  runs the model).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jocr.integrations.vllm import CPU_ENV, DEFAULT_OCR_PROMPT, register
from jocr.integrations.vllm import vllm_llm_kwargs as _llm_kwargs
from jocr.integrations.vllm import vllm_page_markdown as _page_markdown
from jocr.integrations.vllm import vllm_page_prompts as _page_prompts
from jocr.integrations.vllm import vllm_sampling_params as _sampling_params

__all__ = [
    "DEFAULT_OCR_PROMPT",
    "register",
    "vllm_llm_kwargs",
    "vllm_page_markdown",
    "vllm_page_prompts",
    "vllm_sampling_params",
]

HERE = Path(__file__).resolve().parent


def model_dir(model: str | os.PathLike) -> Path:
    """`model` when it is a model directory, else the repository this file belongs to."""
    path = Path(model)
    if (path / "config.json").is_file():
        return path
    if (HERE / "config.json").is_file():
        return HERE
    raise ValueError(f"{model}: not a model directory (no config.json), and {HERE} holds no model either")


def _cpu_platform() -> bool:
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


def vllm_llm_kwargs(
    model: str | os.PathLike,
    num_speculative_tokens: int = 3,
    mtp_heads: int = 1,
    mtp_recursive: bool = True,
    **overrides: Any,
) -> dict[str, Any]:
    """Keyword arguments for `vllm.LLM(...)`: jocr's (docs/vllm.md) plus the CPU platform's settings there."""
    kwargs = _llm_kwargs(model_dir(model), num_speculative_tokens, mtp_heads, mtp_recursive)
    if _cpu_platform():
        for key, value in CPU_ENV.items():
            os.environ.setdefault(key, value)
        kwargs.update(enforce_eager=True, distributed_executor_backend="uni")
    kwargs.update(overrides)
    return kwargs


def vllm_sampling_params(max_tokens: int = 4096, **overrides: Any):
    """Greedy sampling parameters with the repetition guard's settings; the `<td>`/`</td>` ids come from this
    repository's tokenizer unless `model` or `whitelist_ids` is given."""
    if "whitelist_ids" not in overrides:
        overrides["model"] = model_dir(overrides.get("model") or HERE)
    return _sampling_params(max_tokens, **overrides)


def vllm_page_prompts(model: str | os.PathLike, file, page: int = 1, anchor: str = "auto", **settings: Any):
    """`llm.generate` inputs for a PDF page (with its text layer, for a model trained with anchors) or an
    image, and the page to pass to `vllm_page_markdown` with the outputs (jocr's, docs/vllm.md)."""
    return _page_prompts(model_dir(model), file, page, anchor, **settings)


def vllm_page_markdown(model: str | os.PathLike, page, outputs) -> str:
    """The page's Markdown from the outputs of `vllm_page_prompts`' inputs, run references resolved."""
    return _page_markdown(model_dir(model), page, outputs)
