"""An exported anchored model (`jocr export hf models/anchored`) reads PDF pages as `jocr parse` does, without
jocr: `infer` renders the page, reads its text layer (pypdfium2), builds the anchor windows, and resolves the
answers' run references (`@i`); the vLLM helpers (`vllm_page_prompts`, `vllm_page_markdown`) build the same
prompts and turn the same answers into the same Markdown, from jocr and from the exported recipe file.

The pages are born-digital vector pages of the frozen test set (data/frozen-test/vector): one read in one
anchor window, one in two.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from hf_helpers import MODELS, ROOT, assert_greedy_path_decided, run_without_jocr

from jocr.config import OCRConfig
from jocr.integrations.document_page import read_page
from jocr.integrations.hf.export import export_hf
from jocr.integrations.vllm import vllm_page_markdown, vllm_page_prompts
from jocr.layout.request import PageRequestBuilder
from jocr.pipeline import load_model
from jocr.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
pytest.importorskip("pypdfium2")
ANCHORED = MODELS / "anchored"
ONE_WINDOW = ROOT / "data" / "frozen-test" / "vector" / "pdfs" / "vector_2000000003.pdf"
TWO_WINDOWS = ROOT / "data" / "frozen-test" / "vector" / "pdfs" / "vector_2000000005.pdf"


@pytest.fixture(autouse=True)
def _single_thread():
    """Small shapes: one intra-op thread is as fast and avoids OpenMP spin-waits on a loaded machine."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return export_hf(ANCHORED, tmp_path_factory.mktemp("hf_anchored") / "jocr-anchored")


@pytest.fixture(scope="module")
def parsed():
    """`jocr parse`'s pages (the bundle, which sends anchored pages to its anchored member)."""
    import jocr

    loaded = load_model(MODELS)
    return {pdf: jocr.parse(str(pdf), model=loaded).pages[0] for pdf in (ONE_WINDOW, TWO_WINDOWS)}


def _requests(pdf):
    """jocr's own requests for the page: (prompt ids, views) per anchor window."""
    tok = Tokenizer.from_dir(ANCHORED)
    page = read_page(pdf, 1, "auto", OCRConfig.load(ANCHORED).anchor, tok)
    builder = PageRequestBuilder(tok, OCRConfig.load(ANCHORED).vision)
    return [(r.prompt_ids, r.views) for r in builder.pages(page.image, page.anchors)]


def test_infer_reads_a_pdf_page_with_its_text_layer_as_jocr_parse(exported, parsed):
    model = transformers.AutoModel.from_pretrained(exported, trust_remote_code=True, use_safetensors=True)
    tok = transformers.AutoTokenizer.from_pretrained(exported, trust_remote_code=True)
    network = load_model(ANCHORED).model
    for pdf, windows in ((ONE_WINDOW, 1), (TWO_WINDOWS, 2)):
        page = parsed[pdf]
        assert page.anchor.anchored and len(page.anchor.windows) == windows
        details = model.eval().infer(tok, image_file=str(pdf), page=1, eval_mode=True, return_details=True)
        assert details["anchor"] == page.anchor.to_dict()
        requests = _requests(pdf)
        assert len(details["requests"]) == len(requests) == windows
        for (ids, views), tokens in zip(requests, details["requests"]):
            assert_greedy_path_decided(model.core, network, ids, views, tokens)
        assert details["raw"] == page.raw and "@1" in page.raw  # the model answered in run references
        assert details["text"] == page.markdown and "@1" not in page.markdown  # ... resolved
        assert details["finish_reason"] == page.finish_reason
        assert len(details["token_ids"]) == page.num_tokens


def test_anchored_export_reads_a_pdf_page_without_jocr(exported, parsed, tmp_path):
    """`infer` on a PDF and the recipe's vLLM helpers (fed jocr's answers: no vLLM here) in an interpreter
    where jocr cannot be imported."""
    page = parsed[ONE_WINDOW]
    answers = [[int(t) for t in tokens] for tokens in _engine_answers(ONE_WINDOW)]
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    code = f"""
import json, sys
from types import SimpleNamespace
from transformers import AutoModel, AutoTokenizer

model_path, pdf = {str(exported)!r}, {str(ONE_WINDOW)!r}
tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=True)
model = AutoModel.from_pretrained(model_path, trust_remote_code=True, use_safetensors=True).eval()
details = model.infer(tokenizer, image_file=pdf, page=1, eval_mode=True, return_details=True)

sys.path.insert(0, model_path)
from deepseek_ocr_mtp import vllm_page_markdown, vllm_page_prompts
inputs, page = vllm_page_prompts(model_path, pdf, page=1)
answers = json.load(open("answers.json"))
outputs = [SimpleNamespace(outputs=[SimpleNamespace(token_ids=a, finish_reason="stop")]) for a in answers]
print(json.dumps({{"infer": details["text"], "anchor": details["anchor"], "vllm": vllm_page_markdown(
    model_path, page, outputs), "prompts": [i["prompt_token_ids"] for i in inputs],
    "jocr": [m for m in sys.modules if m == "jocr" or m.startswith("jocr.")]}}))
"""
    proc = run_without_jocr(code, tmp_path, timeout=600, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["jocr"] == []
    assert got["anchor"]["anchored"] is True
    assert got["infer"] == page.markdown
    assert got["vllm"] == page.markdown
    assert got["prompts"] == [_one_placeholder(ids) for ids, _ in _requests(ONE_WINDOW)]


def _engine_answers(pdf) -> list[list[int]]:
    """jocr's engine's greedy tokens for each of the page's requests."""
    from jocr.engine import GenerationRequest
    from jocr.pipeline import DEFAULT_MAX_TOKENS

    loaded = load_model(ANCHORED)
    requests = [
        GenerationRequest(prompt_ids=ids, images=[v], max_tokens=DEFAULT_MAX_TOKENS)
        for ids, v in _requests(pdf)
    ]
    return [r.token_ids for r in loaded.engine("auto").generate(requests)]


def _one_placeholder(ids: list[int]) -> list[int]:
    """jocr's prompt ids with the page's placeholder run as the one `<image>` vLLM expands."""
    image_id = OCRConfig.load(ANCHORED).image_token_id
    first = ids.index(image_id)
    return ids[: first + 1] + [t for t in ids[first:] if t != image_id]


def test_vllm_page_helpers_resolve_references_as_jocr_parse(parsed):
    """docs/vllm.md's call for a PDF page: the prompts are jocr's (one `<image>` for vLLM to expand), and the
    answers (jocr's engine's tokens, as vLLM's greedy verifier gives them) become `jocr parse`'s Markdown."""
    inputs, page = vllm_page_prompts(ANCHORED, TWO_WINDOWS, page=1)
    assert [i["prompt_token_ids"] for i in inputs] == [
        _one_placeholder(ids) for ids, _ in _requests(TWO_WINDOWS)
    ]
    assert all(i["multi_modal_data"]["image"] is page.image for i in inputs)
    answers = _engine_answers(TWO_WINDOWS)
    outputs = [SimpleNamespace(outputs=[SimpleNamespace(token_ids=a, finish_reason="stop")]) for a in answers]
    markdown = vllm_page_markdown(ANCHORED, page, outputs)
    assert markdown == parsed[TWO_WINDOWS].markdown and "@1" not in markdown
    with pytest.raises(ValueError, match="out of range"):
        vllm_page_prompts(ANCHORED, TWO_WINDOWS, page=2)
