"""A model directory with an `anchored/` member: anchored pages are read by the member, every other page by
the image model, exactly as each would read them alone; parse, the server's backend and batch jobs route the
same way, and a member that cannot share the image model's prompts is refused at load. With an `ask/`
member (int8), every question and extraction (jocr.ask / jocr.extract, the server's chat and Reader) is
answered by it and no page is read by it."""

from __future__ import annotations

import base64
import json
import shutil

import pytest
from fake_engine import save_model
from layer_fixtures import plain_pdf
from pdf_fixtures import image_bytes

from jocr.bulk.stages import PageSettings, page_anchoring
from jocr.cli import main
from jocr.config import OCRConfig
from jocr.documents.pages import LoadOptions, open_source
from jocr.engine import GenerationRequest
from jocr.lines.anchor import ANCHOR_VERSION
from jocr.model.formats import quantize_model_dir
from jocr.pipeline import ask, extract, load_model, parse
from jocr.pipeline.bundle import BundleRunner
from jocr.pipeline.model import ANCHORED_MEMBER, ASK_MEMBER, anchor_config_of
from jocr.serve.backend import EngineBackend
from jocr.tokenizer import DEFAULT_PROMPT, Tokenizer

MAX_TOKENS = 8


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """(bundle dir, the image model alone, the anchored member alone): two differently seeded tiny models, so
    which one read a page shows in its tokens."""
    root = tmp_path_factory.mktemp("bundle")
    image = save_model(root / "image", seed=1, anchor_version=0)
    anchored = save_model(root / "anchored", seed=2, anchor_version=ANCHOR_VERSION)
    shutil.copytree(image, root / "bundle")
    shutil.copytree(anchored, root / "bundle" / ANCHORED_MEMBER)
    return root / "bundle", image, anchored


def read(model_dir, data, anchor: str = "auto"):
    return parse(data, model=load_model(model_dir), anchor=anchor, max_tokens=MAX_TOKENS).pages[0]


def test_each_page_is_read_by_the_member_its_prompt_is_for(bundle):
    directory, image, anchored = bundle
    loaded = load_model(directory)
    assert loaded.anchored is not None and loaded.anchor_config.version == ANCHOR_VERSION
    assert loaded.model.config.anchor.version == 0  # the outer model is the image model
    pdf, png = plain_pdf(), image_bytes("png", (200, 300))

    born_digital, scan = parse([pdf, png], model=loaded, max_tokens=MAX_TOKENS)
    assert born_digital.pages[0].anchor.anchored and not scan.pages[0].anchor.anchored
    member_alone = read(anchored, pdf, anchor="on")
    image_alone = read(image, png)
    assert born_digital.pages[0].raw == member_alone.raw and born_digital.pages[0].raw
    assert scan.pages[0].raw == image_alone.raw and scan.pages[0].raw
    # the two models differ, so the equalities above say which one read each page
    assert read(image, pdf, anchor="on").raw != member_alone.raw
    # --anchor off: the bundle reads the PDF page as an image, with the image model
    assert read(directory, pdf, anchor="off").raw == read(image, pdf, anchor="off").raw


def test_the_anchored_member_starts_with_the_first_anchored_request(bundle):
    loaded = load_model(bundle[0])
    runner = loaded.runner(0, 2)
    assert isinstance(runner, BundleRunner)
    try:
        plain = GenerationRequest(prompt_ids=loaded.tokenizer.build_prompt(DEFAULT_PROMPT, []), max_tokens=2)
        assert runner.scheduler_for(plain) is runner.image and runner._anchored is None
        anchored = GenerationRequest(
            prompt_ids=loaded.tokenizer.build_prompt(DEFAULT_PROMPT, [], anchor="@1 text"), max_tokens=2
        )
        member = runner.scheduler_for(anchored)
        assert member is not runner.image and runner.scheduler_for(anchored) is member
        assert runner.submit(anchored).result(timeout=60).token_ids
        assert runner.queue_depth == 0
    finally:
        runner.close()


def test_the_server_backend_and_batch_jobs_route_the_same_way(bundle):
    directory, _, anchored = bundle
    backend = EngineBackend.from_dir(directory, max_batch=2, max_queue=4)
    try:
        assert isinstance(backend.scheduler, BundleRunner)
        with open_source(plain_pdf(), LoadOptions()) as source:
            assert backend.anchor(source, 0, "auto").anchored
    finally:
        backend.close()
    assert anchor_config_of(directory).version == ANCHOR_VERSION
    assert anchor_config_of(bundle[1]).version == 0
    decide = page_anchoring(PageSettings(model=str(directory)))
    with open_source(plain_pdf(), LoadOptions()) as source:
        assert decide(source, 0)[0].anchored
    assert page_anchoring(PageSettings(model=str(bundle[1]))) is None  # image model alone, auto: never read


def member_fault(root, fault: str):
    """A bundle whose member breaks one rule."""
    image = save_model(root / "image", seed=1, anchor_version=0)
    bundle = root / "bundle"
    shutil.copytree(image, bundle)
    member = bundle / ANCHORED_MEMBER
    if fault == "no anchors":
        save_model(member, seed=2, anchor_version=0)
    elif fault == "tokenizer":
        other = Tokenizer.byte_level()
        other.hf.add_tokens(["<extra>"])
        save_model(member, seed=2, anchor_version=ANCHOR_VERSION, tokenizer=other)
    elif fault == "vision":
        save_model(member, seed=2, anchor_version=ANCHOR_VERSION)
        config = OCRConfig.load(member)
        config.vision.max_tiles = config.vision.max_tiles + 1
        config.save(member)
    else:
        save_model(member, seed=2, anchor_version=ANCHOR_VERSION)
        save_model(member / ANCHORED_MEMBER, seed=3, anchor_version=ANCHOR_VERSION)
    return bundle


@pytest.mark.parametrize(
    "fault, message",
    [
        ("no anchors", "was trained without anchors"),
        ("tokenizer", "has another tokenizer"),
        ("vision", "has other vision settings"),
        ("nested", "holds a bundle member of its own"),
    ],
)
def test_a_member_that_cannot_share_the_prompts_is_refused(tmp_path, parse_cli, fault, message):
    bundle = member_fault(tmp_path, fault)
    with pytest.raises(ValueError, match=message):
        load_model(bundle, cache=False)
    pdf = tmp_path / "page.pdf"
    pdf.write_bytes(plain_pdf())
    code, err = parse_cli(["--model", str(bundle), "-o", str(tmp_path / "out"), str(pdf)])
    assert code != 0 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# The asking member ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ask_bundle(tmp_path_factory, bundle):
    """(the bundle with an int8 `ask/` member, the member alone): a third differently seeded tiny model that
    reads anchors, stored as the asking member is shipped (weight-only int8)."""
    root = tmp_path_factory.mktemp("ask-bundle")
    member = root / "member"
    save_model(root / "float", seed=3, anchor_version=ANCHOR_VERSION)
    quantize_model_dir(root / "float", member)
    shutil.copytree(bundle[0], root / "bundle")
    shutil.copytree(member, root / "bundle" / ASK_MEMBER)
    return root / "bundle", member


def test_questions_and_extractions_go_to_the_asking_member_and_pages_never_do(bundle, ask_bundle, tmp_path):
    directory, member = ask_bundle
    pdf, png = plain_pdf(), image_bytes("png", (200, 300))
    loaded = load_model(directory, cache=False)
    assert loaded.has_ask_member and loaded._ask is None
    # page reading: as the bundle without the member reads, and the member is not even loaded
    read = parse([pdf, png], model=loaded, max_tokens=MAX_TOKENS)
    before = parse([pdf, png], model=load_model(bundle[0]), max_tokens=MAX_TOKENS)
    assert [d.pages[0].raw for d in read] == [d.pages[0].raw for d in before]
    assert loaded._ask is None
    # a question, on an anchored PDF page and on an image: the member's answer, as it answers alone
    for data in (pdf, png):
        asked = ask(data, "What is the total?", model=loaded, max_tokens=MAX_TOKENS).pages[0]
        alone = ask(data, "What is the total?", model=load_model(member), max_tokens=MAX_TOKENS).pages[0]
        without = ask(data, "What is the total?", model=load_model(bundle[0]), max_tokens=MAX_TOKENS)
        assert asked.raw == alone.raw and asked.anchored == alone.anchored
        assert asked.raw != without.pages[0].raw  # the members differ, so this says which one answered
    assert loaded.asker is loaded._ask and loaded.asker.path == str(directory / ASK_MEMBER)
    assert ask(pdf, "What is the total?", model=loaded, max_tokens=MAX_TOKENS).pages[0].anchored
    # an extraction, through the bundle's directory as `jocr extract --model` gives it
    fields = ["total", "date"]
    assert extract(pdf, fields, model=directory, max_tokens=MAX_TOKENS).values == (
        extract(pdf, fields, model=member, max_tokens=MAX_TOKENS).values
    )


def test_the_server_sends_questions_and_schemas_to_the_asking_member(ask_bundle):
    from starlette.testclient import TestClient

    from jocr.serve.app import create_app
    from jocr.serve.config import ServeConfig
    from jocr.serve.service import OCRService

    directory, _ = ask_bundle
    config = ServeConfig(max_batch=2, max_queue=4, default_max_tokens=4, allowed_hosts=("testserver",))
    backend = EngineBackend.from_dir(directory, config.max_batch, config.max_queue)
    service = OCRService(backend, config)
    seen: list[str] = []

    def spy(scheduler, name):
        submit = scheduler.submit
        scheduler.submit = lambda request, **kw: (seen.append(name), submit(request, **kw))[1]
        return scheduler

    spy(backend.scheduler, "read")
    make = backend._make_asking
    backend._make_asking = lambda: spy(make(), "ask")
    url = "data:application/pdf;base64," + base64.b64encode(plain_pdf()).decode()

    def chat(text=None, **extra):
        content = [{"type": "image_url", "image_url": {"url": url}}]
        content += [{"type": "text", "text": text}] if text else []
        return {"messages": [{"role": "user", "content": content}], "max_tokens": 4, **extra}

    schema = {"type": "object", "properties": {"total": {"type": "number"}}}
    form = {"type": "json_schema", "json_schema": {"name": "t", "schema": schema}}
    pdf = base64.b64encode(plain_pdf()).decode()
    try:
        client = TestClient(create_app(config, service))
        steps = [
            (lambda: client.post("/v1/chat/completions", json=chat()), "read"),
            (lambda: client.post("/v1/chat/completions", json=chat("What is the total?")), "ask"),
            (lambda: client.post("/v1/chat/completions", json=chat(response_format=form)), "ask"),
            (lambda: client.post("/", json={"pdf": pdf}), "read"),
            (lambda: client.post("/", json={"pdf": pdf}, headers={"X-Question": "Total?"}), "ask"),
        ]
        for send, member in steps:
            seen.clear()
            response = send()
            assert response.status_code in (200, 422), response.text  # 422: a refused schema answer
            assert seen and set(seen) == {member}, (member, seen, response.status_code, response.text[:300])
        assert backend.asking_scheduler() is not backend.scheduler
    finally:
        service.close()


def test_without_an_asking_member_questions_are_answered_as_before(bundle):
    loaded = load_model(bundle[0])
    assert not loaded.has_ask_member and loaded.asker is loaded
    backend = EngineBackend.from_dir(bundle[0], max_batch=2, max_queue=4)
    try:
        assert backend.asking_scheduler() is backend.scheduler
    finally:
        backend.close()


@pytest.mark.parametrize(
    "fault, message",
    [
        ("tokenizer", "has another tokenizer"),
        ("vision", "has other vision settings"),
        ("nested", "of its own"),
    ],
)
def test_an_asking_member_that_cannot_share_the_prompts_is_refused(bundle, tmp_path, capsys, fault, message):
    directory = tmp_path / "bundle"
    shutil.copytree(bundle[0], directory)
    member = directory / ASK_MEMBER
    other = Tokenizer.byte_level()
    if fault == "tokenizer":
        other.hf.add_tokens(["<extra>"])
    save_model(member, seed=3, anchor_version=ANCHOR_VERSION, tokenizer=other)
    if fault == "vision":
        config = OCRConfig.load(member)
        config.vision.max_tiles += 1
        config.save(member)
    elif fault == "nested":
        save_model(member / ANCHORED_MEMBER, seed=4, anchor_version=ANCHOR_VERSION)
    with pytest.raises(ValueError, match=message):
        load_model(directory, cache=False)
    pdf = tmp_path / "page.pdf"
    pdf.write_bytes(plain_pdf())
    code = main(["ask", str(pdf), "Total?", "--model", str(directory), "--max-tokens", "2"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_model_info_lists_the_members(ask_bundle, capsys):
    directory, _ = ask_bundle
    assert main(["model", "info", "--model", str(directory), "--json"]) == 0
    members = json.loads(capsys.readouterr().out)["members"]
    assert [(m["name"], m["storage"]) for m in members] == [
        ("image", "float32"),
        (ANCHORED_MEMBER, "float32"),
        (ASK_MEMBER, "int8"),
    ]
    assert main(["model", "info", "--model", str(directory)]) == 0
    assert "member ask (int8" in capsys.readouterr().out


def test_the_bundled_models_hold_their_members_within_the_size_budget():
    """The repository's bundle (what the wheel carries): the image model, the anchored member, the int8
    asking member and the int8 formula reader, under the 50 MB the bundled models may take in all
    (docs/asking.md, "The asking member")."""
    from jocr.pipeline.model import FORMULA_MEMBER, bundle_members, bundled_model_dir

    root = bundled_model_dir()
    names = [name for name, _ in bundle_members(root)]
    assert names == ["image", ANCHORED_MEMBER, ASK_MEMBER, FORMULA_MEMBER]
    total = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    assert total < 50_000_000, total
    header = json.loads(_safetensors_header(root / ASK_MEMBER / "model.safetensors"))
    assert any(v.get("dtype") == "I8" for k, v in header.items() if k != "__metadata__")


def _safetensors_header(path) -> str:
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        return f.read(size).decode("utf-8")
