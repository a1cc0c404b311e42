"""Inference kernels for CPUs: fp32 activations times bf16, fp32 or int8 weights (see linear.c for why): one
linear layer (`linear`), a whole MoE layer's experts (`moe`), and attention over a KV cache (`attention`).

Each output is computed in an order that does not depend on the shape of the pass (the number of rows, the
queries beside it, the cache slots past it), so a row gets bit-identical results alone, in a batch, in a
speculative verify pass or inside a whole prompt (docs/model.md "Row invariance").

The C source is compiled once with the system C compiler (`cc -O3 -mavx2 -mfma -fopenmp`) into a per-user
cache directory ($JOCR_KERNEL_DIR, default ~/.cache/jocr/kernels) named by the source's hash, and called
through ctypes (which releases the GIL). Where that is impossible (no compiler, not x86-64 with AVX2 and FMA,
JOCR_KERNELS=0) `available()` is False and callers use torch's own products instead: same maths, slower,
and not row-invariant; `unavailable_reason()` then says why. The source ships in the wheel as package data
(pyproject.toml).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("linear.c")
# Outside a model pass (a layer called on its own), products of at most this many rows take the kernels.
MAX_ROWS = 8
# Inside a model pass (`positions_per_row`): every pass whose sequences have at most this many positions
# (decode steps, speculative verify passes, draft steps, short prompts) takes the kernels whatever its batch,
# so a row's results do not depend on the rows beside it or on k; longer passes (prompts, prefilled one
# request at a time by the engine) take torch's GEMM and SDPA, which are faster there (docs/model.md).
QUERY_MAX = 64
_positions: ContextVar[int | None] = ContextVar("jocr_positions_per_row", default=None)

PARALLEL_MIN = 1 << 18  # weights per call from which the work is split across torch's threads

_lib: ctypes.CDLL | None = None
_tried = False
_reason: str | None = None  # why the kernels are unavailable, once `available()` has tried


def _cpu_supports() -> bool:
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx2" in flags and " fma" in flags


def _build() -> ctypes.CDLL | None:
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    cache = Path(os.environ.get("JOCR_KERNEL_DIR", Path.home() / ".cache" / "jocr" / "kernels"))
    target = cache / f"linear-{digest}.so"
    if not target.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        compiler = os.environ.get("CC", "cc")
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            out = Path(tmp) / target.name
            flags = ["-O3", "-mavx2", "-mfma", "-fopenmp", "-shared", "-fPIC"]
            cmd = [compiler, *flags, str(SOURCE), "-o", str(out)]
            done = subprocess.run(cmd, capture_output=True, timeout=120)
            if done.returncode != 0:
                lines = done.stderr.decode(errors="replace").strip().splitlines()
                first = next((line for line in lines if "error" in line), lines[0] if lines else "")
                raise OSError(f"{compiler} failed on {SOURCE.name}: {first or done.returncode}")
            os.replace(out, target)  # atomic: concurrent builders never load a half-written file
    lib = ctypes.CDLL(str(target))
    for fn in (lib.linear_bf16, lib.linear_i8, lib.linear_f32):
        fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3 + [ctypes.c_int]
        fn.restype = None
    lib.attention_f32.argtypes = (
        [ctypes.c_void_p] + [ctypes.c_int64] * 4 + [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 3
        + [ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
    )  # fmt: skip
    lib.attention_f32.restype = None
    for fn in (lib.moe_bf16, lib.moe_i8, lib.moe_f32):
        fn.argtypes = (
            [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
            + [ctypes.c_void_p] * 14
            + [ctypes.c_int64]
            + [ctypes.c_void_p] * 5
            + [ctypes.c_int]
        )
        fn.restype = None
    return lib


def available() -> bool:
    """True when the kernels are built and loadable here (built on first call)."""
    global _lib, _tried, _reason
    if not _tried:
        _tried = True
        if os.environ.get("JOCR_KERNELS", "1") == "0":
            _reason = "turned off (JOCR_KERNELS=0)"
        elif not _cpu_supports():
            _reason = "this CPU is not x86-64 with AVX2 and FMA"
        else:
            try:
                _lib = _build()
            except (OSError, subprocess.SubprocessError) as exc:
                _lib, _reason = None, f"cannot build {SOURCE}: {exc}"
    return _lib is not None


def unavailable_reason() -> str | None:
    """None when `available()`, else one line saying why not (turned off, CPU, source or compiler)."""
    return None if available() else _reason


@contextmanager
def positions_per_row(positions: int) -> Iterator[None]:
    """Declare the pass being run: each of its sequences has `positions` positions (queries)."""
    token = _positions.set(positions)
    try:
        yield
    finally:
        _positions.reset(token)


def row_invariant(rows: int) -> bool:
    """Whether a product or attention over `rows` rows, now, takes the kernels: never with autograd or without
    the kernels; inside a model pass when its sequences have at most QUERY_MAX positions; outside one when it
    has at most MAX_ROWS rows."""
    if rows <= 0 or torch.is_grad_enabled() or not available():
        return False
    positions = _positions.get()
    return positions <= QUERY_MAX if positions is not None else rows <= MAX_ROWS


def linear(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
    """x (M, K) float32 contiguous, weight (N, K) bf16, fp32 or int8 contiguous, scale (N,) float32 for int8
    -> (M, N) float32, any M. K must be a multiple of 16; call only when `available()`."""
    m, k = x.shape
    n = weight.shape[0]
    if x.dtype != torch.float32 or not x.is_contiguous() or weight.shape[1] != k or k % 16:
        raise ValueError(f"kernels.linear: needs float32 contiguous x with K % 16 == 0, got {tuple(x.shape)}")
    y = torch.empty(m, n, dtype=torch.float32)
    # One thread for small matrices: waking a second one costs more than it saves (and a descheduled worker
    # on a busy machine stalls the whole call).
    threads = torch.get_num_threads() if m * n * k >= PARALLEL_MIN else 1
    if weight.dtype == torch.bfloat16:
        _lib.linear_bf16(x.data_ptr(), weight.data_ptr(), None, y.data_ptr(), m, n, k, threads)
    elif weight.dtype == torch.float32:
        _lib.linear_f32(x.data_ptr(), weight.data_ptr(), None, y.data_ptr(), m, n, k, threads)
    else:
        _lib.linear_i8(x.data_ptr(), weight.data_ptr(), scale.data_ptr(), y.data_ptr(), m, n, k, threads)
    return y


class ExpertTable:
    """Pointers to one MoE layer's expert weights, as `moe` takes them.

    gate, up: E tensors (I, D); down: E tensors (D, I), all bf16, all fp32 or all int8 (then with per-row
    fp32 scales); shared: the shared experts' (gate, up, down) weights and scales, or None. The table keeps
    the tensors it points into (so the pointers stay valid) and rebuilds its pointers when copied or
    unpickled."""

    def __init__(self, gate, up, down, scales=None, shared=None, shared_scales=None):
        self.tensors = (list(gate), list(up), list(down), scales, shared, shared_scales)
        self._pointers()

    def _pointers(self) -> None:
        gate, up, down, scales, shared, shared_scales = self.tensors

        def table(ts):
            return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)

        self.dtype = gate[0].dtype
        self.num_experts, (self.inter, self.hidden) = len(gate), gate[0].shape
        self.ptrs = [table(ts) for ts in (gate, up, down)]
        self.scale_ptrs = [table(ts) for ts in scales] if scales is not None else None
        self.shared_inter = shared[0].shape[0] if shared is not None else 0

    def __getstate__(self):
        return {"tensors": self.tensors}

    def __setstate__(self, state) -> None:
        self.tensors = state["tensors"]
        self._pointers()


def moe(x: torch.Tensor, weights: torch.Tensor, indices: torch.Tensor, table: ExpertTable) -> torch.Tensor:
    """x (N, D) float32 contiguous, weights (N, k) float32, indices (N, k) int64 -> (N, D) float32: the sum
    over slots of weight x chosen expert's SwiGLU output, plus the shared experts' output. Each chosen expert
    runs once on all the rows that chose it. Call only when `available()`; D and I multiples of 16."""
    n, d = x.shape
    k = indices.shape[1]
    weights = weights.float().contiguous()
    indices = indices.contiguous()
    inter, pairs = table.inter, n * k
    xs = torch.empty(pairs, d, dtype=torch.float32)
    ys = torch.empty(pairs, d, dtype=torch.float32)
    width = pairs * inter + n * table.shared_inter  # each MLP its own scratch (linear.c)
    g = torch.empty(width, dtype=torch.float32)
    u = torch.empty(width, dtype=torch.float32)
    out = torch.empty(n, d, dtype=torch.float32)
    _, _, _, _, shared, shared_scales = table.tensors
    sh = [t.data_ptr() for t in shared] if shared is not None else [None] * 3
    ssh = [t.data_ptr() for t in shared_scales] if shared_scales is not None else [None] * 3
    sc = [p.data_ptr() for p in table.scale_ptrs] if table.scale_ptrs is not None else [None] * 3
    fn = {torch.int8: _lib.moe_i8, torch.float32: _lib.moe_f32}.get(table.dtype, _lib.moe_bf16)
    fn(
        x.data_ptr(), n, d, inter, table.num_experts, k, indices.data_ptr(), weights.data_ptr(),
        *[p.data_ptr() for p in table.ptrs], *sc, *sh, *ssh, table.shared_inter,
        xs.data_ptr(), ys.data_ptr(), g.data_ptr(), u.data_ptr(), out.data_ptr(), torch.get_num_threads(),
    )  # fmt: skip
    return out


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, visible: torch.Tensor, scale: float
) -> torch.Tensor:
    """Attention with each query's result independent of the pass's shape (linear.c `attention_f32`).

    q (B, H, T, D) float32; k, v (B, H_kv, S, D) float32 whose last two dims are contiguous (a slice of a
    KV cache's rows is); visible (B, T) int64: query (b, t) sees key slots 0 .. visible[b, t] - 1.
    Returns (B, T, H, D) float32. D must be a multiple of 16 and H a multiple of H_kv."""
    b, h, t, d = q.shape
    hkv = k.shape[1]
    if not q.dtype == k.dtype == v.dtype == torch.float32 or visible.dtype != torch.int64:
        raise TypeError("kernels.attention takes float32 q, k, v and int64 visible counts")
    if d % 16 or h % hkv or k.shape[3] != d or visible.shape != (b, t):
        raise ValueError(f"kernels.attention: unsupported shapes q {tuple(q.shape)}, k {tuple(k.shape)}")
    q = q.contiguous()
    visible = visible.contiguous()
    if k.stride(3) != 1 or k.stride(2) != d or v.stride() != k.stride():
        k, v = k.contiguous(), v.contiguous()
    out = torch.empty(b, t, h, d, dtype=torch.float32)
    threads = torch.get_num_threads() if b * h * t > 1 else 1
    _lib.attention_f32(
        q.data_ptr(), b, h, t, d, k.data_ptr(), v.data_ptr(), hkv, k.stride(0), k.stride(1),
        visible.data_ptr(), scale, out.data_ptr(), threads,
    )  # fmt: skip
    return out
