"""Serving jocr checkpoints with vLLM (`pip install jocr[vllm]`): registration and helpers.

    from vllm import LLM
    from jocr.integrations.vllm import register, vllm_llm_kwargs, vllm_prompt, vllm_sampling_params

    register()  # also runs in every vLLM process through the `vllm.general_plugins` entry point
    llm = LLM(**vllm_llm_kwargs("models/jocr", num_speculative_tokens=3))
    out = llm.generate(vllm_prompt("models/jocr", image), vllm_sampling_params(max_tokens=4096))

    # A PDF page, with its text layer for a model trained with anchors (models/anchored):
    inputs, page = vllm_page_prompts("models/anchored", "paper.pdf", page=1)
    markdown = vllm_page_markdown("models/anchored", page, llm.generate(inputs, vllm_sampling_params()))

`register()` makes vLLM read jocr's `config.json` (model type "jocr") and adds two architectures: the OCR
model ("JocrOCRForCausalLM", vllm_model.py) and its FastMTP head as an EAGLE draft ("EagleJocrOCRForCausalLM",
vllm_mtp.py). Nothing here imports vLLM at module level: this module imports without vLLM installed.
See docs/vllm.md for the OpenAI server recipe and the speculative settings per regime.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from jocr.engine.guard import GuardConfig
from jocr.tokenizer import DEFAULT_PROMPT

DEFAULT_OCR_PROMPT = DEFAULT_PROMPT
TARGET_ARCH = "JocrOCRForCausalLM"
DRAFT_ARCH = "EagleJocrOCRForCausalLM"
GUARD_PROCESSOR = "jocr.integrations.vllm_guard:NoRepeatNGramLogitsProcessor"
# The engine's repetition guard (jocr.engine.guard; DeepSeek-OCR's vLLM recipe): ban any token that would
# repeat a 30-gram seen in the last 90 generated tokens, table-cell tags exempt.
NGRAM_SIZE = GuardConfig.ngram_size
NGRAM_WINDOW = GuardConfig.window
PUBLISHED_TD_IDS = (128821, 128822)
# Plain prompt template (DeepSeek-OCR `sft_format="plain"`): BOS, then the user turn as vLLM renders it with
# the image placeholders first ("<image>\n" + text), so chat requests tokenize like `Tokenizer.build_prompt`.
CHAT_TEMPLATE = (
    "<｜begin▁of▁sentence｜>{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ message['content'] }}{% endif %}{% endfor %}"
)
# Environment for vLLM's CPU build (measured on this project's CI machines; harmless elsewhere).
CPU_ENV = {
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "HF_HUB_OFFLINE": "1",
}

_registered = False


def register() -> None:
    """Register jocr's config class and architectures with transformers and vLLM (idempotent)."""
    global _registered
    if _registered:
        return
    try:
        from transformers import AutoConfig
        from vllm import ModelRegistry
    except ImportError as exc:
        raise ImportError(f"jocr's vLLM integration needs vLLM: pip install 'jocr[vllm]' ({exc})") from exc

    from jocr.integrations.vllm_config import PUBLISHED_DRAFT_ARCH, JocrVllmConfig

    AutoConfig.register(JocrVllmConfig.model_type, JocrVllmConfig, exist_ok=True)
    # Classes, not "module:Class" strings: vLLM inspects string-registered models in a subprocess, which costs
    # a second vLLM import per process.
    from jocr.integrations.vllm_model import JocrOCRForCausalLM
    from jocr.integrations.vllm_mtp import EagleJocrOCRForCausalLM

    ModelRegistry.register_model(TARGET_ARCH, JocrOCRForCausalLM)
    ModelRegistry.register_model(DRAFT_ARCH, EagleJocrOCRForCausalLM)
    ModelRegistry.register_model(PUBLISHED_DRAFT_ARCH, EagleJocrOCRForCausalLM)
    _registered = True


def _model_dir(model: str | os.PathLike) -> Path:
    path = Path(model)
    if not (path / "config.json").is_file():
        raise ValueError(
            f"{model}: not a jocr model directory (no config.json); models are local directories"
        )
    return path


def _max_positions(path: Path) -> int:
    from jocr.config import OCRConfig

    return OCRConfig.load(path).decoder.max_position_embeddings


def speculative_config(
    model: str | os.PathLike, num_speculative_tokens: int = 3, mtp_heads: int = 1, mtp_recursive: bool = True
) -> dict[str, Any] | None:
    """vLLM's `speculative_config` for the checkpoint's FastMTP head, or None for k = 0."""
    if num_speculative_tokens < 0:
        raise ValueError("num_speculative_tokens must be >= 0")
    if num_speculative_tokens == 0:
        return None
    from jocr.config import OCRConfig

    path = _model_dir(model)
    if not OCRConfig.load(path).mtp.enabled:
        raise ValueError(f"{model}: the checkpoint has no FastMTP head; use num_speculative_tokens=0")
    if mtp_heads != 1:
        raise ValueError("jocr checkpoints carry one FastMTP head (mtp_module.heads.0); use mtp_heads=1")
    if not mtp_recursive:
        # vLLM's "mtp" method re-grounds every draft step on the verifier's state; FastMTP is trained on its
        # own fed-back state, so drafts would be off-distribution past step 1.
        raise ValueError(
            "the FastMTP head runs recursively (method 'eagle'); mtp_recursive=False is unsupported"
        )
    return {"method": "eagle", "model": str(path), "num_speculative_tokens": int(num_speculative_tokens)}


def vllm_llm_kwargs(
    model: str | os.PathLike,
    num_speculative_tokens: int = 3,
    mtp_heads: int = 1,
    mtp_recursive: bool = True,
    **overrides: Any,
) -> dict[str, Any]:
    """Keyword arguments for `vllm.LLM(...)` serving a jocr checkpoint directory.

    k = num_speculative_tokens FastMTP drafts per step (0: no speculation). The repetition guard's logits
    processor is loaded only without speculation (vLLM 0.32 rejects custom logits processors with it).
    `overrides` replace any key (e.g. dtype="bfloat16" on a GPU, enforce_eager=False for CUDA graphs).
    """
    path = _model_dir(model)
    kwargs: dict[str, Any] = {
        "model": str(path),
        "tokenizer": str(path),
        "dtype": "float32",
        "max_model_len": min(8192, _max_positions(path)),
        "hf_overrides": {"architectures": [TARGET_ARCH]},
        "limit_mm_per_prompt": {"image": 1},
        "trust_remote_code": False,
    }
    spec = speculative_config(path, num_speculative_tokens, mtp_heads, mtp_recursive)
    if spec is not None:
        kwargs["speculative_config"] = spec
    else:
        kwargs["logits_processors"] = [GUARD_PROCESSOR]
    kwargs.update(overrides)
    return kwargs


def guard_extra_args(
    whitelist_ids: tuple[int, ...] | list[int] = PUBLISHED_TD_IDS,
    ngram_size: int = NGRAM_SIZE,
    window: int = NGRAM_WINDOW,
) -> dict[str, Any]:
    """`SamplingParams.extra_args` (OpenAI server: `vllm_xargs`) that switch the repetition guard on."""
    return {
        "no_repeat_ngram_size": int(ngram_size),
        "no_repeat_window": int(window),
        "no_repeat_whitelist": [int(i) for i in whitelist_ids],
    }


def td_ids(model: str | os.PathLike) -> tuple[int, ...]:
    """The checkpoint tokenizer's `<td>`, `</td>` ids (exempt from the n-gram ban)."""
    from jocr.tokenizer import Tokenizer

    return tuple(Tokenizer.from_dir(_model_dir(model)).td_ids)


def vllm_sampling_params(
    max_tokens: int = 4096,
    *,
    model: str | os.PathLike | None = None,
    whitelist_ids: tuple[int, ...] | list[int] | None = None,
    ngram_size: int = NGRAM_SIZE,
    window: int = NGRAM_WINDOW,
    **overrides: Any,
):
    """Greedy `vllm.SamplingParams` with the engine's repetition-guard settings and special tokens kept.

    The `<td>`/`</td>` exemption uses `whitelist_ids`, else the tokenizer of `model`, else the published ids.
    ngram_size=0 turns the guard off.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    from vllm import SamplingParams

    if whitelist_ids is None:
        whitelist_ids = td_ids(model) if model is not None else PUBLISHED_TD_IDS
    params: dict[str, Any] = {
        "temperature": 0.0,
        "max_tokens": int(max_tokens),
        "skip_special_tokens": False,
        "spaces_between_special_tokens": False,
    }
    if ngram_size:
        params["extra_args"] = guard_extra_args(whitelist_ids, ngram_size, window)
    params.update(overrides)
    return SamplingParams(**params)


def vllm_prompt(model: str | os.PathLike, image, prompt: str = DEFAULT_OCR_PROMPT) -> dict[str, Any]:
    """One generate() input: jocr's prompt ids (BOS, one `<image>` that vLLM expands, "\\n" + prompt)."""
    from jocr.layout.request import PageRequestBuilder
    from jocr.tokenizer import Tokenizer

    builder = PageRequestBuilder(Tokenizer.from_dir(_model_dir(model)), vision=None)
    return {"prompt_token_ids": builder.prompt_ids([1], prompt), "multi_modal_data": {"image": image}}


def vllm_page_prompts(
    model: str | os.PathLike,
    file,
    page: int = 1,
    anchor: str = "auto",
    prompt: str = DEFAULT_OCR_PROMPT,
    password: str | None = None,
):
    """A document page as `llm.generate` inputs, read as `jocr parse` reads it: (inputs, page).

    `file` is a PDF (path or bytes; its page `page`, 1-based, rendered at 144 dpi) or an image file. A model
    trained with anchors (`models/anchored`) reads a PDF page with a usable text layer in one request per
    anchor window, the window after the prompt (`anchor` "auto" | "on" | "off", as `jocr parse --anchor`);
    otherwise one request, the image alone. Pass all the inputs to one `llm.generate` call and its outputs,
    in order, to `vllm_page_markdown(model, page, outputs)`, which resolves the answers' run references."""
    from jocr.config import OCRConfig
    from jocr.integrations.document_page import read_page
    from jocr.layout.request import PageRequestBuilder
    from jocr.tokenizer import Tokenizer

    path = _model_dir(model)
    tokenizer = Tokenizer.from_dir(path)
    document = read_page(file, page, anchor, OCRConfig.load(path).anchor, tokenizer, password)
    builder = PageRequestBuilder(tokenizer, vision=None)
    inputs = [
        {
            "prompt_token_ids": builder.prompt_ids([1], prompt, anchor=window),
            "multi_modal_data": {"image": image},
        }
        for window, image in ((w, document.image) for w in document.anchors)
    ]
    return inputs, document


def vllm_page_markdown(model: str | os.PathLike, page, outputs) -> str:
    """The page's Markdown from `llm.generate`'s outputs for `vllm_page_prompts`' inputs (in their order), as
    `jocr parse` writes it: the answers decoded as jocr decodes them, run references (`@i`) resolved against
    their windows, page furniture left out, the text post-processed."""
    from jocr.integrations.document_page import page_markdown
    from jocr.layout.request import PageRequestBuilder
    from jocr.tokenizer import Tokenizer

    builder = PageRequestBuilder(Tokenizer.from_dir(_model_dir(model)), vision=None)
    answers = [output.outputs[0] for output in outputs]
    texts = [builder.text(list(answer.token_ids)) for answer in answers]
    reasons = [str(answer.finish_reason or "stop") for answer in answers]
    return page_markdown(builder, page, texts, reasons)[0]


def spec_decode_metrics(llm, baseline: dict[str, Any] | None = None) -> dict[str, Any]:
    """vLLM's speculative-decoding counters from `llm.get_metrics()` (needs disable_log_stats=False).

    vLLM's counters are process-wide Prometheus totals: pass the result of an earlier call as `baseline` to
    get the numbers of the generations in between.
    mean_acceptance_length = 1 + accepted / drafts (bonus token included: the engine's tau);
    acceptance_per_position[i] = drafts whose token i was accepted / drafts."""
    counters: dict[str, Any] = {}
    for metric in llm.get_metrics():
        name = metric.name.removeprefix("vllm:")
        if name.startswith("spec_decode_"):
            counters[name.removeprefix("spec_decode_")] = getattr(metric, "values", None) or metric.value
    base = baseline or {}
    drafts = int(counters.get("num_drafts", 0)) - base.get("drafts", 0)
    draft_tokens = int(counters.get("num_draft_tokens", 0)) - base.get("draft_tokens", 0)
    accepted = int(counters.get("num_accepted_tokens", 0)) - base.get("accepted_tokens", 0)
    per_pos = [int(v) for v in counters.get("num_accepted_tokens_per_pos", [])]
    base_pos = base.get("accepted_per_position_counts", [])
    per_pos = [v - (base_pos[i] if i < len(base_pos) else 0) for i, v in enumerate(per_pos)]
    return {
        "drafts": drafts,
        "draft_tokens": draft_tokens,
        "accepted_tokens": accepted,
        "accepted_per_position_counts": per_pos,
        "mean_acceptance_length": 1 + accepted / drafts if drafts else None,
        "acceptance_per_position": [a / drafts for a in per_pos] if drafts else [],
    }


def openai_server_command(
    model: str | os.PathLike,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_model_name: str = "jocr",
    num_speculative_tokens: int = 3,
    python: str | None = None,
    chat_template_path: str | os.PathLike | None = None,
    extra_args: list[str] | None = None,
) -> list[str]:
    """argv that starts vLLM's OpenAI-compatible server on a jocr checkpoint (the plugin registers jocr).

    `chat_template_path` must hold CHAT_TEMPLATE (launch_openai_server writes it beside nothing else)."""
    kwargs = vllm_llm_kwargs(model, num_speculative_tokens)
    argv = [
        python or sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        kwargs["model"],
        "--tokenizer",
        kwargs["tokenizer"],
        "--served-model-name",
        served_model_name,
        "--host",
        host,
        "--port",
        str(port),
        "--dtype",
        kwargs["dtype"],
        "--max-model-len",
        str(kwargs["max_model_len"]),
        "--hf-overrides",
        json.dumps(kwargs["hf_overrides"]),
        "--limit-mm-per-prompt",
        json.dumps(kwargs["limit_mm_per_prompt"]),
    ]
    if "speculative_config" in kwargs:
        argv += ["--speculative-config", json.dumps(kwargs["speculative_config"])]
    else:
        argv += ["--logits-processors", GUARD_PROCESSOR]
    if chat_template_path is not None:
        argv += ["--chat-template", str(chat_template_path)]
    return argv + list(extra_args or [])


def launch_openai_server(
    model: str | os.PathLike,
    *,
    workdir: str | os.PathLike,
    cpu: bool = True,
    log_path: str | os.PathLike | None = None,
    **options: Any,
) -> subprocess.Popen:
    """Start vLLM's OpenAI server on a jocr checkpoint in the background; the caller stops it.

    cpu=True adds vLLM's CPU settings (eager mode, in-process executor, CPU_ENV). `options` go to
    `openai_server_command`. Its chat template is written to `workdir`.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    template = workdir / "jocr_chat_template.jinja"
    template.write_text(CHAT_TEMPLATE)
    extra = list(options.pop("extra_args", None) or [])
    if cpu:
        extra += ["--enforce-eager", "--distributed-executor-backend", "uni"]
    argv = openai_server_command(model, chat_template_path=template, extra_args=extra, **options)
    env = {**os.environ, **(CPU_ENV if cpu else {})}
    log = open(log_path or workdir / "vllm_server.log", "wb")  # noqa: SIM115 (owned by the child's lifetime)
    # Its own session: vLLM's shutdown signals its process group, which must not include the caller.
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def main(argv: list[str] | None = None) -> int:
    """`python -m jocr.integrations.vllm MODEL [--port P] [-k K] [--cpu]`: run vLLM's OpenAI server in the
    foreground (it replaces this process)."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m jocr.integrations.vllm", description=main.__doc__)
    parser.add_argument("model", help="jocr checkpoint directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("-k", "--num-speculative-tokens", type=int, default=3)
    parser.add_argument("--served-model-name", default="jocr")
    parser.add_argument("--cpu", action="store_true", help="vLLM CPU settings (eager, in-process executor)")
    args, rest = parser.parse_known_args(argv)
    try:
        template = Path(tempfile.mkdtemp(prefix="jocr-vllm-")) / "jocr_chat_template.jinja"
        template.write_text(CHAT_TEMPLATE)
        extra = rest + (["--enforce-eager", "--distributed-executor-backend", "uni"] if args.cpu else [])
        argv = openai_server_command(
            args.model,
            host=args.host,
            port=args.port,
            served_model_name=args.served_model_name,
            num_speculative_tokens=args.num_speculative_tokens,
            chat_template_path=template,
            extra_args=extra,
        )
    except ValueError as exc:
        print(f"jocr vllm: error: {exc}", file=sys.stderr)
        return 2
    env = {**os.environ, **(CPU_ENV if args.cpu else {})}
    os.execvpe(argv[0], argv, env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
