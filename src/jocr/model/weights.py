"""Checkpoint IO in the Hugging Face layout: `config.json` + `model.safetensors`, or shards
`model-0000i-of-0000n.safetensors` with `model.safetensors.index.json`.

Our parameter names are the published DeepSeek-OCR / jina-ocr-v1 keys, so published checkpoints load
unchanged; keys that do not line up are reported by name, never silently skipped.

Weight-only int8 storage (`save_pretrained(..., dtype="int8")`): the weight of every linear layer and
embedding is stored as int8 with one fp32 scale per output row (symmetric, round to nearest:
`quantize_int8`) under `<key>_scale`, every other floating tensor (norms, biases, convolutions, routers,
position tables) as bf16, and each file's safetensors metadata says so (QUANTIZATION_KEY, DTYPE_KEY).
`load_pretrained` dequantizes on load to the float dtype asked for (none asked: the stored bf16), so a
model loaded from int8 files is an ordinary model: the file is half the bytes, the engine unchanged.
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


# Weight-only int8 files: the metadata key naming the scheme, its one value, the key naming the float dtype
# the file loads as (its other floating tensors are stored in it), and the suffix of a weight's scale.
QUANTIZATION_KEY = "jocr.quantization"
INT8 = "int8"
DTYPE_KEY = "jocr.dtype"
SCALE_SUFFIX = "_scale"
_INT8_FLOAT = torch.bfloat16  # the float dtype of an int8 file's other tensors
_STORED_CODES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}  # safetensors' names
_DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


class CheckpointError(ValueError):
    """A checkpoint that does not match the model (missing / unexpected keys, shapes, files)."""


def parse_dtype(dtype: torch.dtype | str | None) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; choose from {', '.join(_DTYPES)}")
    return _DTYPES[dtype]


def parse_storage(dtype: torch.dtype | str | None) -> tuple[torch.dtype | None, bool]:
    """(float dtype, weight-only int8) of a `save_pretrained` dtype: a float dtype, None (as the model
    holds it) or "int8" (bf16 with int8 matrices)."""
    if isinstance(dtype, str) and dtype.lower() == INT8:
        return _INT8_FLOAT, True
    return parse_dtype(dtype), False


def quantize_int8(weight: torch.Tensor, rows: int = 8192) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-row int8: (N, K) -> int8 (N, K), fp32 scales (N,). Done in row chunks so a large
    matrix (lm_head) never needs a whole fp32 copy."""
    q = torch.empty(weight.shape, dtype=torch.int8)
    scale = torch.empty(weight.shape[0], dtype=torch.float32)
    for start in range(0, weight.shape[0], rows):
        w = weight[start : start + rows].float()
        s = w.abs().amax(dim=1).clamp_min(1e-12) / 127.0
        q[start : start + rows] = torch.round(w / s[:, None]).clamp_(-127, 127).to(torch.int8)
        scale[start : start + rows] = s
    return q, scale


def dequantize_int8(
    q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype, rows: int = 8192
) -> torch.Tensor:
    """`quantize_int8`'s inverse: int8 (N, K) times fp32 scales (N,) -> (N, K) in `dtype`, in row chunks."""
    out = torch.empty(q.shape, dtype=dtype)
    for start in range(0, q.shape[0], rows):
        part = q[start : start + rows].float() * scale[start : start + rows, None]
        out[start : start + rows] = part.to(dtype)
    return out


def int8_keys(model: nn.Module) -> set[str]:
    """The state-dict keys weight-only int8 stores as int8: the 2-D floating weights of linear layers and
    embeddings (every name of a shared one). Norms, biases, convolutions, MoE routers (few values, and
    they choose the experts) and position tables stay floating."""
    keys = set()
    for name, module in model.named_modules(remove_duplicate=False):
        weight = getattr(module, "weight", None)
        if isinstance(module, nn.Linear | nn.Embedding) and isinstance(weight, torch.Tensor):
            if weight.dim() == 2 and weight.is_floating_point():
                keys.add(f"{name}.weight" if name else "weight")
    return keys


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
    """Write config.json and the weights (one file, or shards of at most max_shard_size bytes each).

    dtype: a float dtype for every floating tensor, None (as held), or "int8": weight-only int8 (the module
    docstring; `int8_keys` says which tensors), a weight and its scale always in the same shard."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    dtype, int8 = parse_storage(dtype)
    quantized = int8_keys(model) if int8 else set()
    limit = parse_size(max_shard_size)
    model.config.save(path / "config.json")
    groups: list[dict[str, torch.Tensor]] = []  # a tensor, or an int8 weight with its scale
    for key, tensor in model.state_dict().items():
        tensor = tensor.detach().cpu()
        if key in quantized:
            q, scale = quantize_int8(tensor)
            groups.append({key: q, key + SCALE_SUFFIX: scale})
            continue
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        groups.append({key: tensor.contiguous()})
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for group in groups:
        nbytes = sum(t.numel() * t.element_size() for t in group.values())
        if limit is not None and shards[-1] and size + nbytes > limit:
            shards.append({})
            size = 0
        shards[-1].update(group)
        size += nbytes
    tensors = {k: t for group in groups for k, t in group.items()}
    for stale in [*path.glob("model-*-of-*.safetensors"), path / SINGLE_FILE, path / INDEX_FILE]:
        stale.unlink(missing_ok=True)
    metadata = {"format": "pt"}
    if int8:
        metadata.update({QUANTIZATION_KEY: INT8, DTYPE_KEY: _DTYPE_NAMES[_INT8_FLOAT]})
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


def _open(file: Path):
    """`safe_open` on a weights file; one that is not readable safetensors is a one-line CheckpointError."""
    try:
        return safe_open(str(file), framework="pt", device="cpu")
    except Exception as exc:  # safetensors raises its own error types (a truncated or foreign file)
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise CheckpointError(f"{file}: not a readable safetensors file ({reason})") from None


def checkpoint_files(path: Path) -> dict[str, Path]:
    """Map every tensor name to the file holding it."""
    if (path / INDEX_FILE).is_file():
        try:
            index = json.loads((path / INDEX_FILE).read_text())
            files = {key: path / name for key, name in index["weight_map"].items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            raise CheckpointError(f"{path}: {INDEX_FILE} is not an index with a weight_map") from None
        for file in set(files.values()):
            if not file.is_file():
                raise CheckpointError(f"{path}: shard {file.name} named in {INDEX_FILE} is missing")
        return files
    single = path / SINGLE_FILE
    if not single.is_file():
        raise CheckpointError(f"{path}: neither {SINGLE_FILE} nor {INDEX_FILE} found")
    with _open(single) as f:
        return dict.fromkeys(f.keys(), single)


def checkpoint_storage(files: dict[str, Path]) -> tuple[torch.dtype, bool]:
    """(the float dtype the checkpoint loads as when none is asked, whether it is weight-only int8), from
    its files' metadata (DTYPE_KEY) or else the stored dtype of the token embedding (a checkpoint that keeps
    a few tensors, e.g. router weights, in float32 still gives one dtype). Files that disagree on the
    scheme, or name one this loader does not know, are a CheckpointError."""
    schemes = {}
    for file in sorted(set(files.values())):
        with _open(file) as f:
            metadata = f.metadata() or {}
        schemes[file] = (metadata.get(QUANTIZATION_KEY), metadata.get(DTYPE_KEY))
    (scheme, dtype_name), *others = set(schemes.values()) or {(None, None)}
    if others:
        raise CheckpointError(f"{next(iter(schemes)).parent}: its shards disagree on {QUANTIZATION_KEY}")
    if scheme not in (None, INT8):
        raise CheckpointError(
            f"{next(iter(schemes))}: unknown {QUANTIZATION_KEY} {scheme!r} (this jocr reads int8)"
        )
    if scheme == INT8:
        if dtype_name not in _DTYPES:
            raise CheckpointError(f"{next(iter(schemes))}: unknown {DTYPE_KEY} {dtype_name!r}")
        return _DTYPES[dtype_name], True
    embed_key = "model.embed_tokens.weight"
    if embed_key not in files:  # not a page model (the formula reader): what its files say, else float32
        return _DTYPES.get(dtype_name, torch.float32), False
    with _open(files[embed_key]) as f:
        code = f.get_slice(embed_key).get_dtype()
    return _STORED_CODES.get(code, torch.float32), False


def _describe(keys: list[str], limit: int = 8) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" ... ({len(keys)} in all)" if len(keys) > limit else "")


def _read_scales(path: Path, files: dict[str, Path], int8: bool) -> dict[str, torch.Tensor]:
    """The int8 weights' scales by weight key; CheckpointError for scales in files whose metadata does not
    say int8 (QUANTIZATION_KEY)."""
    scales: dict[str, torch.Tensor] = {}
    by_file: dict[Path, list[str]] = {}
    for key, file in files.items():
        if key.endswith(SCALE_SUFFIX) and key.removesuffix(SCALE_SUFFIX) in files:
            by_file.setdefault(file, []).append(key)
    if by_file and not int8:
        key = next(iter(by_file.values()))[0]
        raise CheckpointError(
            f"{path}: {key.removesuffix(SCALE_SUFFIX)} is stored as int8 without {QUANTIZATION_KEY}={INT8} "
            "in the file's metadata"
        )
    for file, keys in by_file.items():
        with _open(file) as f:
            for key in keys:
                scale = f.get_tensor(key)
                if scale.dtype != torch.float32 or scale.dim() != 1 or not torch.isfinite(scale).all():
                    raise CheckpointError(f"{path}: {key} is not a finite float32 vector of row scales")
                scales[key.removesuffix(SCALE_SUFFIX)] = scale
    return scales


def _stored_tensor(
    path: Path, key: str, tensor: torch.Tensor, scales: dict, dtype: torch.dtype
) -> torch.Tensor:
    """A tensor as read, dequantized when it is an int8 weight; CheckpointError for an int8 tensor without
    its scale or a scale of the wrong length, and for a scale beside a weight that is not int8."""
    scale = scales.get(key)
    if tensor.dtype == torch.int8:
        if scale is None:
            raise CheckpointError(
                f"{path}: {key} is stored as int8 without a {key + SCALE_SUFFIX} "
                f"(or without {QUANTIZATION_KEY}={INT8} in the file's metadata)"
            )
        if tensor.dim() != 2 or scale.shape[0] != tensor.shape[0]:
            raise CheckpointError(
                f"{path}: {key + SCALE_SUFFIX} has {scale.shape[0]} scales for {tuple(tensor.shape)} weights"
            )
        return dequantize_int8(tensor, scale, dtype)
    if scale is not None:
        raise CheckpointError(f"{path}: {key + SCALE_SUFFIX} scales {key}, which is not stored as int8")
    return tensor.to(dtype) if tensor.is_floating_point() else tensor


def load_pretrained(
    model_class,
    path: str | Path,
    dtype: torch.dtype | str | None = None,
    device: str | torch.device | None = None,
) -> nn.Module:
    """Build `model_class(config)` on the meta device (`empty_model`) and fill it from the checkpoint.

    dtype None uses the checkpoint's stored float dtype (`checkpoint_storage`) for every floating tensor;
    int8 weights are dequantized to it (`dequantize_int8`); device None means CPU."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"model directory {path} does not exist")
    config = OCRConfig.load(path)
    dtype = parse_dtype(dtype)
    device = torch.device(device or "cpu")
    files = checkpoint_files(path)
    stored, int8 = checkpoint_storage(files)
    dtype = dtype or stored
    scales = _read_scales(path, files, int8)
    model = empty_model(model_class, config)
    expected = model.state_dict()
    scale_keys = {key + SCALE_SUFFIX for key in scales}
    present = {k for k in files if not IGNORED_KEYS.search(k) and k not in scale_keys}
    missing = sorted(set(expected) - present)
    unexpected = sorted(present - set(expected))
    problems = []
    if missing:
        problems.append(f"missing key(s): {_describe(missing)}")
    if unexpected:
        problems.append(f"unexpected key(s): {_describe(unexpected)}")
    if problems:
        raise CheckpointError(f"{path}: " + "; ".join(problems))
    state = {}
    by_file: dict[Path, list[str]] = {}
    for key in expected:
        by_file.setdefault(files[key], []).append(key)
    for file, keys in by_file.items():
        with _open(file) as f:
            for key in keys:
                tensor = f.get_tensor(key)
                if tuple(tensor.shape) != tuple(expected[key].shape):
                    raise CheckpointError(
                        f"{path}: {key} has shape {tuple(tensor.shape)}, the config expects "
                        f"{tuple(expected[key].shape)}"
                    )
                state[key] = _stored_tensor(path, key, tensor, scales, dtype).to(device)
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval()
