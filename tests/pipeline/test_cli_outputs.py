"""`jocr parse` output files: inputs with the same stem are both written (the naming rule itself:
tests/documents/test_naming.py), and a write failure is one document's, not the run's."""

from __future__ import annotations

from pdf_fixtures import image_bytes, text_pdf


def test_same_stem_inputs_both_written(tmp_path, model_dir, parse_cli):
    (tmp_path / "a.pdf").write_bytes(text_pdf(["pdf page"]))
    (tmp_path / "a.png").write_bytes(image_bytes("PNG", size=(300, 200)))
    out = tmp_path / "out"
    code, err = parse_cli(
        [str(tmp_path / "a.pdf"), str(tmp_path / "a.png"), "-o", str(out), "--model", str(model_dir)]
    )
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["a.pdf.md", "a.png.md"]
    assert "2 of 2 input(s) parsed" in err


def test_write_failure_is_per_document(tmp_path, model_dir, parse_cli):
    """`<stem>.md` existing as a folder: that input fails with one line, the others are still written."""
    for name in ("one.pdf", "two.pdf", "three.pdf"):
        (tmp_path / name).write_bytes(text_pdf([name]))
    out = tmp_path / "out"
    (out / "two.md").mkdir(parents=True)
    inputs = [str(tmp_path / n) for n in ("one.pdf", "two.pdf", "three.pdf")]
    code, err = parse_cli([*inputs, "-o", str(out), "--model", str(model_dir)])
    assert code == 1
    assert (out / "one.md").is_file() and (out / "three.md").is_file() and (out / "two.md").is_dir()
    lines = [line for line in err.splitlines() if "two.pdf" in line]
    assert len(lines) == 1 and "cannot write" in lines[0] and "two.md" in lines[0], err
    assert "Traceback" not in err
    assert "2 of 3 input(s) parsed" in err and "1 failed" in err


def test_a_link_planted_at_the_temporary_name_is_not_followed(tmp_path, model_dir, parse_cli):
    """The old temporary name was predictable (`.<name>.tmp-<pid>`): a link planted there redirected the
    write. Outputs go through a fresh `mkstemp` file; the link's target is untouched."""
    import os

    (tmp_path / "doc.pdf").write_bytes(text_pdf(["one"]))
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.symlink(victim, out / f".doc.md.tmp-{os.getpid()}")
    code, err = parse_cli([str(tmp_path / "doc.pdf"), "-o", str(out), "--model", str(model_dir)])
    assert code == 0, err
    assert victim.read_text() == "precious"
    assert (out / "doc.md").is_file() and not (out / "doc.md").is_symlink()
    assert not [p for p in out.iterdir() if p.name.startswith(".jocr-")]  # no temporary file left


def test_a_255_byte_input_name_is_written(tmp_path, model_dir, parse_cli):
    name = "x" * 251 + ".pdf"
    (tmp_path / name).write_bytes(text_pdf(["one"]))
    out = tmp_path / "out"
    code, err = parse_cli(
        [str(tmp_path / name), "-o", str(out), "--format", "json", "--model", str(model_dir)]
    )
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["x" * 240 + ".json", "x" * 240 + ".md"]


def test_file_names_are_escaped_in_messages(tmp_path, model_dir, parse_cli):
    bad = tmp_path / "evil\nname\x1b[2J.pdf"
    bad.write_bytes(b"not a pdf")
    code, err = parse_cli([str(bad), "-o", str(tmp_path / "out"), "--model", str(model_dir)])
    assert code == 1
    assert "evil\\nname\\x1b[2J.pdf" in err and "\x1b" not in err and "evil\nname" not in err


def test_an_interrupted_run_keeps_its_finished_pages(tmp_path, model_dir, parse_cli, monkeypatch):
    """Ctrl-C in the middle of a document: the pages read so far go to `<stem>.partial.md` (never
    `<stem>.md`, which --skip-existing would take as done), and the run exits 130."""
    import tqdm

    (tmp_path / "long.pdf").write_bytes(text_pdf(["one", "two", "three", "four"]))
    out = tmp_path / "out"
    calls = []
    real_update = tqdm.tqdm.update

    def interrupt_at_the_second_page(self, n=1):
        calls.append(n)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_update(self, n)

    monkeypatch.setattr(tqdm.tqdm, "update", interrupt_at_the_second_page)
    code, err = parse_cli([str(tmp_path / "long.pdf"), "-o", str(out), "--model", str(model_dir)])
    assert code == 130, err
    assert sorted(p.name for p in out.iterdir()) == ["long.partial.md"]
    assert "interrupted: pages" in err and "long.partial.md" in err
    assert (out / "long.partial.md").read_text().count("<--- Page Split --->") == 1  # two pages


def test_json_holds_each_page_tree_and_html_is_rendered_from_it(tmp_path, model_dir, parse_cli):
    import json

    import jsonschema

    from jocr.layout.tree import tree_schema

    (tmp_path / "a.pdf").write_bytes(text_pdf(["pdf page", "second page"]))
    out = tmp_path / "out"
    code, err = parse_cli(
        [str(tmp_path / "a.pdf"), "-o", str(out), "--model", str(model_dir), "--format", "json"]
    )
    assert code == 0, err
    data = json.loads((out / "a.json").read_text())
    for page in data["pages"]:
        jsonschema.validate(page["tree"], tree_schema())
        assert page["tree"]["page"] == page["page"]
    code, err = parse_cli(
        [str(tmp_path / "a.pdf"), "-o", str(out), "--model", str(model_dir), "--format", "html"]
    )
    assert code == 0, err
    html = (out / "a.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and html.count('<section class="page"') == 2


def test_draw_writes_each_page_with_its_blocks(tmp_path, model_dir, parse_cli):
    from PIL import Image

    (tmp_path / "a.pdf").write_bytes(text_pdf(["pdf page", "second page"]))
    out = tmp_path / "out"
    code, err = parse_cli([str(tmp_path / "a.pdf"), "-o", str(out), "--model", str(model_dir), "--draw"])
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["a.md", "a_p1_layout.png", "a_p2_layout.png"]
    with Image.open(out / "a_p1_layout.png") as image:
        assert image.size == (1224, 1584)  # the page as rendered at 144 dpi


def test_draw_shows_a_turned_page_upright_as_its_tree_is(tmp_path, model_dir, parse_cli):
    # OCR reads a page lying on its side upright, its tree's boxes in that frame: the drawn page is too.
    from PIL import Image, ImageDraw

    from jocr.synth.fonts import get_font

    page = Image.new("RGB", (900, 700), "white")
    pen = ImageDraw.Draw(page)
    for text, y in (("A page lying on its side", 80), ("is drawn the way it is read.", 220)):
        pen.text((80, y), text, fill="black", font=get_font("sans", "regular", 30))
    page.rotate(90, expand=True).save(tmp_path / "turned.png")
    out = tmp_path / "out"
    args = ["--model", str(model_dir), "--draw", "--anchor", "on", "--ocr", "tesseract", "--max-tokens", "8"]
    code, err = parse_cli([str(tmp_path / "turned.png"), "-o", str(out), *args])
    assert code == 0, err
    with Image.open(out / "turned_p1_layout.png") as image:
        assert image.size == (900, 700)
