"""The package's import graph has no circles: every `import` of a jocr module, at the top of a file or
inside a function, is an arrow; the test fails on any strongly connected group of two or more modules.
Layers (docs/architecture.md) only point down, so a circle is always a mistake."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in SRC.joinpath("jocr").rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import sub` names a submodule when one exists, else an attribute of pkg.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for target in targets:
                while target and target not in files:  # `import jocr.a.b` loads jocr.a.b (and its parents)
                    target = target.rpartition(".")[0]
                if target and target != name and target.startswith("jocr"):
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def fresh_import_graph() -> dict[str, set[str]]:
    """`import_graph()` computed in a new interpreter: CPython 3.11's AST constructor keeps one recursion
    counter for all threads, so `ast.parse` here can fail with "recursion depth mismatch" while threads
    that earlier tests started are still winding down (python/cpython#106905)."""
    code = (
        "import json, runpy, sys; graph = runpy.run_path(sys.argv[1])['import_graph'](); "
        "print(json.dumps({k: sorted(v) for k, v in graph.items()}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, __file__], capture_output=True, text=True, check=True, timeout=120
    )
    return {k: set(v) for k, v in json.loads(out.stdout).items()}


def test_the_graph_sees_function_level_and_relative_imports():
    graph = fresh_import_graph()
    assert "jocr.model.weights" in graph["jocr.model.ocr"]  # imported inside from_pretrained
    assert "jocr.layout.request" in graph["jocr.pipeline.stream"]


def test_no_import_circles():
    assert circles(fresh_import_graph()) == []
