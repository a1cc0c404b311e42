"""Element tasks (jocr.layout.elements, jocr.pipeline.elements, `jocr parse --task --region`): regions
checked with one-line errors, the table task read without a model, a crop without a table answered empty
with a note."""

import json
from pathlib import Path

import pytest

import jocr
from jocr.cli import main
from jocr.layout.elements import MODEL_PROMPTS, READERS, RegionError, check_region, parse_region
from jocr.tokenizer import PROMPTS

TABLE_SET = Path(__file__).resolve().parents[2] / "data/frozen-test/tables"
ROW = json.loads((TABLE_SET / "manifest.jsonl").read_text().splitlines()[0])
PDF = str(TABLE_SET / ROW["pdf"])
REGION = ",".join(f"{v:g}" for v in ROW["region"])


def test_tasks_map_to_readers_and_prompts():
    assert "table" in READERS and "formula" in READERS  # formulas: by the model on images
    assert MODEL_PROMPTS == {"formula": "formula", "caption": "caption"}
    assert all(name in PROMPTS for name in MODEL_PROMPTS.values())
    # DeepSeek-OCR's published prompts stay as they are
    assert PROMPTS["free"] == "Free OCR."
    assert PROMPTS["grounding"] == "<|grounding|>Convert the document to markdown."


@pytest.mark.parametrize(
    "region, message",
    [
        ((700, 10, 800, 50), "outside the page"),
        ((300, 100, 200, 300), "inverted"),
        ((100, 100, 101, 101), "too small"),
        ((10, 10, 10, 90), "inverted or empty"),
    ],
)
def test_bad_regions_are_one_line_errors(region, message):
    with pytest.raises(RegionError, match=message):
        check_region(region, 612, 792, "pt")


def test_region_text():
    assert parse_region("1,2.5,30,40") == (1.0, 2.5, 30.0, 40.0)
    assert parse_region(None) is None
    for bad in ("1,2,3", "a,b,c,d", "1,2,3,nan"):
        with pytest.raises(RegionError):
            parse_region(bad)
    assert check_region((-5, -5, 100, 900), 612, 792, "pt") == (0.0, 0.0, 100, 792.0)


def test_parse_table_task_needs_no_model():
    doc = jocr.parse(PDF, task="table", region=REGION, model="/nonexistent/model")
    assert doc.markdown.startswith("<table>") and doc.metadata["task"] == "table"
    assert doc.metadata["elements"][0]["method"].startswith("textlayer+")


def test_crop_without_table_is_empty_with_a_note():
    above = (50, 50, 560, ROW["region"][1] - 2)  # the paragraph above the table
    doc = jocr.parse(PDF, task="table", region=above)
    assert doc.markdown == "" and "no table" in doc.metadata["notes"][0]


def test_cli_table_task(tmp_path, capsys):
    assert main(["parse", PDF, "--task", "table", "--region", REGION, "-o", str(tmp_path), "-q"]) == 0
    assert (tmp_path / f"{Path(PDF).stem}.md").read_text().startswith("<table>")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "table", "--region", "700,10,800,50"], "outside the page"),
        (["--task", "table", "--region", "300,100,200,300"], "inverted"),
        (["--task", "table", "--region", "100,100,101,101"], "too small"),
        (["--task", "table", "--region", "1,2,3"], "four numbers"),
        (["--region", "10,10,100,100"], "needs --task"),
    ],
)
def test_cli_bad_region_exits_2_with_one_line(tmp_path, capsys, args, message):
    assert main(["parse", PDF, *args, "-o", str(tmp_path), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_image_table_crop_reads_pixels(tmp_path):
    """A scanned table (the set's page rendered to an image): rules found in the pixels, words by OCR."""
    from jocr.lines.ocr import resolve_engine

    if resolve_engine("auto") is None:
        pytest.fail("no OCR engine installed (scripts/setup.sh installs Tesseract)")
    from jocr.documents.pages import LoadOptions, open_source

    with open_source(PDF, LoadOptions(dpi=144)) as source:
        image = source.render(0)
    path = tmp_path / "scan.png"
    image.save(path)
    scale = 2.0
    region = [v * scale for v in ROW["region"]]
    doc = jocr.parse(str(path), task="table", region=region)
    from jocr.checks.teds import teds

    assert doc.metadata["elements"][0]["method"].startswith("ocr+")
    assert teds(doc.markdown, ROW["html"], structure_only=True) >= 0.8


def test_a_drawn_table_region_is_read_with_the_crop_detector_scale(monkeypatch, tmp_path):
    """`--task table --region` on an image: the crop goes to the OCR engine with `CROP_DET_MIN_SIDE` as the
    detector's least side, upright as drawn; the page pass's crops (`image_region_table` as it calls it)
    and a whole image keep the engine's own (None)."""
    from PIL import Image

    import jocr.lines.ocr as ocr
    from jocr.documents.pages import LoadOptions, open_source
    from jocr.layout.elements import image_region_table, read_table_region
    from jocr.lines.ocr import CROP_DET_MIN_SIDE
    from jocr.lines.types import PageLines

    seen = []

    def fake(image, config, page_size=None):
        seen.append((image.size, config.rapid_det_min_side, config.orient))
        return PageLines(*image.size)

    monkeypatch.setattr(ocr, "read_image", fake)
    path = tmp_path / "page.png"
    Image.new("L", (800, 600), 255).save(path)
    with open_source(str(path), LoadOptions()) as source:
        read_table_region(source, 0, (100, 100, 500, 250), ocr="rapidocr")
        read_table_region(source, 0, None, ocr="rapidocr")
    image_region_table(
        Image.new("L", (800, 600), 255), (100, 100, 500, 250), ocr="rapidocr", keep=(0, 0, 1, 1)
    )
    assert seen == [
        ((400, 150), CROP_DET_MIN_SIDE, False),
        ((800, 600), None, True),
        ((400, 150), None, False),
    ]


def test_formula_task_reads_a_pdf_page_from_its_glyphs():
    """A formula on a born-digital page is read from its glyphs and rules (no model call), exactly."""
    formulas = Path(__file__).resolve().parents[2] / "data/frozen-test/formulas"
    row = next(json.loads(x) for x in (formulas / "manifest.jsonl").read_text().splitlines() if '"f001"' in x)
    models = Path(__file__).resolve().parents[2] / "models"
    doc = jocr.parse(str(formulas / row["pdf"]), task="formula", model=str(models))
    assert doc.metadata["elements"][0]["method"] == "textlayer"
    assert doc.markdown.strip() == f"$$\n{row['latex']}\n$$"
