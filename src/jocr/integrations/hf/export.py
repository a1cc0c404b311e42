"""`jocr export hf MODEL_DIR OUT_DIR`: a jocr model as a self-contained Hugging Face repository.

The repository needs torch, transformers, safetensors, tokenizers and Pillow (and vLLM for the vLLM recipe),
never jocr:

| file | what |
|---|---|
| `config.json` | jocr's config + `architectures`, `auto_map`, `torch_dtype` float32 (the compute dtype) |
| `model.safetensors`, or `model-0000i-of-0000n.safetensors` + index | the tensors, copied as stored |
| `tokenizer.json`, `tokenizer_config.json` | the tokenizer; its config carries the plain chat template |
| `generation_config.json` | BOS / EOS / PAD ids, greedy, `<image>` suppressed |
| `configuration_jocr.py`, `modeling_jocr.py`, `processing_jocr.py` | Transformers' entry points (bundle.py) |
| `deepseek_ocr_mtp.py` | the vLLM recipe's four names (bundle.py) |
| `jocr_*.py` | the jocr modules those import (bundle.py) |
| `README.md` | a model card with the Transformers and vLLM snippets |

MODEL_DIR is a jocr checkpoint or a published DeepSeek-OCR / jina-ocr-v1 repository (the layouts
`OCRModel.from_pretrained` loads); tensors are copied without conversion, so exporting an export gives the
same tensors, byte for byte.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file

from jocr.config import OCRConfig
from jocr.integrations.hf.bundle import bundle
from jocr.integrations.hf.card import model_card
from jocr.integrations.vllm import CHAT_TEMPLATE, TARGET_ARCH
from jocr.model.weights import (
    IGNORED_KEYS,
    INDEX_FILE,
    SINGLE_FILE,
    CheckpointError,
    checkpoint_files,
    parse_size,
)
from jocr.tokenizer import BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, Tokenizer

# vLLM's name for the model (it derives the FastMTP draft's, "Eagle" + this, from config.json); Transformers
# finds its class through auto_map.
ARCHITECTURE = TARGET_ARCH
AUTO_MAP = {
    "AutoConfig": "configuration_jocr.JocrConfig",
    "AutoModel": "modeling_jocr.JocrForOCR",
    "AutoModelForCausalLM": "modeling_jocr.JocrForOCR",
}
# What Transformers loads the model in by default (hf_config): jocr's default compute dtype.
COMPUTE_DTYPE = "float32"
DEFAULT_MAX_SHARD_SIZE = "5GB"  # Transformers' own default for save_pretrained
_OWN_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json", "README.md")


class ExportError(ValueError):
    """An export that cannot be written (bad model directory, tokenizer mismatch, existing output)."""


def _check_tokenizer(model_dir: Path, config: OCRConfig) -> Tokenizer:
    try:
        tok = Tokenizer.from_dir(model_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise ExportError(f"{model_dir}: {exc}") from None
    if tok.image_id != config.image_token_id:
        raise ExportError(
            f"{model_dir}: config.json says image_token_id {config.image_token_id} but the tokenizer's "
            f"<image> is {tok.image_id}; fix image_token_id in {model_dir / 'config.json'}"
        )
    return tok


def _tensor_plan(model_dir: Path, config: OCRConfig) -> dict[str, Path]:
    """Every tensor the model needs -> the file holding it (`load_pretrained`'s checks, without loading)."""
    from jocr.model.ocr import OCRModel
    from jocr.model.weights import checkpoint_storage, empty_model

    files = checkpoint_files(model_dir)
    if checkpoint_storage(files)[1]:  # the repository's loaders read float tensors only
        raise ExportError(f"{model_dir} is stored as weight-only int8: export the float checkpoint instead")
    expected = empty_model(OCRModel, config).state_dict()
    present = {k for k in files if not IGNORED_KEYS.search(k)}
    missing, unexpected = sorted(set(expected) - present), sorted(present - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{model_dir}: missing key(s) {missing[:8]}, unexpected key(s) {unexpected[:8]}"
        )
    return {key: files[key] for key in expected}


def _copy_tensors(plan: dict[str, Path], out_dir: Path, max_shard_size: int | None) -> dict[str, str]:
    """Copy tensors as stored into one file or shards of at most max_shard_size bytes; returns key -> file."""
    sizes = {}
    for file in sorted(set(plan.values())):
        with safe_open(str(file), framework="pt") as f:
            for key in [k for k, v in plan.items() if v == file]:
                sl = f.get_slice(key)
                n = 1
                for dim in sl.get_shape():
                    n *= dim
                itemsize = {"F64": 8, "F32": 4, "I64": 8, "I32": 4, "BF16": 2, "F16": 2, "I16": 2}
                sizes[key] = n * itemsize.get(sl.get_dtype(), 1)
    groups: list[list[str]] = [[]]
    used = 0
    for key in plan:
        if max_shard_size is not None and groups[-1] and used + sizes[key] > max_shard_size:
            groups.append([])
            used = 0
        groups[-1].append(key)
        used += sizes[key]
    names = (
        [SINGLE_FILE]
        if len(groups) == 1
        else [f"model-{i:05d}-of-{len(groups):05d}.safetensors" for i in range(1, len(groups) + 1)]
    )
    weight_map = {}
    for name, keys in zip(names, groups):
        tensors = {}
        for key in keys:
            with safe_open(str(plan[key]), framework="pt") as f:
                tensors[key] = f.get_tensor(key).contiguous()
        save_file(tensors, str(out_dir / name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(keys, name))
        del tensors
    if len(groups) > 1:
        index = {"metadata": {"total_size": sum(sizes.values())}, "weight_map": weight_map}
        (out_dir / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n")
    return weight_map


def hf_config(config: OCRConfig) -> dict:
    """The exported config.json: jocr's own sections plus what Transformers reads.

    `torch_dtype` is the dtype Transformers loads the model in when the caller names none (its default,
    "auto", reads it here), so it says what the model computes in, not how the tensors are stored:
    float32, as jocr computes by default (on a CPU, float32 products over the stored bf16 weights:
    jocr.model.formats) and as the vLLM recipe does (`vllm_llm_kwargs`). Upcasting bf16 is exact, so the
    export computes what `jocr parse` computes; in bf16 its greedy tokens would drift from jocr's (and on
    CPUs without a bf16 matrix unit run several times slower). A caller that wants bf16 (a GPU) passes
    `dtype=torch.bfloat16` to `from_pretrained`."""
    return {
        **config.to_dict(),
        "architectures": [ARCHITECTURE],
        "auto_map": dict(AUTO_MAP),
        "torch_dtype": COMPUTE_DTYPE,
        "tie_word_embeddings": False,
    }


def tokenizer_config(tok: Tokenizer, max_positions: int) -> dict:
    """Transformers' fast tokenizer over tokenizer.json, with the special tokens by name and the plain chat
    template that vLLM's `llm.chat` renders (BOS + "<image>\\n" + text, as `Tokenizer.build_prompt`)."""
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN if tok.token_to_id(PAD_TOKEN) is not None else EOS_TOKEN,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": max_positions,
        "chat_template": CHAT_TEMPLATE,
    }


def generation_config(tok: Tokenizer, config: OCRConfig) -> dict:
    return {
        "bos_token_id": tok.bos_id,
        "eos_token_id": tok.eos_id,
        "pad_token_id": tok.pad_id,
        "do_sample": False,
        # A generated `<image>` would have no image to fill it (the engine never generates it either).
        "suppress_tokens": [config.image_token_id],
        "max_new_tokens": 4096,
    }


def export_hf(
    model_dir: str | Path,
    out_dir: str | Path,
    max_shard_size: int | str | None = DEFAULT_MAX_SHARD_SIZE,
    overwrite: bool = False,
    name: str | None = None,
) -> Path:
    """Write the repository for `model_dir` to `out_dir` (see the module docstring); returns out_dir."""
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    if not model_dir.is_dir():
        raise ExportError(f"model directory {model_dir} does not exist")
    if out_dir.exists() and any(out_dir.iterdir()):
        if not overwrite:
            raise ExportError(f"{out_dir} exists and is not empty (pass --overwrite to replace it)")
        if out_dir.resolve() == model_dir.resolve():
            raise ExportError("OUT_DIR must differ from MODEL_DIR")
    try:
        config = OCRConfig.load(model_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise ExportError(str(exc)) from None
    tok = _check_tokenizer(model_dir, config)
    plan = _tensor_plan(model_dir, config)
    limit = parse_size(max_shard_size)
    files = bundle()  # before writing anything: a module that cannot be bundled leaves no half export
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    _copy_tensors(plan, out_dir, limit)
    shutil.copyfile(model_dir / "tokenizer.json", out_dir / "tokenizer.json")
    max_positions = config.decoder.max_position_embeddings
    writes = {
        "config.json": hf_config(config),
        "tokenizer_config.json": tokenizer_config(tok, max_positions),
        "generation_config.json": generation_config(tok, config),
    }
    for filename, data in writes.items():
        (out_dir / filename).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    for file in files:
        (out_dir / file.name).write_text(file.source)
    (out_dir / "README.md").write_text(
        model_card(config, name or out_dir.name, sorted(f.name for f in files))
    )
    return out_dir
