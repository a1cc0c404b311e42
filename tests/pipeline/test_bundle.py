"""A model directory with an `anchored/` member: anchored pages are read by the member, every other page by
the image model, exactly as each would read them alone; parse, the server's backend and batch jobs route the
same way, and a member that cannot share the image model's prompts is refused at load."""

from __future__ import annotations

import shutil

import pytest
import torch
from layer_fixtures import plain_pdf
from pdf_fixtures import image_bytes

from jocr.bulk.stages import PageSettings, page_anchoring
from jocr.config import OCRConfig
from jocr.documents.pages import LoadOptions, open_source
from jocr.engine import GenerationRequest
from jocr.lines.anchor import ANCHOR_VERSION
from jocr.model import OCRModel
from jocr.pipeline import load_model, parse
from jocr.pipeline.bundle import BundleRunner
from jocr.pipeline.model import ANCHORED_MEMBER, anchor_config_of
from jocr.serve.backend import EngineBackend
from jocr.tokenizer import DEFAULT_PROMPT, Tokenizer

MAX_TOKENS = 8


def save_model(directory, seed: int, anchor_version: int, tokenizer: Tokenizer | None = None):
    config = OCRConfig.preset("tiny")
    config.anchor.version = anchor_version
    torch.manual_seed(seed)
    OCRModel(config).init_weights(seed=seed).save_pretrained(directory)
    (tokenizer or Tokenizer.byte_level()).save(directory / "tokenizer.json")
    return directory


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
