"""`jocr batch` on a local Ray instance (2 CPUs) with a tiny random checkpoint: the same outputs as `jocr
parse`, failures recorded while the other documents finish, and a job killed mid-way that resumes without
reading its finished pages again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pdf_fixtures import encrypted_pdf, text_pdf
from PIL import Image

from jocr.cli import main

MAX_TOKENS = 6


def _manifest(out: Path) -> list[dict]:
    return pq.read_table(out / "_manifest").to_pylist()


def _written(out: Path) -> set[str]:
    """Documents the manifest records as written so far (none while no part is complete)."""
    try:
        rows = _manifest(out)
    except (OSError, ValueError):  # no part yet, or a part still being written
        return set()
    return {r["doc_id"] for r in rows if r["page"] == 0 and r["status"] == "written"}


def test_batch_equals_parse_and_isolates_bad_documents(tmp_path, model_dir, ray_local, capsys):
    src = tmp_path / "in"
    src.mkdir()
    (src / "report.pdf").write_bytes(text_pdf(["one", "two", "three"]))
    (src / "memo.pdf").write_bytes(text_pdf(["memo"]))
    frames = [Image.new("L", (500, 700), 255), Image.new("L", (500, 700), 0)]
    frames[1].paste(255, (50, 50, 450, 120))  # ink on the second frame only
    frames[0].save(src / "scan.tiff", save_all=True, append_images=frames[1:])
    (src / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj garbage" * 4)
    (src / "locked.pdf").write_bytes(encrypted_pdf("pw"))
    common = ["-q", "--max-tokens", str(MAX_TOKENS), "--model", str(model_dir), "--format", "json"]

    code = main(["parse", str(src), "-o", str(tmp_path / "parse"), *common])
    parse_err = capsys.readouterr().err
    assert code == 1, parse_err  # the two bad inputs
    # Greedy only, as `jocr parse` reads: a retry samples with a seed drawn from the document's path, which
    # is a new temporary folder each run (the retry policy has its own test in test_stages.py).
    batch_args = ["--batch-size", "4", "--retries", "0"]
    code = main(["batch", str(src), "-o", str(tmp_path / "batch"), *batch_args, *common])
    err = capsys.readouterr().err
    assert code == 1, err

    good = ["memo", "report", "scan"]
    assert sorted(p.name for p in (tmp_path / "batch").glob("*.md")) == [f"{n}.md" for n in good]
    for name in good:
        assert (tmp_path / "batch" / f"{name}.md").read_text() == (
            tmp_path / "parse" / f"{name}.md"
        ).read_text()
        ours = json.loads((tmp_path / "batch" / f"{name}.json").read_text())
        theirs = json.loads((tmp_path / "parse" / f"{name}.json").read_text())
        for page in ours["pages"] + theirs["pages"]:
            assert set(page.pop("timings")) <= {
                "render_s",
                "preprocess_s",
                "generate_s",
                "read_s",
                "figures_s",
                "tables_s",
            }
        assert ours == theirs

    rows = _manifest(tmp_path / "batch")
    docs = {Path(r["doc_id"]).name: r for r in rows if r["page"] == 0}
    assert {n: r["status"] for n, r in docs.items()} == {
        "memo.pdf": "written",
        "report.pdf": "written",
        "scan.tiff": "written",
        "corrupt.pdf": "failed",
        "locked.pdf": "failed",
    }
    assert "corrupt or unreadable PDF" in docs["corrupt.pdf"]["error"]
    assert "encrypted" in docs["locked.pdf"]["error"]
    pages = [r for r in rows if r["page"] >= 1]
    assert len(pages) == 6
    scan = sorted((r["page"], r["status"]) for r in pages if r["doc_id"].endswith("scan.tiff"))
    assert scan == [(1, "blank"), (2, "ok")]
    # Every readable page hit max tokens, and with retries off that greedy reading is the page's result.
    read = [r for r in pages if r["status"] != "blank"]
    assert {(r["status"], r["finish_reason"], r["tokens"], r["attempts"]) for r in read} == {
        ("ok", "length", MAX_TOKENS, 1)
    }
    assert all(r["seconds"] > 0 and r["error"] is None for r in read)
    assert "corrupt.pdf: corrupt or unreadable PDF" in err and "locked.pdf" in err
    assert "3 of 5 document(s) done, 2 failed, 0 skipped" in err and "6 page(s) read" in err
    assert "pages/s" in err


def test_killed_job_resumes_without_redoing_finished_pages(tmp_path, model_dir, ray_local):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(4):
        (src / f"doc{i}.pdf").write_bytes(text_pdf([f"page {i} a", f"page {i} b"]))
    out = tmp_path / "out"
    args = ["--model", str(model_dir), "--max-tokens", "24", "--batch-size", "1", "--retries", "0"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    # A second driver joins this test session's Ray instance and is killed once a document is written.
    proc = subprocess.Popen(
        [sys.executable, "-m", "jocr", "batch", str(src), "-o", str(out), "-q", "--address", "auto", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    try:
        # Killed once the manifest records a written document (its Markdown file lands before its row).
        while time.monotonic() < deadline and proc.poll() is None:
            if _written(out):
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
    first = _manifest(out)
    written = _written(out)
    assert 1 <= len(written) < 4, stderr.decode()[-2000:]
    done_pages = {(r["doc_id"], r["page"]) for r in first if r["page"] >= 1}
    # A document whose Markdown landed just before the kill, but not its manifest row, is written again:
    # the manifest, not the file, says what is done.
    mtimes = {d: (out / f"{Path(d).stem}.md").stat().st_mtime_ns for d in written}

    import jocr

    # The same job as the CLI's: its options, figures cut as the CLI cuts them by default.
    summary = jocr.batch(
        [str(src)], str(out), model=str(model_dir), max_tokens=24, batch_size=1, retries=0, figures="files"
    )
    assert (summary.done, summary.failed, summary.skipped) == (4 - len(written), 0, len(written))
    rows = _manifest(out)
    assert sorted(r["status"] for r in rows if r["page"] == 0) == ["written"] * 4
    second_run = {r["run"] for r in rows if r["page"] == 0 and r["doc_id"] not in written}
    assert len(second_run) == 1
    # Pages read before the kill were not read again: their rows are the first run's.
    redone = {(r["doc_id"], r["page"]) for r in rows if r["page"] >= 1 and r["run"] in second_run}
    assert not redone & done_pages
    assert len({(r["doc_id"], r["page"]) for r in rows if r["page"] >= 1}) == 8
    assert summary.pages == 8 - len(done_pages)
    for doc_id, mtime in mtimes.items():
        assert (out / f"{Path(doc_id).stem}.md").stat().st_mtime_ns == mtime
    assert all((out / f"doc{i}.md").read_text().count("<--- Page Split --->") == 1 for i in range(4))


def test_a_new_model_at_the_same_path_reads_pages_afresh_with_a_note(tmp_path, model_dir, ray_local, capsys):
    import shutil

    import jocr
    from jocr.config import tiny_config
    from jocr.model import OCRModel

    src = tmp_path / "in"
    src.mkdir()
    for i in range(2):
        (src / f"doc{i}.pdf").write_bytes(text_pdf([f"page {i} a", f"page {i} b"]))
    model = tmp_path / "model"
    shutil.copytree(model_dir, model)
    out = tmp_path / "out"
    options = dict(model=str(model), max_tokens=MAX_TOKENS, retries=0, quiet=True)

    first = jocr.batch([str(src)], str(out), **options)
    assert (first.done, first.pages, first.notes) == (2, 4, [])
    again = jocr.batch([str(src)], str(out), **options)
    assert (again.skipped, again.pages, again.notes) == (2, 0, [])
    capsys.readouterr()

    # Retrained in place: the same path, shape and size, other weights.
    OCRModel(tiny_config()).init_weights(seed=1).save_pretrained(model)
    renewed = jocr.batch([str(src)], str(out), **options)
    note = (
        "4 page(s) in the manifest were read with another model, jocr version or page options: "
        "reading them afresh"
    )
    assert renewed.notes == [note]
    assert f"jocr batch: {note}\n" in capsys.readouterr().err
    assert (renewed.done, renewed.skipped, renewed.pages) == (2, 0, 4)
    rows = _manifest(out)
    assert len({r["config"] for r in rows}) == 2
    latest = jocr.batch([str(src)], str(out), **options)
    assert (latest.skipped, latest.pages, latest.notes) == (2, 0, [])


def test_batch_without_ray_says_how_to_install(tmp_path, model_dir, monkeypatch, capsys):
    (tmp_path / "a.pdf").write_bytes(text_pdf(["a"]))
    monkeypatch.setitem(sys.modules, "ray", None)
    code = main(["batch", str(tmp_path / "a.pdf"), "-o", str(tmp_path / "out"), "--model", str(model_dir)])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'jocr[batch]'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--actors", "0"], "--actors must be >= 1"),
        (["--limit", "0"], "--limit must be >= 1"),
        (["--retries", "9"], "--retries must be 0 to 3"),
        (["--pages", "x"], "--pages"),
    ],
)
def test_bad_flags_are_one_line_errors(tmp_path, args, message, capsys):
    code = main(["batch", str(tmp_path), "-o", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_a_bad_anchor_mode_is_refused_before_the_job_starts(tmp_path):
    from jocr.bulk import BatchConfig, BatchError, PageSettings, run_batch

    config = BatchConfig(
        inputs=[str(tmp_path)], output=str(tmp_path / "out"), settings=PageSettings(anchor="sometimes")
    )
    with pytest.raises(BatchError, match="^--anchor must be auto, on or off, not 'sometimes'$"):
        run_batch(config)
    assert not (tmp_path / "out").exists()


def test_batch_cuts_figures_as_parse_does(tmp_path, model_dir, ray_local, capsys):
    """`jocr batch --figures files` writes a document's figures beside its Markdown, names them as `jocr
    parse` does (the same Markdown for the same page) and lists them in the manifest."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layout"))
    from figure_fixtures import figure_pdf
    from page_fixtures import Text

    src = tmp_path / "in"
    src.mkdir()
    (src / "paper.pdf").write_bytes(
        figure_pdf(
            [Text(72, 80, "Text above."), Text(72, 330, "Figure 1: A picture.")], images=[(72, 120, 200, 180)]
        )
    )
    common = ["-q", "--max-tokens", str(MAX_TOKENS), "--model", str(model_dir), "--figures", "files"]
    assert main(["parse", str(src), "-o", str(tmp_path / "parse"), *common]) == 0, capsys.readouterr().err
    batch_args = ["--batch-size", "2", "--retries", "0"]
    code = main(["batch", str(src), "-o", str(tmp_path / "batch"), *batch_args, *common])
    assert code == 0, capsys.readouterr().err
    parse_md = (tmp_path / "parse" / "paper.md").read_text()
    assert "(paper_p1_fig1.png)" in parse_md
    assert (tmp_path / "batch" / "paper.md").read_text() == parse_md
    png = (tmp_path / "batch" / "paper_p1_fig1.png").read_bytes()
    assert png.startswith(b"\x89PNG") and png == (tmp_path / "parse" / "paper_p1_fig1.png").read_bytes()
    pages = [r for r in _manifest(tmp_path / "batch") if r["page"] == 1]
    assert [r["figures"] for r in pages] == [["paper_p1_fig1.png"]]
