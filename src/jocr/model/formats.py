"""Weight formats for inference: which dtype each layer type is kept and computed in, chosen by measurement.

On CPUs without a bf16 matrix unit (AVX2; docs/model.md "Speed") torch's bf16 products run at a few GFLOP/s
whatever the shape, while its fp32 products reach tens of GFLOP/s; decoding, on the other hand, is bound by
the bytes of weights read per token. Hence:

- `float32`: every weight upcast (twice the memory of a bf16 checkpoint).
- `bfloat16`: every weight and product in bf16 (torch's own kernels; the plain path).
- `auto` (default): nothing is rounded. On CUDA: bf16. On CPU: the vision encoder, embeddings, norms and
  routers are upcast to fp32 (compute-bound, few bytes); the decoder's linear layers (attention, experts,
  shared experts, dense MLP, lm_head, FastMTP head) keep the stored bf16 bytes and compute in fp32: decode,
  verify and draft passes and short prompts (sequences of <= kernels.QUERY_MAX positions, any batch)
  through jocr's AVX2 kernel (model/kernels), in an order that makes a row's result independent of the
  rows beside it; longer prompts through torch's fp32 GEMM on the weight upcast (kept once for small
  checkpoints: FLOAT_COPY_MAX_BYTES, else upcast per call). The residual
  stream is fp32, so `auto` computes what `float32` computes (up to summation order) with the memory of
  bf16. `float32` packs the decoder linears the same way (fp32 weights, same kernel), so it is
  row-invariant too.
- `quantize="int8"` (opt-in, lossy): the same decoder linears as int8 with one fp32 scale per output row
  (symmetric, round to nearest), through the same kernel; half the bytes of bf16 per decoded token.
  Its cost against fp32 logits is measured by benchmarks/fullsize.py and stated in docs/model.md.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from jocr.model import kernels
from jocr.model.weights import quantize_int8

DTYPES = ("auto", "float32", "bfloat16")
QUANTIZE = ("none", "int8")
_NON_DECODER = re.compile(r"^model\.(sam_model|vision_model|projector|image_newline|view_seperator)")


# Checkpoints whose packed bf16 decoder linears would take at most this many bytes as fp32 keep an fp32 copy
# of each such weight for torch's GEMM (long prompts), made on the layer's first long pass, instead of
# upcasting the weight on every call: the bundled members' copies are about 30 MB each. Larger checkpoints
# (the full-size decoder: about 11 GB in fp32) keep upcasting per call, so their memory stays that of bf16.
FLOAT_COPY_MAX_BYTES = 256 << 20


class PackedLinear(nn.Module):
    """Bias-free linear layer with bf16, fp32 (or int8 + per-row scale) weights and fp32 inputs and outputs.

    `weight` keeps its published name and shape (N, K), so state_dict keys are unchanged. With
    `keep_float`, a bf16 weight's exact fp32 copy is made on the first pass that takes torch's GEMM and
    reused by later ones (FLOAT_COPY_MAX_BYTES says for which checkpoints `apply_format` sets it)."""

    def __init__(
        self, weight: torch.Tensor, scale: torch.Tensor | None = None, keep_float: bool = False
    ) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.contiguous(), requires_grad=False)
        self.register_buffer("scale", scale, persistent=False)
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        self.fast = weight.device.type == "cpu" and self.in_features % 16 == 0 and kernels.available()
        self.keep_float = keep_float and weight.dtype == torch.bfloat16
        self._float: torch.Tensor | None = None  # the fp32 copy, once made (not part of the state dict)

    def float_weight(self) -> torch.Tensor:
        """The weight as fp32 (exact: bf16 -> fp32 only widens), kept from the first call if `keep_float`."""
        if not self.keep_float:
            return self.weight.float()
        if self._float is None:
            self._float = self.weight.float()
        return self._float

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).float().contiguous()  # (M, K)
        if self.fast and kernels.row_invariant(x2.shape[0]):
            y = kernels.linear(x2, self.weight, self.scale)  # (M, N)
        else:
            y = F.linear(x2, self.float_weight())
            if self.scale is not None:
                y = y * self.scale
        return y.view(*shape[:-1], self.out_features)


class FusedExperts:
    """A MoE layer's routed and shared experts through one kernel call (`kernels.moe`) wherever the kernels
    apply (`kernels.row_invariant`): each chosen expert runs once on all the rows that chose it, as
    in `MoE.routed`, and the layer costs one Python call instead of three per chosen expert (the
    per-expert calls were about a fifth of a full-size decode step: docs/model.md)."""

    def __init__(self, moe: nn.Module) -> None:
        def parts(mlp):
            return [getattr(mlp, name) for name in ("gate_proj", "up_proj", "down_proj")]

        experts = [parts(e) for e in moe.experts]
        layers = [lin for e in experts for lin in e]
        shared = parts(moe.shared_experts) if moe.shared_experts is not None else None
        int8 = layers[0].scale is not None
        gate, up, down = ([e[i].weight for e in experts] for i in range(3))
        scales = [[e[i].scale for e in experts] for i in range(3)] if int8 else None
        self.table = kernels.ExpertTable(
            gate,
            up,
            down,
            scales,
            [lin.weight for lin in shared] if shared else None,
            [lin.scale for lin in shared] if shared and int8 else None,
        )

    @staticmethod
    def applies(moe: nn.Module) -> bool:
        mlps = list(moe.experts) + ([moe.shared_experts] if moe.shared_experts is not None else [])
        layers = [getattr(m, n) for m in mlps for n in ("gate_proj", "up_proj", "down_proj")]
        if not all(isinstance(lin, PackedLinear) and lin.fast for lin in layers):
            return False
        dtypes = {lin.weight.dtype for lin in layers}
        return len(dtypes) == 1 and all(lin.in_features % 16 == 0 for lin in layers)

    def __call__(self, x: torch.Tensor, weights: torch.Tensor, indices: torch.Tensor) -> torch.Tensor | None:
        # x: (N, D); weights, indices: (N, k) -> (N, D) float32, or None (the caller's own path then runs)
        if not kernels.row_invariant(x.shape[0]):
            return None
        return kernels.moe(x.float().contiguous(), weights, indices, self.table)


def _decoder_linears(model: nn.Module) -> list[tuple[nn.Module, str, nn.Linear]]:
    """(parent, attribute, layer) of every nn.Linear outside the vision encoder."""
    found = []
    for name, module in model.named_modules():
        if _NON_DECODER.match(name):
            continue
        for attr, child in module.named_children():
            if isinstance(child, nn.Linear) and child.bias is None:
                found.append((module, attr, child))
    return found


def resolve(dtype: str, device: torch.device | str = "cpu") -> str:
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    if dtype == "auto" and torch.device(device).type != "cpu":
        return "bfloat16"
    return dtype


@torch.no_grad()
def apply_format(model: nn.Module, dtype: str = "auto", quantize: str = "none") -> nn.Module:
    """Convert a loaded model in place to a format (see the module docstring); returns it."""
    if quantize not in QUANTIZE:
        raise ValueError(f"unknown quantization {quantize!r}; choose from {', '.join(QUANTIZE)}")
    device = next(model.parameters()).device
    dtype = resolve(dtype, device)
    if quantize == "int8" and (dtype == "bfloat16" or device.type != "cpu"):
        raise ValueError("--quantize int8 computes in float32 on a CPU: use --dtype auto or float32")
    if dtype == "float32":
        model.float()
    elif dtype == "bfloat16":
        model.to(torch.bfloat16)
    if dtype == "bfloat16" or device.type != "cpu":
        return model
    linears = _decoder_linears(model)
    packed = {id(layer) for _, _, layer in linears}
    for module in model.modules():  # everything but the decoder linears runs in fp32
        if id(module) in packed:
            continue
        for name, param in list(module.named_parameters(recurse=False)):
            if param.is_floating_point() and param.dtype != torch.float32:
                setattr(module, name, nn.Parameter(param.float(), requires_grad=False))
    done: dict[int, PackedLinear] = {}  # a layer shared by two parents (tied heads) is packed once
    float_bytes = 4 * sum({id(layer): layer.weight.numel() for _, _, layer in linears}.values())
    keep_float = quantize == "none" and float_bytes <= FLOAT_COPY_MAX_BYTES
    for parent, attr, layer in linears:
        if id(layer) not in done:
            w = layer.weight.detach()
            if quantize == "int8":
                done[id(layer)] = PackedLinear(*quantize_int8(w))
            elif w.dtype in (torch.bfloat16, torch.float32):
                done[id(layer)] = PackedLinear(w, keep_float=keep_float)
            else:
                continue
        setattr(parent, attr, done[id(layer)])
        layer.weight = None  # drop the reference so the original storage is freed
    for module in model.modules():
        if hasattr(module, "fast_experts") and FusedExperts.applies(module):
            module.fast_experts = FusedExperts(module)
    return model


def format_bytes(model: nn.Module, dtype: str = "auto", quantize: str = "none", stored=torch.bfloat16) -> int:
    """Bytes the weights will take in a format; `model` may live on the meta device."""
    dtype = resolve(dtype)
    total = 0
    linear_ids = {id(layer.weight) for _, _, layer in _decoder_linears(model)}
    for param in model.parameters():
        n = param.numel()
        if dtype == "float32" and quantize == "none":
            total += 4 * n
        elif dtype == "bfloat16":
            total += 2 * n
        elif id(param) in linear_ids:
            total += n + 4 * param.shape[0] if quantize == "int8" else n * torch.finfo(stored).bits // 8
        else:
            total += 4 * n
    return total


def memory_available() -> int | None:
    """MemAvailable from /proc/meminfo (bytes), or None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_fits(need: int, what: str, available: int | None = None) -> None:
    """Raise MemoryError with both figures when `need` bytes will not fit in the memory available now."""
    available = memory_available() if available is None else available
    if available is not None and need > available:
        raise MemoryError(
            f"{what} needs {need / 1e9:.1f} GB of memory but only {available / 1e9:.1f} GB is available"
        )


def load_formatted(
    path: str | Path, dtype: str = "auto", quantize: str = "none", device: str | torch.device = "cpu"
) -> nn.Module:
    """Load a checkpoint directory straight into a format, refusing up front (MemoryError naming the need
    and the memory available) when its weights would not fit in RAM rather than meeting the OOM killer."""
    from jocr.config import OCRConfig
    from jocr.model.ocr import OCRModel
    from jocr.model.weights import (
        CheckpointError,
        checkpoint_files,
        checkpoint_storage,
        empty_model,
        load_pretrained,
    )

    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"model directory {path} does not exist")
    device = torch.device(device)
    dtype = resolve(dtype, device)
    files = checkpoint_files(path)
    key = "model.embed_tokens.weight"
    if key not in files:
        raise CheckpointError(f"{path}: missing key(s): {key}")
    stored, _int8 = checkpoint_storage(files)  # an int8 file loads as its float dtype (bf16)
    config = OCRConfig.load(path)
    if device.type == "cpu":
        skeleton = empty_model(OCRModel, config)
        check_fits(format_bytes(skeleton, dtype, quantize, stored), f"{path} as {dtype}/{quantize}")
    load_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}.get(dtype)
    if dtype == "auto" and stored == torch.float16:
        load_dtype = torch.float32  # no fp16 kernel here: upcast (exact)
    model = load_pretrained(OCRModel, path, dtype=load_dtype, device=device)
    return apply_format(model, dtype, quantize)


def quantize_model_dir(source: str | Path, target: str | Path) -> Path:
    """Write the model directory `source` (any float or int8 checkpoint) to `target` as weight-only int8:
    config.json, int8 safetensors and a copy of its tokenizer.json. The target must not be the source."""
    from jocr.model.ocr import OCRModel
    from jocr.model.weights import INT8, CheckpointError, load_pretrained, save_pretrained

    source, target = Path(source), Path(target)
    if target.exists() and target.resolve() == source.resolve():
        raise CheckpointError(f"{target}: write the int8 copy to another directory than its source")
    model = load_pretrained(OCRModel, source)
    save_pretrained(model, target, dtype=INT8)
    if (source / "tokenizer.json").is_file():
        shutil.copyfile(source / "tokenizer.json", target / "tokenizer.json")
    return target
