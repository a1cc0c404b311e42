"""`jocr parse` end to end with a tiny random checkpoint (garbage text, real pipeline): outputs, JSON, the
bad-input table through the CLI, and a mixed run where the good inputs complete."""

from __future__ import annotations

import json

import pytest
from pdf_fixtures import encrypted_pdf, image_bytes, text_pdf
from PIL import Image


def test_parse_pdfs_and_images_to_md_and_json(tmp_path, model_dir, parse_cli):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "report.pdf").write_bytes(text_pdf(["one", "two", "three"]))
    frames = [Image.new("L", (700, 900), 255 - 40 * i) for i in range(3)]
    frames[0].save(tmp_path / "in" / "scan.tiff", save_all=True, append_images=frames[1:])
    out = tmp_path / "out"
    args = [
        str(tmp_path / "in"),
        "-o",
        str(out),
        "--format",
        "json",
        "--pages",
        "1,3-",
        "--model",
        str(model_dir),
    ]
    code, err = parse_cli(args)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md", "scan.json", "scan.md"]
    data = json.loads((out / "report.json").read_text())
    assert [p["page"] for p in data["pages"]] == [1, 3]
    for page in data["pages"]:
        assert page["tokens"] == 6 and page["finish_reason"] == "length"
        # figures_s: --figures files is the default; read_s: the page's one read (for its figure candidates)
        assert set(page["timings"]) == {"render_s", "preprocess_s", "read_s", "generate_s", "figures_s"}
        assert (page["width"], page["height"]) == (1224, 1584)
    assert (out / "report.md").read_text() == data["markdown"] + "\n"
    scan = json.loads((out / "scan.json").read_text())
    assert [(p["page"], p["width"]) for p in scan["pages"]] == [(1, 700), (3, 700)]
    # The scan's frames are plain grey: blank pages, empty without running the model unless asked.
    assert [(p["finish_reason"], p["tokens"], p["markdown"]) for p in scan["pages"]] == [("blank", 0, "")] * 2
    assert "2 of 2 input(s) parsed, 4 page(s)" in err and "pages/s" in err
    code, err = parse_cli(args + ["--keep-blank-pages"])
    scan = json.loads((out / "scan.json").read_text())
    assert code == 0 and [p["tokens"] for p in scan["pages"]] == [6, 6]


BAD = {
    "corrupt.pdf": b"%PDF-1.4\n1 0 obj garbage" * 4,
    "locked.pdf": encrypted_pdf("pw"),
    "empty.pdf": b"",
    "notes.pdf": b"hello, I am a text file\n",
    "huge.png": None,  # filled in below: a header claiming 40000 x 40000 pixels
    "cut.png": image_bytes("PNG", size=(300, 300))[:300],
    "table.xlsx": b"PK\x03\x04" + bytes(60),
}
EXPECTED = {
    "corrupt.pdf": "corrupt or unreadable PDF",
    "locked.pdf": "pass its password with --password",
    "empty.pdf": "empty file (0 bytes)",
    "notes.pdf": "unsupported file type (text)",
    "huge.png": "over the pixel limit",
    "cut.png": "cannot decode image",
    "table.xlsx": "unsupported file type (a ZIP container",
}


def test_mixed_good_and_bad_inputs(tmp_path, model_dir, parse_cli):
    from test_pages import _png_with_size

    BAD["huge.png"] = _png_with_size(40000, 40000)
    src = tmp_path / "in"
    src.mkdir()
    for name, data in BAD.items():
        (src / name).write_bytes(data)
    (src / "good1.pdf").write_bytes(text_pdf(["good"]))
    (src / "good2.jpg").write_bytes(image_bytes("JPEG"))
    out = tmp_path / "out"
    inputs = [str(src / n) for n in sorted(BAD)] + [str(src / "good1.pdf"), str(src / "good2.jpg")]
    code, err = parse_cli([*inputs, "--model", str(model_dir), "-o", str(out)])
    assert code == 1
    assert sorted(p.name for p in out.iterdir()) == ["good1.md", "good2.md"]  # nothing half-written
    assert "Traceback" not in err
    lines = [
        line for line in err.splitlines() if line.startswith("jocr parse: ") and "input(s) parsed" not in line
    ]
    assert len(lines) == len(BAD)
    for name, fragment in EXPECTED.items():
        (line,) = [line for line in lines if f"{src / name}: " in line]
        assert fragment in line, line
    assert "2 of 9 input(s) parsed" in err and "7 failed" in err


def test_password_and_page_out_of_range(tmp_path, model_dir, parse_cli):
    locked = tmp_path / "locked.pdf"
    locked.write_bytes(encrypted_pdf("pw"))
    code, err = parse_cli([str(locked), "--model", str(model_dir), "-o", str(tmp_path), "--password", "pw"])
    assert code == 0 and (tmp_path / "locked.md").exists(), err
    code, err = parse_cli(
        [
            str(locked),
            "--model",
            str(model_dir),
            "-o",
            str(tmp_path / "x"),
            "--pages",
            "2",
            "--password",
            "pw",
        ]
    )
    assert code == 1
    assert f"{locked}: page 2 out of range (document has 1 pages)" in err
    assert not (tmp_path / "x" / "locked.md").exists()


def test_skip_existing(tmp_path, model_dir, parse_cli):
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(text_pdf(["a"]))
    args = [str(pdf), "--model", str(model_dir), "-o", str(tmp_path / "out")]
    assert parse_cli(args)[0] == 0
    code, err = parse_cli([*args, "--skip-existing"])
    assert code == 0 and "nothing to do (1 input(s) already parsed)" in err


@pytest.mark.parametrize(
    "args,message",
    [
        (["--pages", "3-1"], "--pages: bad page range"),
        (["--spec", "fast"], "--spec: spec must be 'auto'"),
        (["--batch-size", "0"], "--batch-size must be >= 1"),
        (["--model", "/nonexistent/model"], "no model directory at /nonexistent/model"),
    ],
)
def test_usage_errors_are_one_line(tmp_path, args, message, parse_cli):
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(text_pdf(["a"]))
    code, err = parse_cli([str(pdf), "-o", str(tmp_path), *args])
    assert code == 2
    assert (
        err.strip().startswith("jocr parse: error: ")
        and message in err
        and len(err.strip().splitlines()) == 1
    )


def test_missing_bundled_model_is_a_clear_error(tmp_path, monkeypatch, parse_cli):
    monkeypatch.setenv("JOCR_MODEL", str(tmp_path / "none"))
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(text_pdf(["a"]))
    code, err = parse_cli([str(pdf), "-o", str(tmp_path)])
    assert code == 2 and "set $JOCR_MODEL" in err


def test_longest_side_and_grounding_prompt(tmp_path, model_dir, parse_cli):
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(text_pdf(["a"]))
    args = [
        str(pdf),
        "--model",
        str(model_dir),
        "-o",
        str(tmp_path),
        "--format",
        "json",
        "--longest-side",
        "500",
    ]
    code, err = parse_cli([*args, "--prompt", "grounding"])
    assert code == 0, err
    data = json.loads((tmp_path / "a.json").read_text())
    assert (data["pages"][0]["width"], data["pages"][0]["height"]) == (387, 500)
    assert data["metadata"]["prompt"] == "<|grounding|>Convert the document to markdown."


def test_serve_log_level_configures_jocr_loggers(capsys):
    """`jocr serve --log-level info` logs jocr's own events (refused page requests, disconnects, the browser's
    start), not only uvicorn's; `warning` keeps them quiet."""
    import logging
    import logging.config

    from jocr.cli.serve_cmd import log_config

    root = logging.getLogger("jocr")
    saved = (root.handlers[:], root.level, root.propagate)
    try:
        logging.config.dictConfig(log_config("info"))
        logging.getLogger("jocr.browser").info("Chromium started: test")
        logging.getLogger("jocr.serve").debug("not shown at info")
        logging.config.dictConfig(log_config("warning"))
        logging.getLogger("jocr.serve").info("not shown at warning")
    finally:
        root.handlers[:], root.level, root.propagate = saved
    err = capsys.readouterr().err
    assert "Chromium started: test" in err
    assert "not shown" not in err


def test_a_page_ocr_cannot_read_gets_its_note_on_stderr(tmp_path, parse_cli):
    """An image OCR refuses (a strip beyond 12:1) is read down the image-only path, and `jocr parse` says
    why on stderr (the note was in --format json only); a page OCR reads gets no note."""
    from fake_engine import save_model
    from test_ocr_pages import text_page

    from jocr.lines.anchor import ANCHOR_VERSION

    model = save_model(tmp_path / "anchored", seed=0, anchor_version=ANCHOR_VERSION)
    src = tmp_path / "in"
    src.mkdir()
    text_page().save(src / "page.png")
    strip = Image.new("RGB", (100, 1400), "white")
    strip.paste(text_page().crop((70, 60, 170, 120)), (0, 0))
    strip.save(src / "strip.png")
    out = str(tmp_path / "out")
    code, err = parse_cli([str(src), "--model", str(model), "--ocr", "tesseract", "-o", out])
    assert code == 0, err
    notes = [line for line in err.splitlines() if "input(s) parsed" not in line]
    assert len(notes) == 1, err
    assert f"{src / 'strip.png'} p1: " in notes[0] and "aspect beyond 12:1" in notes[0]
    assert "Traceback" not in err
