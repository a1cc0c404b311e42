"""`jocr parse --figures none|files|inline` and `jocr.parse(figures=...)` (docs/layout.md, "Figures")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layout"))

from figure_fixtures import figure_pdf  # noqa: E402
from page_fixtures import Text  # noqa: E402

PDF = figure_pdf(
    [Text(72, 80, "Text above."), Text(72, 330, "Figure 1: A picture.")], images=[(72, 120, 200, 180)]
)


def test_files_writes_each_figure_beside_the_markdown_and_names_it_in_the_json(
    tmp_path, model_dir, parse_cli
):
    import jsonschema

    from jocr.layout.tree import tree_schema

    (tmp_path / "paper.pdf").write_bytes(PDF)
    out = tmp_path / "out"
    code, err = parse_cli(
        [str(tmp_path / "paper.pdf"), "-o", str(out), "--model", str(model_dir), "--format", "json"]
    )
    assert code == 0, err
    assert (out / "paper_p1_fig1.png").read_bytes().startswith(b"\x89PNG")
    assert "(paper_p1_fig1.png)" in (out / "paper.md").read_text()
    page = json.loads((out / "paper.json").read_text())["pages"][0]
    jsonschema.validate(page["tree"], tree_schema())
    assert [b["image"] for b in page["tree"]["blocks"] if b["type"] == "figure"] == ["paper_p1_fig1.png"]
    assert page["figures"][0]["file"] == "paper_p1_fig1.png"


def test_html_shows_each_figure_as_an_image(tmp_path, model_dir, parse_cli):
    (tmp_path / "paper.pdf").write_bytes(PDF)
    out = tmp_path / "out"
    code, err = parse_cli(
        [str(tmp_path / "paper.pdf"), "-o", str(out), "--model", str(model_dir), "--format", "html"]
    )
    assert code == 0, err
    assert '<img src="paper_p1_fig1.png"' in (out / "paper.html").read_text()


def test_inline_and_none_write_no_image_files(tmp_path, model_dir, parse_cli):
    (tmp_path / "paper.pdf").write_bytes(PDF)
    for mode, marker in (("inline", "](data:image/png;base64,"), ("none", None)):
        out = tmp_path / mode
        code, err = parse_cli(
            [str(tmp_path / "paper.pdf"), "-o", str(out), "--model", str(model_dir), "--figures", mode]
        )
        assert code == 0, err
        assert sorted(p.name for p in out.iterdir()) == ["paper.md"]
        markdown = (out / "paper.md").read_text()
        assert (marker in markdown) if marker else "![" not in markdown


def test_the_api_gives_each_page_its_figures(tmp_path, model_dir):
    import jocr

    doc = jocr.parse(PDF, model=str(model_dir), max_tokens=6, figures="files")
    (figure,) = doc.pages[0].figures
    scale = doc.pages[0].width / 612  # cut at the page's render resolution
    assert figure.image.size == (round(200 * scale), round(180 * scale)) and figure.name == "page_p1_fig1.png"
    assert doc.pages[0].to_dict()["figures"][0]["file"] == figure.name
    assert jocr.parse(PDF, model=str(model_dir), max_tokens=6).pages[0].figures == []
