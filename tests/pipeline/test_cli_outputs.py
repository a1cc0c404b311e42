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
