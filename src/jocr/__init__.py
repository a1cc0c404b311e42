"""jocr: document pages to clean Markdown (tables as HTML, formulas as LaTeX) with a compact
vision-language model (DeepEncoder + MoE decoder + FastMTP draft head)."""

from __future__ import annotations

__version__ = "0.1.0"

# Heavy modules load on first use so that `import jocr` and `jocr --help` stay fast.
_LAZY = {
    "OCRModel": ("jocr.model", "OCRModel"),
    "OCRConfig": ("jocr.config", "OCRConfig"),
    "parse": ("jocr.pipeline", "parse"),
    "ask": ("jocr.pipeline", "ask"),
    "extract": ("jocr.pipeline", "extract"),
    "batch": ("jocr.bulk", "batch"),
    "load_model": ("jocr.pipeline", "load_model"),
    "Document": ("jocr.pipeline", "Document"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        return getattr(importlib.import_module(module_name), attr)
    raise AttributeError(f"module 'jocr' has no attribute {name!r}")


__all__ = list(_LAZY) + ["__version__"]
