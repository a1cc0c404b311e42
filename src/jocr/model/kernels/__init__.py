"""Decode-time linear kernels for CPUs: fp32 activations times bf16 or int8 weights (see linear.c for why).

The C source is compiled once with the system C compiler (`cc -O3 -mavx2 -mfma -fopenmp`) into a per-user
cache directory ($JOCR_KERNEL_DIR, default ~/.cache/jocr/kernels) named by the source's hash, and called
through ctypes (which releases the GIL). Where that is impossible (no compiler, not x86-64 with AVX2 and FMA,
JOCR_KERNELS=0) `available()` is False and callers use torch's own products instead: same maths, slower.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import subprocess
import tempfile
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("linear.c")
MAX_ROWS = 8  # above this many rows torch's fp32 GEMM on upcast weights is faster (measured, docs/model.md)

PARALLEL_MIN = 1 << 18  # weights per call from which the work is split across torch's threads

_lib: ctypes.CDLL | None = None
_tried = False


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
                return None
            os.replace(out, target)  # atomic: concurrent builders never load a half-written file
    lib = ctypes.CDLL(str(target))
    for fn in (lib.linear_bf16, lib.linear_i8):
        fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3 + [ctypes.c_int]
        fn.restype = None
    return lib


def available() -> bool:
    """True when the kernels are built and loadable here (built on first call)."""
    global _lib, _tried
    if not _tried:
        _tried = True
        if os.environ.get("JOCR_KERNELS", "1") != "0" and _cpu_supports():
            try:
                _lib = _build()
            except (OSError, subprocess.SubprocessError):
                _lib = None
    return _lib is not None


def linear(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
    """x (M, K) float32 contiguous, weight (N, K) bf16 or int8 contiguous, scale (N,) float32 for int8 ->
    (M, N) float32. K must be a multiple of 16; call only when `available()`."""
    m, k = x.shape
    n = weight.shape[0]
    y = torch.empty(m, n, dtype=torch.float32)
    # One thread for small matrices: waking a second one costs more than it saves (and a descheduled worker
    # on a busy machine stalls the whole call).
    threads = torch.get_num_threads() if n * k >= PARALLEL_MIN else 1
    if weight.dtype == torch.bfloat16:
        _lib.linear_bf16(x.data_ptr(), weight.data_ptr(), None, y.data_ptr(), m, n, k, threads)
    else:
        _lib.linear_i8(x.data_ptr(), weight.data_ptr(), scale.data_ptr(), y.data_ptr(), m, n, k, threads)
    return y
