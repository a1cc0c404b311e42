"""jocr's own modules as flat, jocr-free files for a Hugging Face repository: the one source of the
exported code.

An export must run where jocr is not installed, so `jocr export hf` copies the modules the exported entry
points need, at export time, from this installed package: the entry modules and every jocr module they
import (at any depth, lazy imports in functions included). Each becomes one flat file in the repository root
(`jocr.model.ocr` -> `jocr_model_ocr.py`; the entry points get the names Transformers and the vLLM recipe
look for). Only import statements and `module:Class` strings that name a bundled module change: every
`from jocr.x import y` becomes

    try:
        from .jocr_x import y        # loaded by Transformers' trust_remote_code as a package member
    except ImportError:
        if __package__:
            raise                    # a real import error inside the package: not hidden
        from jocr_x import y         # imported from a directory on sys.path (the vLLM recipe)

Transformers copies the files named by relative imports next to the entry file and checks only the absolute
imports outside `try` blocks (transformers/dynamic_module_utils.py `get_relative_imports`, `get_imports`), so
the same files serve both. Anything a bundled module imports beyond the standard library and ALLOWED_PACKAGES
is an error at export time, naming the module, with two exceptions, both for imports inside a function
(lazy, run only on the path that needs them):
- OPTIONAL_PACKAGES (pypdfium2, which reads PDF pages; cv2, which finds table rules in pixels and falls
  back to numpy without it; rapid_layout, whose layout model groups OCR'd lines into regions and is skipped
  without it; rapid_table, whose structure model reads image tables the rules find none in, the rules'
  answer standing without it) are imported where installed; without pypdfium2 only that path fails, with
  Python's own ImportError. Entry files never import them, so Transformers, which
  checks the entry file's imports before loading it, does not require them.
- LEFT_OUT jocr modules (URL fetching) are not bundled: their import becomes `raise ImportError(...)`
  saying what is not part of an exported model.
A module-level import of either is an error at export time.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# What an export may need at run time (torch, transformers, safetensors, tokenizers, Pillow, and numpy, which
# torch and transformers bring). vLLM is imported only by the vLLM recipe's modules (VLLM_ONLY), never by
# the Transformers path.
ALLOWED_PACKAGES = frozenset({"torch", "transformers", "safetensors", "tokenizers", "PIL", "numpy"})
VLLM_PACKAGES = frozenset({"vllm"})
# Imported inside functions only, where installed: a PDF page's pixels and text layer (pypdfium2), table
# rules in pixels (cv2, numpy without it).
OPTIONAL_PACKAGES = frozenset({"pypdfium2", "cv2", "rapid_layout", "rapid_table"})
# jocr modules an export leaves out (imported inside functions only), and what needs them.
LEFT_OUT = {
    "jocr.documents.fetch": "URL inputs (fetching needs jocr and httpx)",
    "jocr.lines.ocr": "OCR of pages without a text layer (needs jocr and an OCR engine)",
}

# Entry modules and the file names the exported repository gives them.
ENTRY_FILES = {
    "jocr.integrations.hf.configuration": "configuration_jocr.py",
    "jocr.integrations.hf.modeling": "modeling_jocr.py",
    "jocr.integrations.hf.processing": "processing_jocr.py",
    "jocr.integrations.hf.recipe": "deepseek_ocr_mtp.py",
}
# Modules that may import vLLM (reached from the vLLM recipe only).
VLLM_ONLY = frozenset(
    {
        "jocr.integrations.hf.recipe",
        "jocr.integrations.vllm",
        "jocr.integrations.vllm_model",
        "jocr.integrations.vllm_mtp",
        "jocr.integrations.vllm_guard",
    }
)


# A `"jocr.module:Class"` string: a class vLLM imports by name (e.g. the n-gram ban's logits processor).
_MODULE_STRING = re.compile(r"""(["'])(jocr(?:\.\w+)+):""")


class BundleError(ValueError):
    """A jocr module that cannot be bundled (an import outside the allowed packages, an unsupported form)."""


@dataclass
class BundledFile:
    module: str  # dotted jocr module name
    name: str  # file name in the repository
    source: str  # rewritten source


def flat_name(module: str) -> str:
    """The repository file of a jocr module: an entry point's own name, else the dotted name, underscored."""
    return ENTRY_FILES.get(module) or module.replace(".", "_") + ".py"


def _module_path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise BundleError(f"cannot find jocr module {module}")
    return Path(spec.origin)


def _is_package(module: str) -> bool:
    return _module_path(module).name == "__init__.py"


def _resolve(node: ast.ImportFrom, module: str) -> str | None:
    """The absolute module an ImportFrom names (relative imports resolved against `module`)."""
    if node.level == 0:
        return node.module
    parts = module.split(".")
    base = parts if _is_package(module) else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top(name: str) -> str:
    return name.split(".")[0]


def _lazy_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside a function body (run only when the function is called)."""
    lazy: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for child in ast.walk(node):
                if child is not node:
                    lazy.add(id(child))
    return lazy


def _check_package(module: str, name: str, lazy: bool, form: str) -> None:
    top = _top(name)
    if top in sys.stdlib_module_names or top == "__future__":
        return
    allowed = ALLOWED_PACKAGES | (VLLM_PACKAGES if module in VLLM_ONLY else frozenset())
    if top in allowed or (lazy and top in OPTIONAL_PACKAGES):
        return
    where = (
        " at module level (import it inside the function that needs it)" if top in OPTIONAL_PACKAGES else ""
    )
    raise BundleError(f"{module}: {form} {name}{where}, which an exported model may not need")


def _jocr_imports(module: str, tree: ast.AST) -> list[tuple[ast.ImportFrom, str]]:
    """(node, absolute jocr module) for every `from jocr... import` in the tree (LEFT_OUT modules included:
    `_rewrite` turns those into errors); other imports are checked against the packages allowed."""
    found = []
    lazy = _lazy_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _top(alias.name) == "jocr":
                    raise BundleError(
                        f"{module}: `import {alias.name}` cannot be bundled; use `from ... import`"
                    )
                _check_package(module, alias.name, id(node) in lazy, "imports")
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module)
            if target is None:
                continue
            if _top(target) != "jocr":
                _check_package(module, target, id(node) in lazy, "imports")
                continue
            if target in LEFT_OUT and id(node) not in lazy:
                raise BundleError(f"{module}: imports {target} at module level; an export leaves it out")
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if importlib.util.find_spec(target) is not None and _is_package(target):
                    if importlib.util.find_spec(sub) is not None:
                        raise BundleError(f"{module}: `from {target} import {alias.name}` imports a module")
            found.append((node, target))
    return found


def _rewrite(module: str, source: str, closure: set[str]) -> str:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node, target in _jocr_imports(module, tree):
        names = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in node.names)
        flat = flat_name(target)[:-3]
        pad = " " * node.col_offset
        if target in LEFT_OUT:
            message = f"{LEFT_OUT[target]} are not part of an exported model ({target} is left out)"
            edits.append((node.lineno - 1, node.end_lineno, f"{pad}raise ImportError({message!r})\n"))
            continue
        block = (
            f"{pad}try:\n{pad}    from .{flat} import {names}\n{pad}except ImportError:\n"
            f"{pad}    if __package__:\n{pad}        raise\n{pad}    from {flat} import {names}\n"
        )
        edits.append((node.lineno - 1, node.end_lineno, block))
    for start, end, block in sorted(edits, reverse=True):
        lines[start:end] = [block]
    text = "".join(lines)

    # `module:Class` strings that vLLM resolves with importlib (e.g. the logits processor of the n-gram ban).
    def swap(match: re.Match) -> str:
        name = match.group(2)
        return match.group(1) + (flat_name(name)[:-3] if name in closure else name) + ":"

    return _MODULE_STRING.sub(swap, text)


def closure(entries: list[str]) -> list[str]:
    """The entry modules and every jocr module they import, in a stable order."""
    seen: list[str] = []
    todo = list(entries)
    while todo:
        module = todo.pop(0)
        if module in seen:
            continue
        seen.append(module)
        source = _module_path(module).read_text()
        targets = [t for _, t in _jocr_imports(module, ast.parse(source)) if t not in LEFT_OUT]
        targets += [m.group(2) for m in _MODULE_STRING.finditer(source)]
        todo.extend(t for t in targets if t not in seen)
    return seen


def bundle(entries: list[str] | None = None) -> list[BundledFile]:
    """The rewritten files for `entries` (default: every exported entry point) and their jocr imports."""
    modules = closure(list(entries or ENTRY_FILES))
    names = set(modules)
    files = []
    for module in modules:
        source = _module_path(module).read_text()
        header = (
            f"# Generated by `jocr export hf` from jocr's {module} (jocr does not need to be installed).\n"
        )
        files.append(BundledFile(module, flat_name(module), header + _rewrite(module, source, names)))
    return files
