"""The batch stages without Ray: document expansion and rendering, the retry policy, the manifest, inputs."""

from __future__ import annotations

import json

import pytest
from pdf_fixtures import encrypted_pdf, text_pdf
from PIL import Image

from jocr.bulk.manifest import Manifest
from jocr.bulk.stages import Attempt, PageReader, PageSettings, expand_documents, render_pages
from jocr.bulk.storage import Output, expand_batch_inputs
from jocr.documents.naming import output_stems


def _docs(tmp_path):
    (tmp_path / "good.pdf").write_bytes(text_pdf(["one", "two", "three"]))
    (tmp_path / "locked.pdf").write_bytes(encrypted_pdf("pw"))
    (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj garbage" * 4)
    Image.new("RGB", (300, 400), "white").save(tmp_path / "blank.png")
    return [
        {"doc_id": str(tmp_path / n), "done_pages": []} for n in ("good.pdf", "locked.pdf", "corrupt.pdf")
    ]


def test_expand_skips_done_pages_and_reports_unreadable_documents(tmp_path):
    docs = _docs(tmp_path)
    docs[0]["done_pages"] = [2]
    rows = expand_documents(docs, PageSettings())
    good = [r for r in rows if r["doc_id"].endswith("good.pdf")]
    assert [(r["page"], r["pages_total"], r["kind"], r["num_pages"]) for r in good] == [
        (1, 3, "pdf", 3),
        (3, 3, "pdf", 3),
    ]
    failed = {r["doc_id"].rsplit("/", 1)[-1]: r for r in rows if r["status"] == "failed"}
    assert set(failed) == {"locked.pdf", "corrupt.pdf"}
    assert all(r["page"] == 0 for r in failed.values())
    assert "encrypted" in failed["locked.pdf"]["error"] and "corrupt" in failed["corrupt.pdf"]["error"]
    huge = expand_documents(docs[:1], PageSettings(max_doc_pages=2))
    assert huge[0]["status"] == "failed" and "3 pages, over the limit of 2" in huge[0]["error"]


def test_render_marks_blank_pages_and_ships_rgb_pixels(tmp_path):
    _docs(tmp_path)
    rows = expand_documents(
        [{"doc_id": str(tmp_path / n)} for n in ("good.pdf", "blank.png")], PageSettings()
    )
    out = list(render_pages(rows, PageSettings(dpi=72)))
    first, blank = out[0], out[-1]
    assert first["status"] is None and (first["width"], first["height"]) == (612, 792)
    assert len(first["image"]) == 612 * 792 * 3
    assert blank["status"] == "blank" and blank["image"] is None
    assert json.loads(blank["result"])["finish_reason"] == "blank"


class _Builder:
    def page(self, image):
        raise AssertionError("not used")

    def text(self, ids):
        return " ".join(map(str, ids))

    def markdown(self, raw, size, finish_reason):
        return raw, []


class _Scripted(PageReader):
    """Outcomes per attempt, from a script: (finish_reason or None for an error) per attempt."""

    def __init__(self, script, retries=2):
        self.script = script
        self.calls = []
        super().__init__(PageSettings(retries=retries))

    def load(self):
        return _Builder()

    def prepare(self, job):
        job.prompt_ids = [[1]]

    def generate(self, jobs, temperature, attempt):
        self.calls.append((attempt, temperature, [j.row["page"] for j in jobs]))
        out = []
        for job in jobs:
            reason = self.script[job.row["page"]][attempt]
            if reason is None:
                out.append(Attempt(None, None, "boom", 0.1, temperature))
            else:
                out.append(Attempt([[attempt, job.row["page"]]], [reason], None, 0.1, temperature))
        return out


def _row(page):
    return {
        "doc_id": "d.pdf",
        "page": page,
        "status": None,
        "width": 4,
        "height": 4,
        "render_seconds": 0.0,
        "image": bytes(4 * 4 * 3),
    }


def test_retry_policy_rising_temperature_then_greedy_fallback():
    script = {
        1: ["stop"],
        2: ["length", "stop"],
        3: ["repetition", "length", "length"],
        4: [None, None, None],
        5: [None, "stop"],
    }
    reader = _Scripted(script)
    out = {r["page"]: r for r in reader([_row(p) for p in script])}
    assert reader.calls == [(0, 0.0, [1, 2, 3, 4, 5]), (1, 0.2, [2, 3, 4, 5]), (2, 0.5, [3, 4])]
    assert (out[1]["status"], out[1]["attempts"], out[1]["temperature"]) == ("ok", 1, 0.0)
    assert (out[2]["status"], out[2]["attempts"], out[2]["temperature"]) == ("retried", 2, 0.2)
    assert json.loads(out[2]["result"])["markdown"] == "1 2"
    # Nothing finished: the greedy reading is kept, as `jocr parse` would write it.
    assert (out[3]["status"], out[3]["finish_reason"], out[3]["attempts"]) == ("fallback", "repetition", 3)
    assert json.loads(out[3]["result"])["markdown"] == "0 3"
    assert (out[4]["status"], out[4]["error"]) == ("failed", "boom")
    assert out[5]["status"] == "retried"
    assert all("image" not in r for r in out.values())
    plain = {r["page"]: r for r in _Scripted(script, retries=0)([_row(p) for p in script])}
    assert plain[3]["status"] == "ok" and plain[3]["finish_reason"] == "repetition"


def test_manifest_newest_row_wins_and_compaction_keeps_it(tmp_path):
    output = Output(str(tmp_path))
    output.make_dirs("_manifest")
    first = Manifest(output, config="c1", run="r1")
    first.append([{"doc_id": "a", "page": 1, "status": "failed", "time": 1.0}])
    first.append(
        [
            {"doc_id": "a", "page": 1, "status": "ok", "time": 2.0},
            {"doc_id": "b", "page": 0, "status": "written", "time": 2.0},
        ]
    )
    Manifest(output, config="c2", run="r2").append([{"doc_id": "a", "page": 1, "status": "blank"}])
    rows = first.load()
    assert {k: r["status"] for k, r in rows.items()} == {("a", 1): "ok", ("b", 0): "written"}
    first.compact()
    assert len(output.list("_manifest", ".parquet")) == 1
    assert {k: r["status"] for k, r in first.load().items()} == {("a", 1): "ok", ("b", 0): "written"}
    assert Manifest(output, config="c2", run="x").load()[("a", 1)]["status"] == "blank"
    assert first.superseded == set()  # c2's page is c1's too
    other = Manifest(output, config="c3", run="y")
    assert other.load() == {} and other.superseded == {("a", 1)}  # pages only: document rows are not read


def _copy_model(source, target):
    import shutil

    shutil.copytree(source, target)
    return target


def _flip_last_weight_byte(directory):
    path = directory / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1  # a weight changed, the header and the size not: a retrained model of the same shape
    path.write_bytes(bytes(data))


def test_the_job_key_is_the_model_contents_version_engine_and_page_options(tmp_path, model_dir, monkeypatch):
    import jocr

    here = _copy_model(model_dir, tmp_path / "here")
    there = _copy_model(model_dir, tmp_path / "there")
    key = PageSettings(model=str(here)).fingerprint()
    assert PageSettings(model=str(there)).fingerprint() == key  # the same model wherever it lies
    # Settings that never change a greedy reading keep the key.
    for same in (dict(spec=0), dict(batch_size=1), dict(threads=2), dict(device="cpu"), dict(page_timeout=9)):
        assert PageSettings(model=str(here), **same).fingerprint() == key, same
    assert PageSettings(model=str(here), vllm_kwargs={"dtype": "float32"}).fingerprint() == key
    changed = [
        dict(dpi=200.0),
        dict(prompt="<image>\nFree OCR."),
        dict(anchor="off"),
        dict(max_tokens=7),
        dict(pages="1"),
        dict(longest_side=512),
        dict(retries=1),
        dict(device="cuda:1"),
    ]
    keys = {PageSettings(model=str(here), **c).fingerprint() for c in changed}
    assert len(keys) == len(changed) and key not in keys
    assert PageSettings(model=str(here)).fingerprint("vllm") != key
    vllm = PageSettings(model=str(here), vllm_kwargs={"dtype": "float32"}).fingerprint("vllm")
    assert vllm != PageSettings(model=str(here)).fingerprint("vllm")
    monkeypatch.setattr(jocr, "__version__", "0.0.0-other")
    assert PageSettings(model=str(here)).fingerprint() != key
    monkeypatch.undo()
    _flip_last_weight_byte(there)
    assert PageSettings(model=str(there)).fingerprint() != key
    (here / "tokenizer.json").write_text((here / "tokenizer.json").read_text() + " ")
    assert PageSettings(model=str(here)).fingerprint() != key


def test_the_job_key_covers_the_anchored_member(tmp_path, model_dir):
    bundle = _copy_model(model_dir, tmp_path / "bundle")
    key = PageSettings(model=str(bundle)).fingerprint()
    member = _copy_model(model_dir, bundle / "anchored")
    with_member = PageSettings(model=str(bundle)).fingerprint()
    assert with_member != key
    _flip_last_weight_byte(member)
    assert PageSettings(model=str(bundle)).fingerprint() not in (key, with_member)


def test_manifest_rolls_small_parts_into_one(tmp_path, monkeypatch):
    from jocr.bulk import manifest as manifest_module

    monkeypatch.setattr(manifest_module, "ROLL_PARTS", 3)
    output = Output(str(tmp_path))
    output.make_dirs("_manifest")
    manifest = Manifest(output, config="c", run="r")
    for page in range(1, 8):
        manifest.append([{"doc_id": "a", "page": page, "status": "ok"}])
    assert len(output.list("_manifest", ".parquet")) == 3  # two rolled parts and the newest small one
    assert sorted(p for _, p in manifest.load()) == list(range(1, 8))


def test_inputs_list_files_folders_and_unique_names(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.pdf").write_bytes(text_pdf(["a"]))
    (tmp_path / "x" / "b.png").write_bytes(b"")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "a.pdf").write_bytes(text_pdf(["a"]))
    (tmp_path / "list.txt").write_text("# inputs\nx\n\ny/a.pdf\nhttps://example.org/doc.pdf?x=1\n")
    items = expand_batch_inputs([str(tmp_path / "list.txt"), str(tmp_path / "x" / "a.pdf")])
    assert items == [
        str(tmp_path / "x" / "a.pdf"),
        str(tmp_path / "x" / "b.png"),
        str(tmp_path / "y" / "a.pdf"),
        "https://example.org/doc.pdf?x=1",
    ]
    assert output_stems(items) == ["a.pdf", "b", "a.pdf-2", "doc"]  # the names `jocr parse` gives
    assert expand_batch_inputs([f"file://{tmp_path}/y"]) == [str(tmp_path / "y" / "a.pdf")]


def test_output_writes_are_atomic_and_leave_no_temporaries(tmp_path):
    output = Output(str(tmp_path / "out"))
    output.make_dirs()
    output.write("a.md", b"one")
    output.write("a.md", b"two")
    assert (tmp_path / "out" / "a.md").read_bytes() == b"two"
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["a.md"]
    with pytest.raises(OSError):
        output.write("missing/a.md", b"x")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["a.md"]


def test_jocr_batch_is_a_plain_function_beside_its_package():
    """Importing the package's modules leaves `jocr.batch` the function (the package is `jocr.bulk`)."""
    import types

    import jocr
    import jocr.bulk.stages  # noqa: F401 (the import is the point)

    assert isinstance(jocr.batch, types.FunctionType) and jocr.batch is jocr.bulk.batch
    with pytest.raises(TypeError, match="unknown option"):
        jocr.batch("in/", "out/", colour="blue")


def _anchored_model(tmp_path, max_tokens: int):
    """A tiny random checkpoint whose config says it was trained with anchors (garbage text, real prompts)."""
    from jocr.config import tiny_config
    from jocr.lines.anchor import ANCHOR_VERSION
    from jocr.model import OCRModel
    from jocr.tokenizer import Tokenizer

    path = tmp_path / f"anchored-{max_tokens}"
    config = tiny_config()
    config.anchor.version, config.anchor.max_tokens = ANCHOR_VERSION, max_tokens
    OCRModel(config).init_weights(seed=0).save_pretrained(path)
    Tokenizer.byte_level().save(path / "tokenizer.json")
    return str(path)


def _rendered(tmp_path, settings):
    from layer_fixtures import plain_pdf

    (tmp_path / "doc.pdf").write_bytes(plain_pdf())
    Image.effect_noise((300, 400), 60).convert("RGB").save(tmp_path / "photo.png")  # not blank
    docs = [{"doc_id": str(tmp_path / n)} for n in ("doc.pdf", "photo.png")]
    return list(render_pages(expand_documents(docs, settings), settings))


class _ReferenceReader(PageReader):
    """Answers each request with references to every run of its anchor window, as an anchored model that
    keeps all runs would."""

    def load(self):
        from jocr.config import OCRConfig
        from jocr.layout.request import PageRequestBuilder
        from jocr.tokenizer import Tokenizer

        self.tokenizer = Tokenizer.from_dir(self.settings.model)
        self.requests = 0
        return PageRequestBuilder(self.tokenizer, OCRConfig.load(self.settings.model).vision)

    def generate(self, jobs, temperature, attempt):
        import re

        out = []
        for job in jobs:
            ids = []
            for prompt in job.prompt_ids:
                numbers = re.findall(r"^@(\d+) ", self.tokenizer.decode(prompt), flags=re.M)
                ids.append(self.tokenizer.encode(" ".join(f"@{n}" for n in numbers) or "photo"))
            self.requests += len(ids)
            out.append(Attempt(ids, ["stop"] * len(ids), None, 0.1, temperature))
        return out


@pytest.mark.parametrize("budget, windows", [(1024, 1), (80, 3)])
def test_anchored_pages_are_read_in_windows_and_their_references_resolve(tmp_path, budget, windows):
    # `jocr batch` anchors as `jocr parse` does: the render stage reads the text layer and cuts the windows,
    # the reader sends one request per window and resolves each window's references against its anchor.
    from layer_fixtures import PROSE

    from jocr.bulk.stages import document_from_rows

    settings = PageSettings(model=_anchored_model(tmp_path, budget))
    rows = _rendered(tmp_path, settings)
    state = json.loads(rows[0]["anchor"])
    assert state["anchored"] and len(state["windows"]) == windows
    assert json.loads(rows[1]["anchor"])["anchored"] is False  # an image: no text layer
    reader = _ReferenceReader(settings)
    out = reader(rows)
    assert reader.requests == windows + 1
    doc = document_from_rows(rows[0]["doc_id"], [out[0]], settings, page_marker=False)
    # three windows of one run each: the three lines are one wrapped paragraph, joined back by the page's tree
    assert doc.markdown == " ".join(PROSE)
    info = doc.to_dict()["pages"][0]["anchor"]
    assert info["anchored"] and info["windows"] == windows and info["lines"] == 3
    photo = document_from_rows(rows[1]["doc_id"], [out[1]], settings, page_marker=False)
    assert photo.markdown == "photo" and not photo.to_dict()["pages"][0]["anchor"]["anchored"]


def test_anchor_off_and_image_only_models_leave_the_layer_unread(tmp_path, model_dir):
    for settings in (
        PageSettings(model=_anchored_model(tmp_path, 1024), anchor="off"),
        PageSettings(model=str(model_dir)),
    ):
        rows = _rendered(tmp_path, settings)
        assert [r["anchor"] for r in rows] == [None, None]
    assert PageSettings(anchor="off").fingerprint() != PageSettings().fingerprint()


def test_the_engine_reads_every_window_and_a_refused_window_fails_only_its_page(tmp_path, monkeypatch):
    from jocr.bulk.stages import JocrPageReader

    settings = PageSettings(model=_anchored_model(tmp_path, 80), max_tokens=3, retries=0)
    rows = _rendered(tmp_path, settings)
    reader = JocrPageReader(settings)
    submitted = []
    submit = reader.runner.submit

    def record(request, *args, **kwargs):
        submitted.append(reader.model.tokenizer.decode(request.prompt_ids))
        return submit(request, *args, **kwargs)

    monkeypatch.setattr(reader.runner, "submit", record)
    out = reader([dict(r) for r in rows])
    assert [r["status"] for r in out] == ["ok", "ok"]
    assert len(submitted) == 4 and sum("<anchor>" in p for p in submitted) == 3
    assert 3 < out[0]["tokens"] <= 9  # three windows of at most 3 tokens each

    def refuse_anchored(request, *args, **kwargs):
        if "<anchor>" in reader.model.tokenizer.decode(request.prompt_ids) and len(submitted) > 4:
            raise ValueError("prompt too long")
        return record(request, *args, **kwargs)

    monkeypatch.setattr(reader.runner, "submit", refuse_anchored)
    out = reader([dict(r) for r in rows])
    assert out[0]["status"] == "failed" and out[0]["error"].endswith("page 1: prompt too long")
    assert out[1]["status"] == "ok"


def _equation_page(tmp_path, monkeypatch) -> list:
    """A page image of three lines whose middle one a stand-in layout detector calls an equation; returns
    the list the detector records each call's page size in."""
    from PIL import ImageDraw, ImageFont

    from jocr.layout import regions as regions_mod
    from jocr.synth.fonts import font_path

    image = Image.new("RGB", (900, 500), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(font_path("sans", "regular"), 30)
    for y, text in (
        (60, "The first line of the page"),
        (200, "x equals a plus b"),
        (340, "The last line here"),
    ):
        draw.text((80, y), text, fill="black", font=font)
    image.save(tmp_path / "page.png")
    seen = []

    def detector(image, config, page_size=None):
        seen.append(page_size)
        return regions_mod.Detection([regions_mod.Region((60, 180, 700, 260), "equation", 0.95)])

    monkeypatch.setattr(regions_mod, "detect_regions", detector)
    return seen


def test_a_page_read_from_its_lines_is_grouped_by_the_detectors_regions_as_in_parse(tmp_path, monkeypatch):
    # `jocr batch` reads an OCR'd page from its lines with the layout detector's regions, as `jocr parse`
    # does: here a stand-in detector calls the middle line an equation, which both write as one formula block.
    import jocr

    seen = _equation_page(tmp_path, monkeypatch)
    settings = PageSettings(model=_anchored_model(tmp_path, 1024))
    (row,) = render_pages(expand_documents([{"doc_id": str(tmp_path / "page.png")}], settings), settings)
    batch = json.loads(row["result"])
    doc = jocr.parse(tmp_path / "page.png", model=settings.model)
    assert len(seen) == 2  # both asked the detector
    kinds = [b["type"] for b in batch["tree"]["blocks"]]
    assert "formula" in kinds
    assert batch["markdown"] == doc.pages[0].markdown


def test_batch_reads_the_formula_regions_of_a_pixel_page_as_parse_does(tmp_path, monkeypatch):
    # A model trained on formula crops reads an equation region's crop in `jocr parse` and in `jocr batch`
    # alike (the page read from its lines alone goes to the reader for it); the reading here is a stand-in.
    import jocr
    from jocr.bulk.stages import JocrPageReader
    from jocr.config import OCRConfig
    from jocr.pipeline import formulas as formulas_mod

    _equation_page(tmp_path, monkeypatch)
    model = _anchored_model(tmp_path, 1024)
    config = OCRConfig.load(model)
    config.elements.formula = True
    config.save(model)
    crops = []

    def read(loaded, images, max_tokens):
        crops.extend(images)
        return ["x=a+b"] * len(images)

    monkeypatch.setattr(formulas_mod, "read_crops", read)
    settings = PageSettings(model=model)
    rows = list(render_pages(expand_documents([{"doc_id": str(tmp_path / "page.png")}], settings), settings))
    assert rows[0]["status"] is None and rows[0]["image"]  # not finished without the model
    (row,) = JocrPageReader(settings)(rows)
    batch = json.loads(row["result"])
    doc = jocr.parse(tmp_path / "page.png", model=model)
    assert len(crops) == 2 and all(c.size[1] < 120 for c in crops)  # the region's crop, once each
    assert row["status"] == "ok" and "$$\nx=a+b\n$$" in batch["markdown"]
    assert batch["markdown"] == doc.pages[0].markdown


def test_a_turned_page_is_read_upright_in_batch_as_in_parse(tmp_path):
    # OCR turns a page lying on its side upright; both paths then read the page in that frame (its size
    # too), so the lines come out in reading order and the two write the same Markdown.
    from PIL import ImageDraw, ImageFont

    import jocr
    from jocr.synth.fonts import font_path

    image = Image.new("RGB", (900, 500), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(font_path("serif", "regular"), 30)
    lines = ("A page that lies on its side", "is read in the order of its lines", "from top to bottom.")
    for y, text in zip((60, 200, 340), lines):
        draw.text((80, y), text, fill="black", font=font)
    image.rotate(90, expand=True).save(tmp_path / "page.png")
    settings = PageSettings(model=_anchored_model(tmp_path, 1024), ocr="tesseract")
    (row,) = render_pages(expand_documents([{"doc_id": str(tmp_path / "page.png")}], settings), settings)
    batch = json.loads(row["result"])
    doc = jocr.parse(tmp_path / "page.png", model=settings.model, ocr="tesseract")
    assert (batch["width"], batch["height"]) == (doc.pages[0].width, doc.pages[0].height) == (900, 500)
    assert batch["markdown"] == doc.pages[0].markdown
    assert [batch["markdown"].find(t.split()[-1]) >= 0 for t in lines] == [True] * 3
    starts = [batch["markdown"].find(t.split()[0] + " " + t.split()[1]) for t in lines]
    assert starts == sorted(starts) and starts[0] >= 0


def test_an_anchored_page_is_not_retried_its_unread_runs_are_its_fallback():
    # As `jocr parse` reads it: an anchored page that ran out of room keeps its greedy reading (and the
    # runs it did not reach); only a page read from its image alone is sampled again.
    from jocr.lines.anchor import PageAnchor

    reader = _Scripted({1: ["length", "stop"], 2: ["length", "stop"]})
    anchored = dict(_row(1), anchor=json.dumps(PageAnchor(anchored=True).state()))
    out = {r["page"]: r for r in reader([anchored, _row(2)])}
    assert reader.calls == [(0, 0.0, [1, 2]), (1, 0.2, [2])]
    assert (out[1]["status"], out[1]["attempts"], out[1]["finish_reason"]) == ("ok", 1, "length")
    assert (out[2]["status"], out[2]["attempts"]) == ("retried", 2)


@pytest.mark.usefixtures("never_stops")  # no reading of the random checkpoint finishes by chance
@pytest.mark.parametrize("retries", [0, 1])
def test_an_image_only_page_that_runs_out_reads_the_same_in_parse_and_batch(tmp_path, model_dir, retries):
    # One retry policy (`jocr.pipeline.retry`): at the default (no retries) both keep the greedy reading
    # that ended `length`; asked for a retry, both sample it again with the same temperature and seed.
    import jocr
    from jocr.bulk.stages import JocrPageReader

    Image.effect_noise((300, 400), 60).convert("RGB").save(tmp_path / "photo.png")  # not blank
    options = dict(model=str(model_dir), max_tokens=6, ocr="none", spec=0)  # read from its image alone
    settings = PageSettings(**options, **({"retries": retries} if retries else {}))
    rows = list(render_pages(expand_documents([{"doc_id": str(tmp_path / "photo.png")}], settings), settings))
    (row,) = JocrPageReader(settings)(rows)
    doc = jocr.parse(str(tmp_path / "photo.png"), **options, **({"retries": retries} if retries else {}))
    batch, page = json.loads(row["result"]), doc.pages[0]
    assert page.anchor is not None and not page.anchor.anchored
    assert (row["attempts"], row["finish_reason"], page.finish_reason) == (1 + retries, "length", "length")
    assert batch["markdown"] == page.markdown and batch["tokens"] == page.num_tokens


def test_a_contents_page_is_written_from_its_lines_in_batch_as_in_parse(tmp_path):
    # docs/layout.md "Contents pages": the render stage finishes a text-layer contents page from its lines
    # (no row goes to the reader), its entries one nested list
    from pathlib import Path

    pdf = Path(__file__).resolve().parents[2] / "data/frozen-real/pdfs/pdf/rintro-p003.pdf"
    settings = PageSettings(model=_anchored_model(tmp_path, 1024))
    (row,) = render_pages(expand_documents([{"doc_id": str(pdf)}], settings), settings)
    assert row["status"] == "ok" and row["image"] is None
    markdown = json.loads(row["result"])["markdown"]
    assert "- 1 Introduction and preliminaries 2\n  - 1.1 The R environment 2\n" in markdown
