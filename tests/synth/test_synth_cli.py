"""`jocr synth`: folder layout, determinism across runs and worker counts, one-line errors."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from jocr.checks import load_tests
from jocr.cli import main


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_layout_and_same_bytes(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["synth", str(a), "--pages", "4", "--seed", "7", "--split", "val", "--degrade"]) == 0
    assert (
        main(
            ["synth", str(b), "--pages", "4", "--seed", "7", "--split", "val", "--degrade", "--workers", "2"]
        )
        == 0
    )
    assert tree_digest(a) == tree_digest(b)
    manifest = json.loads((a / "manifest.json").read_text())
    assert manifest["split"] == "val" and manifest["global_seeds"] == [1_000_000_007, 1_000_000_010]
    names = sorted(manifest["digests"])
    assert len(names) == 4
    for name in names:
        for path in (
            f"pdfs/{name}.png",
            f"clean/{name}.png",
            f"gt/{name}_pg1_repeat1.md",
            f"meta/{name}.json",
        ):
            assert (a / path).is_file(), path
    tests = load_tests(a / "cpu-small_val.jsonl")
    assert {t.pdf for t in tests} == {f"{n}.png" for n in names}
    assert len(tests) == manifest["tests"]


def test_refuses_to_mix_runs_and_force_overwrites(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["synth", str(out), "--pages", "1"]) == 0
    assert main(["synth", str(out), "--pages", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already holds generated pages" in err[0]
    assert main(["synth", str(out), "--pages", "1", "--seed", "3", "--force"]) == 0
    file_path = tmp_path / "file"
    file_path.write_text("x")
    assert main(["synth", str(file_path), "--pages", "1"]) == 2


@pytest.mark.parametrize(
    "args",
    [
        ["--pages", "0"],
        ["--seed", "-1"],
        ["--profile", "poster"],
        ["--split", "dev"],
        ["--degrade", "2"],
        ["--ocr-copies", "0"],
        ["--ocr-copies", "2", "--ocr", "easyocr"],
    ],
)
def test_bad_arguments_exit_2_without_traceback(tmp_path, args):
    proc = subprocess.run(
        [sys.executable, "-m", "jocr", "synth", str(tmp_path / "o"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "error:" in proc.stderr


def test_ocr_copies_of_a_folder_without_vector_pages_is_one_line(tmp_path, capsys):
    assert main(["synth", str(tmp_path), "--ocr-copies", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no pdfs/*.pdf" in err[0]


def test_seed_range_past_the_split_is_an_error(tmp_path, capsys):
    assert main(["synth", str(tmp_path / "o"), "--pages", "2", "--seed", str(10**9 - 1)]) == 2
    assert "split's range" in capsys.readouterr().err


def test_pdf_pages_render_back_to_the_image_size(tmp_path):
    import pypdfium2 as pdfium

    from jocr.synth import generate_page, global_seed

    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert main(["synth", str(out), "--pages", "2", "--profile", "page", "--format", "pdf"]) == 0
    assert tree_digest(a) == tree_digest(b)
    tests = load_tests(a / "page_train.jsonl")
    assert {t.pdf for t in tests} == {f"page_{global_seed('train', i):010d}.pdf" for i in range(2)}
    page = generate_page(global_seed("train", 0), "page")
    doc = pdfium.PdfDocument(str(a / "pdfs" / f"{page.meta['name']}.pdf"))
    rendered = doc[0].render(scale=144 / 72).to_pil()
    assert rendered.size == page.image.size
    doc.close()
