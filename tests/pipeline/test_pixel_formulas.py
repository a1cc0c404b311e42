"""Formulas of pages read from pixels (`jocr.pipeline.formulas`): an equation region's block is cut out of
the page image and read by a model trained on formula crops, its LaTeX put in the block and the page's
Markdown; a model without the training leaves the OCR text; the model config carries the flag."""

from __future__ import annotations

from PIL import Image

from jocr.config import ElementsConfig, OCRConfig
from jocr.layout.render import block_markdown, page_markdown
from jocr.layout.tree import FORMULA, PARAGRAPH, Block, PageTree, TreeLine
from jocr.pipeline import formulas as formulas_mod
from jocr.pipeline import load_model
from jocr.pipeline.formulas import cut_formula_crops, formula_latex, read_crops, read_formulas, reads_formulas
from jocr.pipeline.results import Document, PageResult


def _page(unit: str = "px") -> PageResult:
    blocks = [
        Block(type=PARAGRAPH, text="The energy is", bbox=(10, 10, 200, 30)),
        Block(type=FORMULA, text="E mc 2", bbox=(60, 40, 160, 80)),
        Block(type=PARAGRAPH, text="as shown.", bbox=(10, 90, 200, 110)),
    ]
    for b in blocks:
        b.markdown = block_markdown(b)
    tree = PageTree(page=1, width=300, height=200, unit=unit, blocks=blocks)
    page = PageResult(page=1, markdown=page_markdown(tree))
    page.tree = tree
    return page


def test_formula_answers_are_unwrapped_and_anything_else_is_no_formula():
    assert formula_latex("$$\nE=mc^{2}\n$$") == "E=mc^{2}"
    assert formula_latex("  $$ x_{1} $$ ") == "x_{1}"
    assert formula_latex("E=mc^{2}") == ""
    assert formula_latex("$$\nx\n$$\n$$\ny\n$$") == ""  # two formulas for one region
    assert formula_latex("") == ""


def test_a_page_keeps_formula_crops_only_for_a_model_that_reads_them():
    from jocr.layout.figures import FiguresConfig
    from jocr.pipeline.stream import finish_page

    image = Image.new("RGB", (300, 200), "white")
    page = _page()
    finish_page(page, None, image, FiguresConfig())
    assert all(b.crop is None for b in page.tree.blocks)  # no work for a model that cannot read them
    finish_page(page, None, image, FiguresConfig(), formulas=True)
    assert [b.type for b in page.tree.blocks if b.crop is not None] == [FORMULA]


def test_a_formula_block_is_cut_from_the_page_image_with_a_margin():
    page = _page()
    image = Image.new("RGB", (300, 200), "white")
    assert cut_formula_crops(page.tree, image) == 1
    (formula,) = [b for b in page.tree.blocks if b.type == FORMULA]
    assert formula.crop.size == (100 + 2 * formulas_mod.CROP_MARGIN, 40 + 2 * formulas_mod.CROP_MARGIN)
    pdf_page = _page(unit="pt")  # a PDF page's formulas come from its glyphs, not from pixels
    assert cut_formula_crops(pdf_page.tree, image) == 0


def test_a_scanned_pdf_pages_formula_is_cut_from_its_rendering_at_the_renderings_scale():
    page = _page(unit="pt")
    for block in page.tree.blocks:  # its lines read by OCR: a scanned page
        block.lines = [TreeLine(block.text, block.bbox, source="ocr", confidence=0.9)]
    assert page.tree.from_pixels and not _page(unit="pt").tree.from_pixels
    image = Image.new("RGB", (600, 400), "white")  # rendered at twice the points
    assert cut_formula_crops(page.tree, image) == 1
    (formula,) = [b for b in page.tree.blocks if b.type == FORMULA]
    margin = formulas_mod.CROP_MARGIN
    assert formula.crop.size == (200 + 2 * margin, 80 + 2 * margin)
    mixed = _page(unit="pt")
    mixed.tree.blocks[0].lines = [TreeLine("The energy is", (10, 10, 200, 30), source="textlayer")]
    mixed.tree.blocks[1].lines = [TreeLine("E mc 2", (60, 40, 160, 80), source="ocr")]
    assert cut_formula_crops(mixed.tree, image) == 0  # a text layer's page keeps its glyphs' formulas


def test_read_formulas_puts_the_latex_in_the_block_and_the_markdown(monkeypatch):
    page = _page()
    cut_formula_crops(page.tree, Image.new("RGB", (300, 200), "white"))
    monkeypatch.setattr(formulas_mod, "reads_formulas", lambda loaded: True)
    read = lambda loaded, crops, max_tokens: ["E=mc^{2}"] * len(crops)  # noqa: E731
    monkeypatch.setattr(formulas_mod, "read_crops", read)
    doc = Document(source="page.png", pages=[page])
    assert read_formulas(doc.pages, loaded=None) == 1
    (formula,) = [b for b in page.tree.blocks if b.type == FORMULA]
    assert formula.latex == "E=mc^{2}" and formula.crop is None
    assert page.markdown == "The energy is\n\n$$\nE=mc^{2}\n$$\n\nas shown."
    assert read_formulas(doc.pages, loaded=None) == 0  # read once


def test_a_model_not_trained_on_formulas_leaves_the_ocr_text(model_dir):
    loaded = load_model(model_dir)
    assert not reads_formulas(loaded)
    page = _page()
    cut_formula_crops(page.tree, Image.new("RGB", (300, 200), "white"))
    before = page.markdown
    assert read_formulas([page], loaded) == 0
    assert page.markdown == before and all(b.crop is None for b in page.tree.blocks)


def test_crops_are_read_by_the_model_one_answer_each(model_dir):
    loaded = load_model(model_dir)
    crops = [Image.new("RGB", (120, 40), "white"), Image.new("RGB", (80, 30), "white")]
    out = read_crops(loaded, crops, max_tokens=8)
    assert len(out) == 2 and all(isinstance(x, str) for x in out)  # a random model: no formula, no error


def test_the_elements_flag_goes_through_config_json(tmp_path):
    config = OCRConfig()
    assert config.elements == ElementsConfig(formula=False)
    config.elements.formula = True
    config.save(tmp_path)
    assert OCRConfig.load(tmp_path).elements.formula


def _bundle_with_reader(model_dir, tmp_path, reader):
    import shutil

    from jocr.model.formula_reader import save_formula_reader
    from jocr.pipeline.model import FORMULA_MEMBER

    bundle = tmp_path / "bundle"
    shutil.copytree(model_dir, bundle)
    save_formula_reader(reader, bundle / FORMULA_MEMBER)
    return bundle


def test_a_bundle_with_a_formula_reader_reads_formulas_with_it(model_dir, tmp_path, tiny_formula_reader,
                                                                monkeypatch):  # fmt: skip
    from jocr.engine.formula import FormulaReading
    from jocr.pipeline.formulas import reads_formulas_at
    from jocr.pipeline.model import bundle_members, model_digest

    bundle = _bundle_with_reader(model_dir, tmp_path, tiny_formula_reader())
    loaded = load_model(bundle, cache=False)
    assert reads_formulas(loaded) and reads_formulas_at(bundle) and not reads_formulas_at(model_dir)
    assert [name for name, _ in bundle_members(bundle)] == ["image", "formula"]
    assert model_digest(bundle) != model_digest(model_dir)  # the reader changes what pixel pages read
    from jocr.cli.model_cmd import members

    formula = members(str(bundle))[-1]
    assert (formula["name"], formula["storage"]) == ("formula", "int8") and formula["bytes"] > 0
    seen = {}

    def fake(model, vocab, strips, max_tokens):
        seen["heights"] = [s.shape[0] for s in strips]
        return [FormulaReading("E=mc^{2}", True), FormulaReading("x+x+x", False)]

    monkeypatch.setattr("jocr.engine.formula.read_strips", fake)
    crops = [Image.new("RGB", (120, 40), "white"), Image.new("RGB", (1, 30)), Image.new("RGB", (80, 30))]
    # the 1-pixel crop is not read; a reading that did not end is no formula
    assert read_crops(loaded, crops, max_tokens=8) == ["E=mc^{2}", "", ""]
    assert seen["heights"] == [64, 64]


def test_the_formula_task_on_an_image_is_read_by_the_bundles_formula_reader(
    model_dir, tmp_path, tiny_formula_reader, monkeypatch
):
    from jocr.engine.formula import FormulaReading
    from jocr.pipeline.elements import parse_element

    loaded = load_model(_bundle_with_reader(model_dir, tmp_path, tiny_formula_reader()), cache=False)
    answer = [FormulaReading("x^{2}", True)]
    monkeypatch.setattr("jocr.engine.formula.read_strips", lambda model, vocab, strips, max_tokens: answer)
    doc = parse_element(Image.new("RGB", (200, 60), "white"), "formula", model=loaded, max_tokens=6)
    (element,) = doc.metadata["elements"]
    assert element["method"] == "model:formula-reader" and doc.error is None
    assert doc.pages[0].markdown == "$$\nx^{2}\n$$"
    answer[0] = FormulaReading("x+x+x+x", False)  # ran out: no formula, said in a note rather than invented
    doc = parse_element(Image.new("RGB", (200, 60), "white"), "formula", model=loaded, max_tokens=6)
    assert doc.pages[0].markdown == "" and "no formula" in doc.metadata["notes"][0]
