"""Regenerate the sample pages shown in docs/synth.md (validation-split seeds, so never training pages).

    .venv/bin/python docs/synth-samples/make_samples.py

Each sample is `<profile>-<offset>.png` with its ground truth `<profile>-<offset>.md` and unit tests
`<profile>-<offset>.jsonl`. Full pages (`page`, `dense`) are stored at half size as 64-colour PNGs to keep
the folder small; the 384x384 profiles are stored as generated.
"""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from jocr.synth import generate_page, global_seed

HERE = Path(__file__).resolve().parent


_TAKEN: set[tuple[str, int]] = set()


def pick(profile: str, want, limit: int = 200) -> int:
    """The first validation offset not shown yet whose page satisfies `want(page)`."""
    for offset in range(limit):
        if (profile, offset) not in _TAKEN and want(generate_page(global_seed("val", offset), profile)):
            _TAKEN.add((profile, offset))
            return offset
    raise RuntimeError(f"no {profile} page matches in {limit} seeds")


def has(kind: str):
    return lambda page: any(b["category"] == kind for b in page.meta["blocks"])


def main() -> None:
    choices: list[tuple[str, int, bool]] = [
        ("cpu-lines", pick("cpu-lines", lambda p: not has("table")(p)), False),
        ("cpu-lines", pick("cpu-lines", has("table")), False),
        ("cpu-lines", pick("cpu-lines", has("formula")), False),
        ("cpu-small", pick("cpu-small", has("table")), False),
        ("cpu-small", pick("cpu-small", lambda p: "$" in p.markdown and has("paragraph")(p)), False),
        ("cpu-small", pick("cpu-small", has("list")), True),
        ("page", pick("page", lambda p: p.meta["columns"] == 2 and p.meta["language"] == "en"), False),
        ("page", pick("page", lambda p: p.meta["language"] == "zh"), False),
        ("dense", pick("dense", lambda p: "rowspan" in p.markdown or "colspan" in p.markdown), False),
    ]
    for pattern in ("*.png", "*.md", "*.jsonl"):
        for old in HERE.glob(pattern):
            old.unlink()
    for profile, offset, degraded in choices:
        page = generate_page(global_seed("val", offset), profile, degrade=0.7 if degraded else False)
        stem = f"{profile}-{offset}" + ("-degraded" if degraded else "")
        image = page.image
        if max(image.size) > 512:
            image = image.resize((image.width // 2, image.height // 2), Image.LANCZOS)
            image = image.quantize(colors=64, method=Image.Quantize.MEDIANCUT)
        image.save(HERE / f"{stem}.png", optimize=True)
        (HERE / f"{stem}.md").write_text(page.markdown + "\n", encoding="utf-8")
        (HERE / f"{stem}.jsonl").write_text(
            "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in page.tests), encoding="utf-8"
        )
        print(stem, page.image.size, len(page.markdown), "chars,", len(page.tests), "tests")


if __name__ == "__main__":
    main()
