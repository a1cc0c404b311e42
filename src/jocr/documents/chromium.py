"""Chromium's processes below this one (browser, renderers, utilities), read from Linux /proc: how the
renderer finds every process of a browser it must kill, and how tests and benchmarks count them.
"""

from __future__ import annotations

import os


def _process_table() -> tuple[dict[int, int], dict[int, str]]:
    """(pid -> parent pid, pid -> command line) of every process, from Linux /proc; empty elsewhere."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return parents, commands
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                command = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1:
            parents[int(entry)] = int(fields[1])
            commands[int(entry)] = command
    return parents, commands


def chromium_commands(root: int | None = None) -> dict[int, str]:
    """pid -> command line of the Chromium processes below process `root` (this one by default)."""
    root = os.getpid() if root is None else root
    parents, commands = _process_table()
    found: dict[int, str] = {}
    for pid, command in commands.items():
        program = os.path.basename(command.split(" ", 1)[0])
        if "chrom" not in program and "headless_shell" not in program:
            continue
        ancestor, hops = parents.get(pid), 0
        while ancestor not in (None, 0, 1, root) and hops < 64:
            ancestor, hops = parents.get(ancestor), hops + 1
        if ancestor == root:
            found[pid] = command
    return found


def chromium_processes(root: int | None = None) -> dict[int, str]:
    """Chromium processes below process `root` (this one by default): pid -> type ("browser", "renderer",
    "zygote", "utility", ...). Read from Linux /proc; {} elsewhere."""
    return {
        pid: command.split("--type=", 1)[1].split(" ", 1)[0] if "--type=" in command else "browser"
        for pid, command in chromium_commands(root).items()
    }
