"""The caption task at run time takes the path its training samples take (jocr.pipeline.caption): the
bundle's asking member, the crop, the caption prompt and the crop's own anchor (the text layer's runs in
the region on a PDF, the crop's OCR lines on an image), from `jocr.parse(task="caption")`,
`jocr.parse(prompt="caption")` and `jocr parse --task caption` alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from fake_engine import FixedAnswerEngine, save_model

from jocr.cli import main
from jocr.documents.pages import LoadOptions, open_source
from jocr.layout.elements import page_scale
from jocr.layout.request import PageRequestBuilder
from jocr.lines.anchor import ANCHOR_VERSION, region_anchor
from jocr.lines.types import OK, Line, PageLines
from jocr.pipeline import load_model, parse
from jocr.pipeline.ask import question_ids
from jocr.pipeline.caption import caption_anchor, caption_text, is_caption_prompt
from jocr.pipeline.model import ANCHORED_MEMBER, ASK_MEMBER
from jocr.tokenizer import ANCHOR_CLOSE, ANCHOR_OPEN, PROMPTS

CHARTS = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa-charts"


def _chart() -> tuple[Path, dict]:
    """The first chart of the frozen chart set: its PDF and its figure (box in points, caption)."""
    for line in (CHARTS / "docqa_test.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("figures"):
            return CHARTS / record["files"]["pdf"], record["figures"][0]
    raise AssertionError("no chart in the frozen set")


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("caption-bundle")
    save_model(root / "bundle", seed=1, anchor_version=0)
    save_model(root / "bundle" / ANCHORED_MEMBER, seed=2, anchor_version=ANCHOR_VERSION)
    save_model(root / "ask", seed=3, anchor_version=ANCHOR_VERSION)
    shutil.copytree(root / "ask", root / "bundle" / ASK_MEMBER)
    return root / "bundle"


def _scripted(directory: Path) -> tuple:
    """The bundle loaded with a recording engine per member: (loaded, {member name: FixedAnswerEngine})."""
    loaded = load_model(directory, cache=False)
    members = {"image": loaded, "anchored": loaded.anchored, "ask": loaded.asker}
    engines = {}
    for name, member in members.items():
        engines[name] = FixedAnswerEngine(member.tokenizer, f"A chart from the {name} member.")
        member.engine = lambda spec="auto", batch_size=8, engine=engines[name]: engine
    return loaded, engines


def _training_request(pdf: Path, box, loaded) -> tuple[list[int], object]:
    """The prompt ids and views a caption training sample of this figure holds (as
    `jocr.train.docqa_data.caption_sample_parts` and `SampleMaker._make_docqa` build them), with the
    asking member's anchor budget."""
    asker = loaded.asker
    builder = PageRequestBuilder(asker.tokenizer, asker.vision)
    with open_source(str(pdf), LoadOptions()) as source:
        page = source.render(0)
        scale = page_scale(source, 0, page)
        crop = page.crop(tuple(round(v * scale) for v in box))
        layer = source.text_layer(0)
    anchor = region_anchor(layer, box, asker.tokenizer, asker.anchor_config.max_tokens)
    views, n = builder.views(crop)
    return question_ids(builder, n, PROMPTS["caption"], anchor), views


def test_the_caption_task_asks_the_asking_member_what_training_taught_it(bundle_dir):
    pdf, figure = _chart()
    loaded, engines = _scripted(bundle_dir)
    doc = parse(str(pdf), task="caption", region=figure["box"], model=loaded)
    assert doc.pages[0].markdown == "A chart from the ask member."
    assert not engines["image"].requests and not engines["anchored"].requests
    (request,) = engines["ask"].requests
    ids, views = _training_request(pdf, figure["box"], loaded)
    assert request.prompt_ids == ids
    assert torch.equal(request.images[0].global_view, views.global_view)
    prompt = loaded.tokenizer.decode(request.prompt_ids)
    assert prompt.startswith("\n" + PROMPTS["caption"] + ANCHOR_OPEN + "page ")
    assert prompt.endswith(ANCHOR_CLOSE)
    assert "with the crop's anchor" in doc.metadata["elements"][0]["method"]
    # a caption is one line of text: the stop string and the banned first tokens of a typed answer
    assert request.stop_strings == ("\n",) and loaded.tokenizer.eos_id in request.first_banned_ids


def test_the_caption_prompt_is_the_caption_task_and_anchor_off_sends_the_crop_alone(bundle_dir):
    pdf, figure = _chart()
    assert is_caption_prompt("caption") and is_caption_prompt(PROMPTS["caption"])
    assert not is_caption_prompt("ocr")
    loaded, engines = _scripted(bundle_dir)
    doc = parse(str(pdf), prompt="caption", model=loaded)  # the whole page as the crop
    assert doc.pages[0].markdown == "A chart from the ask member." and len(engines["ask"].requests) == 1
    assert ANCHOR_OPEN in loaded.tokenizer.decode(engines["ask"].requests[0].prompt_ids)
    assert not engines["image"].requests
    loaded, engines = _scripted(bundle_dir)
    parse(str(pdf), task="caption", region=figure["box"], model=loaded, anchor="off")
    assert loaded.tokenizer.decode(engines["ask"].requests[0].prompt_ids) == "\n" + PROMPTS["caption"]


def test_an_image_crop_is_anchored_by_its_own_ocr_lines(bundle_dir, monkeypatch):
    from PIL import Image

    loaded = load_model(bundle_dir, cache=False)
    crop = Image.new("RGB", (200, 100), "white")
    seen = []

    def fake_ocr(image, ocr="auto", orient=False, det_min_side=None):
        seen.append((image.size, ocr))
        line = Line(text="Revenue 2024", box=(10.0, 20.0, 120.0, 34.0), source="rapidocr")
        return PageLines(width=200, height=100, lines=[line], verdict=OK, source="rapidocr")

    monkeypatch.setattr("jocr.pipeline.caption.read_region", fake_ocr)
    anchor = caption_anchor(loaded.asker, crop, None, None, "auto", "rapidocr")
    assert seen == [((200, 100), "rapidocr")]
    assert anchor.startswith("page 200x100 rapidocr\n") and "Revenue 2024" in anchor
    assert caption_anchor(loaded.asker, crop, None, None, "off", "rapidocr") is None
    # a model trained without anchors (the image member alone) gets the crop alone under "auto", not "on"
    image_model = load_model(bundle_dir, cache=False)
    image_model.anchored = None
    assert caption_anchor(image_model, crop, None, None, "auto", "rapidocr") is None
    assert caption_anchor(image_model, crop, None, None, "on", "rapidocr") is not None


def test_caption_text_is_the_first_line_with_references_resolved():
    anchor = "page 200x100\n@1 5,20 Revenue 2024\n@2 5,60 Q3 largest"
    assert caption_text("Bars of @1; @2.\nmore", anchor) == "Bars of Revenue 2024; Q3 largest."
    assert caption_text("  A pie chart.  ", None) == "A pie chart."
    assert caption_text("", anchor) == ""


def test_cli_caption_prompt_writes_the_caption(bundle_dir, tmp_path, capsys):
    pdf, figure = _chart()
    out = tmp_path / "out"
    region = ",".join(str(v) for v in figure["box"])
    code = main(["parse", str(pdf), "--model", str(bundle_dir), "--task", "caption", "--region", region,
                 "--max-tokens", "8", "-o", str(out), "-q", "--format", "json"])  # fmt: skip
    assert code == 0
    data = json.loads((out / f"{pdf.stem}.json").read_text())
    assert "with the crop's anchor" in data["metadata"]["elements"][0]["method"]
    code = main(["parse", str(pdf), "--model", str(bundle_dir), "--prompt", "caption", "--max-tokens", "8",
                 "-o", str(tmp_path / "whole"), "-q"])  # fmt: skip
    assert code == 0 and (tmp_path / "whole" / f"{pdf.stem}.md").exists()


# Generated captions in the page tree (--captions generate) ------------------------------------------------
def _figure_pdf() -> bytes:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layout"))
    from figure_fixtures import figure_pdf
    from page_fixtures import Text

    return figure_pdf([Text(72, 80, "Text above.")], images=[(72, 120, 200, 180), (72, 420, 200, 150)])


@pytest.fixture
def fake_captions(monkeypatch):
    """`caption_crops` replaced: crop K gets "Generated caption K." (from 1, in order); the calls kept."""
    from jocr.pipeline import caption as module

    calls = []

    def fake(model, crops, max_tokens=None, spec=0, batch_size=None):
        calls.append(list(crops))
        return [module.Caption(text=f"Generated caption {k}.", anchored=a is not None)
                for k, (_, a) in enumerate(crops, 1)]  # fmt: skip

    monkeypatch.setattr(module, "caption_crops", fake)
    return calls


def test_figures_without_a_printed_caption_get_a_generated_one_in_the_tree_only(
    tmp_path, model_dir, fake_captions
):
    import jsonschema

    from jocr.layout.tree import tree_schema

    (tmp_path / "paper.pdf").write_bytes(_figure_pdf())
    plain = parse(
        str(tmp_path / "paper.pdf"), model=str(model_dir), figures="inline", max_tokens=6, ocr="none"
    )
    assert not fake_captions
    doc = parse(str(tmp_path / "paper.pdf"), model=str(model_dir), figures="inline", captions="generate",
                max_tokens=6, ocr="none")  # fmt: skip
    assert len(fake_captions) == 1 and len(fake_captions[0]) == 2  # both figures, in one batch
    page = doc.pages[0]
    assert page.markdown == plain.pages[0].markdown and "Generated caption" not in doc.markdown
    blocks = [b for b in page.tree.blocks if b.type == "figure"]
    assert [b.generated_caption for b in blocks] == ["Generated caption 1.", "Generated caption 2."]
    data = page.to_dict()
    jsonschema.validate(data["tree"], tree_schema())
    assert data["tree"]["version"] == "1.3.0"
    assert [f["generated_caption"] for f in data["figures"]] == [
        "Generated caption 1.",
        "Generated caption 2.",
    ]
    assert "generated_caption" not in json.dumps(plain.pages[0].to_dict())
    with pytest.raises(ValueError, match="needs figures"):
        parse(str(tmp_path / "paper.pdf"), model=str(model_dir), captions="generate")


def test_a_printed_caption_is_kept_and_a_text_layer_page_anchors_the_crop(bundle_dir, fake_captions):
    from PIL import Image

    from jocr.layout.figures import Figure
    from jocr.layout.tree import Block, PageTree
    from jocr.lines.anchor import PageAnchor
    from jocr.pipeline.caption import generate_captions
    from jocr.pipeline.results import Document, PageResult

    png = io_png(Image.new("RGB", (40, 30), "white"))
    lines = [
        Line(text="Revenue by year", box=(80.0, 130.0, 200.0, 142.0)),
        Line(text="Body", box=(72, 600, 300, 612)),
    ]
    layer = PageLines(width=612, height=792, lines=lines, verdict=OK)
    printed = Block(type="caption", text="Figure 1: Sales.", bbox=(72, 310, 300, 322), order=1)
    captioned = Block(type="figure", bbox=(72, 100, 300, 300), order=0, caption=1,
                      figure=Figure(1, 1, (72, 100, 300, 300), (0, 0, 40, 30), "image", png=png))  # fmt: skip
    bare = Block(type="figure", bbox=(72, 120, 300, 200), order=2,
                 figure=Figure(1, 2, (72, 120, 300, 200), (0, 0, 40, 30), "image", png=png))  # fmt: skip
    tree = PageTree(
        page=1, width=612, height=792, unit="pt", source="anchored", blocks=[captioned, printed, bare]
    )
    page = PageResult(page=1, markdown="x", finish_reason="stop", tree=tree,
                      anchor=PageAnchor(anchored=True, source="textlayer", page_lines=layer))  # fmt: skip
    loaded = load_model(bundle_dir, cache=False)
    assert generate_captions(Document(source="a.pdf", pages=[page]), loaded) == 1
    ((crop, anchor),) = fake_captions[0]  # the captioned figure is not asked
    assert anchor == region_anchor(
        layer, (72, 120, 300, 200), loaded.tokenizer, loaded.asker.anchor_config.max_tokens
    )
    assert "Revenue by year" in anchor and "Body" not in anchor
    assert bare.generated_caption == "Generated caption 1." and captioned.generated_caption is None
    assert page.markdown == "x"


def io_png(image) -> bytes:
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_cli_captions_generate_writes_them_to_the_json_and_refuses_without_figures(
    tmp_path, model_dir, parse_cli, fake_captions
):
    (tmp_path / "paper.pdf").write_bytes(_figure_pdf())
    out = tmp_path / "out"
    code, err = parse_cli([str(tmp_path / "paper.pdf"), "-o", str(out), "--model", str(model_dir), "--format",
                           "json", "--captions", "generate", "--ocr", "none"])  # fmt: skip
    assert code == 0, err
    page = json.loads((out / "paper.json").read_text())["pages"][0]
    assert [b.get("generated_caption") for b in page["tree"]["blocks"] if b["type"] == "figure"] == [
        "Generated caption 1.",
        "Generated caption 2.",
    ]
    assert "Generated caption" not in (out / "paper.md").read_text()
    code, err = parse_cli([str(tmp_path / "paper.pdf"), "-o", str(out), "--model", str(model_dir),
                           "--figures", "none", "--captions", "generate"])  # fmt: skip
    assert code == 2 and err.strip().count("\n") == 0 and "--captions" in err
