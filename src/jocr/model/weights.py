"""Checkpoint IO in the Hugging Face layout: `config.json` + `model.safetensors`, or shards
`model-0000i-of-0000n.safetensors` with `model.safetensors.index.json`.

Our parameter names are the published DeepSeek-OCR / jina-ocr-v1 keys, so published checkpoints load
unchanged; keys that do not line up are reported by name, never silently skipped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn
from torch.overrides import TorchFunctionMode

from jocr.config import OCRConfig

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
# Persistent buffers of reference implementations that carry no learned values (CLIP's position ids, RoPE
# frequency tables of older DeepSeek exports).
IGNORED_KEYS = re.compile(r"(^|\.)(position_ids|rotary_emb\.inv_freq)$")

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


class CheckpointError(ValueError):
    """A checkpoint that does not match the model (missing / unexpected keys, shapes, files)."""


def parse_dtype(dtype: torch.dtype | str | None) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; choose from {', '.join(_DTYPES)}")
    return _DTYPES[dtype]


def parse_size(size: int | str | None) -> int | None:
    """Bytes from an int or a string such as "2GB", "500MB", "64KiB"."""
    if size is None or isinstance(size, int):
        return size
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B?\s*", size, flags=re.IGNORECASE)
    if not match:
        raise ValueError(f"cannot read size {size!r} (e.g. 2GB, 500MB)")
    base = 1024 if match.group(3) else 1000
    power = " KMGT".index(match.group(2).upper() or " ")
    return int(float(match.group(1)) * base**power)


class _SkipMetaInit(TorchFunctionMode):
    """Skips the initialisers modules run in their constructors when the tensor is on the meta device.

    A meta tensor holds no values, so skipping them changes nothing built; but torch's `normal_` on a meta
    tensor goes through its reference implementation, whose first call imports torch._dynamo (about 2 CPU-s,
    more than building the model: docs/results/2026-12-03-speed.md). Torch function modes are per thread, so
    models built at the same time elsewhere are initialised as usual."""

    SKIPPED = frozenset(
        {
            nn.init.normal_,
            nn.init.uniform_,
            nn.init.trunc_normal_,
            nn.init.kaiming_uniform_,
            nn.init.kaiming_normal_,
            nn.init.xavier_uniform_,
            nn.init.xavier_normal_,
            nn.init.orthogonal_,
            torch.Tensor.normal_,
            torch.Tensor.uniform_,
            torch.Tensor.fill_,
            torch.Tensor.zero_,
        }
    )

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensor = args[0] if args else kwargs.get("tensor")  # nn.init passes the tensor by keyword
        if func in self.SKIPPED and isinstance(tensor, torch.Tensor) and tensor.is_meta:
            return tensor
        return func(*args, **kwargs)


def empty_model(model_class, config: OCRConfig) -> nn.Module:
    """`model_class(config)` with every parameter and buffer on the meta device: no memory, no values, no
    initialiser run; fill it with `load_state_dict(..., assign=True)` or count its parameters."""
    with torch.device("meta"), _SkipMetaInit():
        return model_class(config)


def init_weights(model: nn.Module, std: float = 0.02, seed: int | None = None) -> None:
    """Normal(0, std) for matrices, embeddings and learned vectors; ones for norm scales; zeros for biases."""
    from jocr.model.decoder import RMSNorm
    from jocr.model.vision import LayerNorm2d

    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    norm_types = (RMSNorm, nn.LayerNorm, LayerNorm2d)
    with torch.no_grad():
        for module in model.modules():
            for name, param in module.named_parameters(recurse=False):
                if isinstance(module, norm_types):
                    param.fill_(1.0 if name == "weight" else 0.0)
                elif name == "bias":
                    param.zero_()
                elif param.dtype == torch.float32 or param.device.type != "cpu":
                    sample = torch.randn(param.shape, generator=gen, dtype=torch.float32) * std
                    param.copy_(sample.to(param.dtype))
                else:  # low precision on CPU: sample in place, no float32 copy of large matrices
                    param.normal_(0.0, std, generator=gen)


def save_pretrained(
    model: nn.Module,
    path: str | Path,
    dtype: torch.dtype | str | None = None,
    max_shard_size: int | str | None = None,
) -> Path:
    """Write config.json and the weights (one file, or shards of at most max_shard_size bytes each)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    dtype = parse_dtype(dtype)
    limit = parse_size(max_shard_size)
    model.config.save(path / "config.json")
    tensors = {}
    for key, tensor in model.state_dict().items():
        tensor = tensor.detach()
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        tensors[key] = tensor.contiguous().cpu()
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for key, tensor in tensors.items():
        nbytes = tensor.numel() * tensor.element_size()
        if limit is not None and shards[-1] and size + nbytes > limit:
            shards.append({})
            size = 0
        shards[-1][key] = tensor
        size += nbytes
    for stale in [*path.glob("model-*-of-*.safetensors"), path / SINGLE_FILE, path / INDEX_FILE]:
        stale.unlink(missing_ok=True)
    metadata = {"format": "pt"}
    if len(shards) == 1:
        save_file(shards[0], str(path / SINGLE_FILE), metadata=metadata)
        return path
    weight_map = {}
    for i, shard in enumerate(shards, start=1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(path / name), metadata=metadata)
        weight_map.update(dict.fromkeys(shard, name))
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (path / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n")
    return path


def checkpoint_files(path: Path) -> dict[str, Path]:
    """Map every tensor name to the file holding it."""
    if (path / INDEX_FILE).is_file():
        index = json.loads((path / INDEX_FILE).read_text())
        files = {key: path / name for key, name in index["weight_map"].items()}
        for file in set(files.values()):
            if not file.is_file():
                raise CheckpointError(f"{path}: shard {file.name} named in {INDEX_FILE} is missing")
        return files
    single = path / SINGLE_FILE
    if not single.is_file():
        raise CheckpointError(f"{path}: neither {SINGLE_FILE} nor {INDEX_FILE} found")
    with safe_open(str(single), framework="pt") as f:
        return dict.fromkeys(f.keys(), single)


def _describe(keys: list[str], limit: int = 8) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" ... ({len(keys)} in all)" if len(keys) > limit else "")


def load_pretrained(
    model_class,
    path: str | Path,
    dtype: torch.dtype | str | None = None,
    device: str | torch.device | None = None,
) -> nn.Module:
    """Build `model_class(config)` on the meta device (`empty_model`) and fill it from the checkpoint.

    dtype None uses the stored dtype of the token embedding for every floating tensor (a checkpoint that keeps
    a few tensors, e.g. router weights, in float32 still gives one dtype); device None means CPU."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"model directory {path} does not exist")
    config = OCRConfig.load(path)
    dtype = parse_dtype(dtype)
    device = torch.device(device or "cpu")
    files = checkpoint_files(path)
    model = empty_model(model_class, config)
    expected = model.state_dict()
    present = {k for k in files if not IGNORED_KEYS.search(k)}
    missing = sorted(set(expected) - present)
    unexpected = sorted(present - set(expected))
    problems = []
    if missing:
        problems.append(f"missing key(s): {_describe(missing)}")
    if unexpected:
        problems.append(f"unexpected key(s): {_describe(unexpected)}")
    if problems:
        raise CheckpointError(f"{path}: " + "; ".join(problems))
    if dtype is None:
        embed_key = "model.embed_tokens.weight"
        with safe_open(str(files[embed_key]), framework="pt", device="cpu") as f:
            dtype = f.get_slice(embed_key).get_dtype()
        dtype = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}.get(dtype, torch.float32)
    state = {}
    by_file: dict[Path, list[str]] = {}
    for key in expected:
        by_file.setdefault(files[key], []).append(key)
    for file, keys in by_file.items():
        with safe_open(str(file), framework="pt", device="cpu") as f:
            for key in keys:
                tensor = f.get_tensor(key)
                if tuple(tensor.shape) != tuple(expected[key].shape):
                    raise CheckpointError(
                        f"{path}: {key} has shape {tuple(tensor.shape)}, the config expects "
                        f"{tuple(expected[key].shape)}"
                    )
                if tensor.is_floating_point():
                    tensor = tensor.to(dtype)
                state[key] = tensor.to(device)
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval()
