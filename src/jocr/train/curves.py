"""Run logs (one JSON object per line) and the loss / reward curves drawn from them as PNG files."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path


class RunLog:
    """Appends records to `<run_dir>/log.jsonl`; a resumed run keeps appending to the same file."""

    def __init__(self, run_dir: str | Path, name: str = "log.jsonl") -> None:
        self.path = Path(run_dir) / name
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, **record) -> None:
        record.setdefault("time", round(time.time(), 3))
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def read_log(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by a killed process; the rest of the log is still good
    return records


def _smooth(values: list[float], window: int) -> list[float]:
    out, acc = [], []
    for v in values:
        acc.append(v)
        if len(acc) > window:
            acc.pop(0)
        out.append(sum(acc) / len(acc))
    return out


def plot_curves(
    log_path: str | Path, out_png: str | Path, keys: list[str], x_key: str = "step"
) -> Path | None:
    """Draw one panel per key present in the log (raw and smoothed); returns the PNG path or None."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_log(log_path)
    series = {}
    for k in keys:
        pts = [
            (r[x_key], r[k])
            for r in records
            if k in r and x_key in r and isinstance(r[k], (int, float)) and math.isfinite(r[k])
        ]
        if pts:
            series[k] = pts
    if not series:
        return None
    fig, axes = plt.subplots(len(series), 1, figsize=(7, 2.6 * len(series)), squeeze=False)
    for ax, (k, pts) in zip(axes[:, 0], series.items()):
        xs, ys = zip(*pts)
        ax.plot(xs, ys, alpha=0.35, linewidth=0.8, label=k)
        ax.plot(xs, _smooth(list(ys), max(1, len(ys) // 30)), linewidth=1.6, label=f"{k} (smoothed)")
        ax.set_xlabel(x_key)
        ax.set_ylabel(k)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return out_png
