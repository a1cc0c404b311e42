"""`jocr parse` output files: names never collide, and a write failure is one document's, not the run's."""

from __future__ import annotations

import pytest
from pdf_fixtures import image_bytes, text_pdf

from jocr.cli import main
from jocr.cli.parse_cmd import output_stems
from jocr.config import tiny_config
from jocr.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from jocr.model import OCRModel

    path = tmp_path_factory.mktemp("tiny-model")
    OCRModel(tiny_config()).init_weights(seed=0).save_pretrained(path)
    Tokenizer.byte_level().save(path / "tokenizer.json")
    return path


def _run(args, capsys):
    code = main(["parse", "-q", "--max-tokens", "4", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("names", "stems"),
    [
        (["a.pdf", "b.png"], ["a", "b"]),
        (["a.pdf", "a.png"], ["a.pdf", "a.png"]),  # stems clash: whole file names
        (["x/a.pdf", "y/a.pdf"], ["a.pdf", "a.pdf-2"]),  # whole names clash too
        (["a.pdf", "a-2.pdf", "z/a.pdf"], ["a.pdf", "a-2", "a.pdf-2"]),  # a suffix never takes a real name
        (["A.pdf", "a.png"], ["A.pdf", "a.png"]),  # case-insensitive file systems
        (["https://h/doc.pdf", "doc.png"], ["doc.pdf", "doc.png"]),
    ],
)
def test_output_names_never_collide(names, stems):
    assert output_stems(names) == stems
    assert len({s.lower() for s in output_stems(names)}) == len(names)


def test_same_stem_inputs_both_written(tmp_path, model_dir, capsys):
    (tmp_path / "a.pdf").write_bytes(text_pdf(["pdf page"]))
    (tmp_path / "a.png").write_bytes(image_bytes("PNG", size=(300, 200)))
    out = tmp_path / "out"
    code, err = _run(
        [str(tmp_path / "a.pdf"), str(tmp_path / "a.png"), "-o", str(out), "--model", str(model_dir)], capsys
    )
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["a.pdf.md", "a.png.md"]
    assert "2 of 2 input(s) parsed" in err


def test_write_failure_is_per_document(tmp_path, model_dir, capsys):
    """`<stem>.md` existing as a folder: that input fails with one line, the others are still written."""
    for name in ("one.pdf", "two.pdf", "three.pdf"):
        (tmp_path / name).write_bytes(text_pdf([name]))
    out = tmp_path / "out"
    (out / "two.md").mkdir(parents=True)
    inputs = [str(tmp_path / n) for n in ("one.pdf", "two.pdf", "three.pdf")]
    code, err = _run([*inputs, "-o", str(out), "--model", str(model_dir)], capsys)
    assert code == 1
    assert (out / "one.md").is_file() and (out / "three.md").is_file() and (out / "two.md").is_dir()
    lines = [line for line in err.splitlines() if "two.pdf" in line]
    assert len(lines) == 1 and "cannot write" in lines[0] and "two.md" in lines[0], err
    assert "Traceback" not in err
    assert "2 of 3 input(s) parsed" in err and "1 failed" in err
