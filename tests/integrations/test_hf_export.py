"""`jocr export hf`: the exported repository through Transformers' trust_remote_code, without jocr.

- the bundled model: `infer` gives the jocr engine's greedy tokens and `jocr parse`'s Markdown, and the model
  card's Transformers snippet, run as written in an interpreter where jocr cannot be imported, prints it;
- a tiny checkpoint (sharded export): `model.generate` on a left-padded batch equals the engine row by row,
  and `infer` applies the engine's repetition guard;
- import: a published DeepSeek-OCR-layout checkpoint (no image_token_id in its config) re-exports with its
  tensors bit-identical, twice over; errors name the directory and the fix;
- the bundled code imports only the allowed packages.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest
import torch
from hf_helpers import (
    MODELS,
    assert_greedy_path_decided,
    published_checkpoint,
    run_without_jocr,
    sample_page,
)
from safetensors import safe_open
from vllm_fixtures import build_checkpoint, pages
from vllm_fixtures import prompts as page_prompts

from jocr.config import OCRConfig
from jocr.documents.preprocess import preprocess_image, views_token_count
from jocr.engine import GenerationRequest
from jocr.engine.guard import GuardConfig
from jocr.integrations.hf import bundle as hf_bundle
from jocr.integrations.hf.card import snippets
from jocr.integrations.hf.export import ExportError, export_hf
from jocr.model.ocr import OCRModel
from jocr.pipeline import DEFAULT_MAX_TOKENS, LoadedModel, load_model
from jocr.tokenizer import DEFAULT_PROMPT, Tokenizer

transformers = pytest.importorskip("transformers")
NO_GUARD = GuardConfig(ngram_size=0, loop_detection=False)


@pytest.fixture(autouse=True)
def _single_thread():
    """Tiny shapes: one intra-op thread is as fast and avoids OpenMP spin-waits on a loaded machine
    (as tests/model/conftest.py)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _auto(path):
    tok = transformers.AutoTokenizer.from_pretrained(path, trust_remote_code=True)
    model = transformers.AutoModel.from_pretrained(path, trust_remote_code=True, use_safetensors=True)
    return model.eval(), tok


def _tensors(path) -> dict[str, torch.Tensor]:
    out = {}
    for file in sorted(path.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as f:
            out.update({k: f.get_tensor(k) for k in f.keys()})
    return out


# The bundled model ----------
@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_bundled")
    return export_hf(MODELS, root / "jocr-bundled"), sample_page(root / "page.png")


@pytest.fixture(scope="module")
def engine_page(bundled):
    """jocr's own result for the page: `jocr parse` (its engine runs spec "auto") on it."""
    import jocr

    _, png = bundled
    loaded = load_model(MODELS)
    doc = jocr.parse(str(png), model=loaded, ocr="none")  # the image model, as the export runs it
    return loaded, doc.pages[0]


# The smallest gap between the best two logits on the sample page's greedy path is 0.046 (at token 13, where
# bf16 arithmetic, off by up to 0.18, picks another token); see hf_helpers.LOGIT_TOLERANCE.
def _page_inputs(loaded, png):
    from PIL import Image

    views = preprocess_image(Image.open(png), loaded.vision)
    ids = loaded.tokenizer.build_prompt(DEFAULT_PROMPT, [views_token_count(views, loaded.vision)])
    return ids, views


def test_infer_matches_engine_tokens_and_parse_markdown(bundled, engine_page):
    out, png = bundled
    loaded, page = engine_page
    model, tok = _auto(out)
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # config.json's torch_dtype: float32
    details = model.infer(
        tok,
        prompt="<image>\n" + DEFAULT_PROMPT,
        image_file=str(png),
        output_path=str(png.parent / "out"),
        save_results=True,
        eval_mode=True,
        return_details=True,
    )
    ids, views = _page_inputs(loaded, png)
    request = GenerationRequest(prompt_ids=ids, images=[views], max_tokens=DEFAULT_MAX_TOKENS)
    engine_tokens = loaded.engine("auto").generate([request])[0].token_ids
    # The two computations agree to the tolerance of fp32 arithmetic along jocr's path, and every greedy
    # choice on it is wider than that: token equality below is decided by the maths, not by luck.
    assert_greedy_path_decided(model.core, loaded.model, ids, views, engine_tokens)
    assert details["token_ids"] == engine_tokens
    assert details["finish_reason"] == page.finish_reason == "stop"
    assert details["text"] == page.markdown and page.markdown.strip()
    assert (png.parent / "out" / "result.mmd").read_text() == page.markdown


def test_model_card_snippet_runs_without_jocr(bundled, engine_page, tmp_path):
    out, png = bundled
    _, page = engine_page
    code = snippets(OCRConfig.load(out), out.name)["transformers"]
    assert code in (out / "README.md").read_text()
    code = code.replace(f'model_path = "{out.name}"', f"model_path = {str(out)!r}")
    (tmp_path / "page.png").write_bytes(png.read_bytes())
    proc = run_without_jocr("import jocr\n", tmp_path, timeout=120)
    assert proc.returncode != 0 and "No module named 'jocr'" in proc.stderr
    proc = run_without_jocr(code, tmp_path, timeout=600, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == page.markdown


# A tiny checkpoint ----------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_tiny")
    ckpt = build_checkpoint(root / "ckpt")
    out = export_hf(ckpt, root / "export", max_shard_size="1MB")
    return ckpt, out


def _engine_tokens(ckpt, images, texts, max_tokens, guard):
    loaded = load_model(ckpt, cache=False)
    requests = []
    for image, text in zip(images, texts):
        views = preprocess_image(image, loaded.vision)
        ids = loaded.tokenizer.build_prompt(text, [views_token_count(views, loaded.vision)])
        requests.append(GenerationRequest(prompt_ids=ids, images=[views], max_tokens=max_tokens, guard=guard))
    engine = LoadedModel(loaded.model, loaded.tokenizer).engine(0, batch_size=len(requests))
    return [r.token_ids for r in engine.generate(requests)]


def test_sharded_export_generate_matches_engine_on_a_padded_batch(tiny):
    ckpt, out = tiny
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    model, _ = _auto(out)
    sys.path.insert(0, str(out))
    try:
        from processing_jocr import JocrProcessor
    finally:
        sys.path.remove(str(out))
    images, texts = pages(2), page_prompts(2)
    inputs = JocrProcessor.from_pretrained(out)(images, texts)
    assert (inputs["attention_mask"] == 0).any()  # the rows differ in length: left padding is exercised
    generated = model.generate(**inputs, max_new_tokens=12, do_sample=False)
    width = inputs["input_ids"].shape[1]
    expected = _engine_tokens(ckpt, images, texts, 12, NO_GUARD)
    assert [row[width:].tolist() for row in generated] == expected


def test_generate_page_applies_the_engine_guard(tmp_path):
    """A model that loops (tests/integrations/test_vllm_generation.py): the n-gram ban changes its output, and
    the exported model commits the engine's guarded tokens."""
    ckpt = build_checkpoint(tmp_path / "loop", noise=90.0, vision_gain=100.0)
    out = export_hf(ckpt, tmp_path / "export")
    model, tok = _auto(out)
    images = pages(2)
    guard = GuardConfig(ngram_size=4, window=24, whitelist_ids=tuple(Tokenizer.from_dir(ckpt).td_ids))
    expected = _engine_tokens(ckpt, images, [DEFAULT_PROMPT] * 2, 32, guard)
    free = _engine_tokens(ckpt, images, [DEFAULT_PROMPT] * 2, 32, NO_GUARD)
    assert expected != free  # the ban changed the output, so the comparison checks the guard
    processor = sys.modules[type(model).__module__.replace("modeling_jocr", "processing_jocr")]
    prepare = processor.JocrProcessor.from_pretrained(out).page
    got = []
    for image in images:
        ids, views, _ = prepare(image)
        got.append(model.generate_page(ids, views, tok, 32, guard=guard)[0])
    assert got == expected


def test_infer_defaults(tiny):
    """`infer` without view arguments uses the model's settings and the engine's default guard."""
    import jocr.integrations.hf.modeling as modeling

    ckpt, out = tiny
    model, tok = _auto(out)
    image = pages(1)[0]
    details = model.infer(tok, image_file=image, max_new_tokens=24, eval_mode=True, return_details=True)
    default = GuardConfig(whitelist_ids=tuple(Tokenizer.from_dir(ckpt).td_ids))
    assert details["token_ids"] == _engine_tokens(ckpt, [image], [DEFAULT_PROMPT], 24, default)[0]
    assert details["finish_reason"] == "length"
    assert modeling.DEFAULT_MAX_NEW_TOKENS == DEFAULT_MAX_TOKENS


# Import: a published layout ----------
def test_published_layout_round_trip_is_bit_identical(tmp_path):
    src = published_checkpoint(tmp_path / "published")
    first = export_hf(src, tmp_path / "first")
    second = export_hf(first, tmp_path / "second", max_shard_size="200KB")
    assert OCRConfig.load(first).image_token_id == 3  # from the tokenizer, not 128815
    original = _tensors(src)
    del original["model.vision_model.embeddings.position_ids"]  # a buffer without learned values
    for exported in (_tensors(first), _tensors(second)):
        assert exported.keys() == original.keys()
        for key, tensor in original.items():
            assert exported[key].dtype == tensor.dtype, key
            assert torch.equal(exported[key].view(torch.uint8), tensor.view(torch.uint8)), key
    assert json.loads((first / "config.json").read_text()) == json.loads((second / "config.json").read_text())
    assert len(list(second.glob("model-*-of-*.safetensors"))) > 1
    model = OCRModel.from_pretrained(second)  # jocr reads its own exports back
    assert model.config.image_token_id == 3 and model.mtp_module is not None


def test_missing_image_id_names_the_directory_and_the_fix(tmp_path):
    src = published_checkpoint(tmp_path / "published")
    (src / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match=r"image_token_id") as err:
        OCRConfig.load(src)
    assert str(src) in str(err.value) and "tokenizer.json" in str(err.value)
    proc = subprocess.run(
        [sys.executable, "-m", "jocr", "export", "hf", str(src), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(src) in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_vllm_config_takes_the_image_id_from_the_checkpoint_tokenizer(tmp_path):
    # vLLM builds the published config with the checkpoint directory as its name_or_path (as
    # vllm/transformers_utils/config.py does); the `<image>` id must come from that directory's tokenizer.
    from transformers import PretrainedConfig

    from jocr.integrations.vllm_config import ocr_config_from_hf

    src = published_checkpoint(tmp_path / "published")
    data = json.loads((src / "config.json").read_text())
    assert "image_token_id" not in data
    assert ocr_config_from_hf(PretrainedConfig(name_or_path=str(src), **data)).image_token_id == 3
    (src / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match="tokenizer.json") as err:
        ocr_config_from_hf(PretrainedConfig(name_or_path=str(src), **data))
    assert str(src) in str(err.value)


def test_export_refuses_a_non_empty_output(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    with pytest.raises(ExportError, match="not empty"):
        export_hf(MODELS, tmp_path / "out")


# The bundled code ----------
def _imports_outside_try(source: str, module_level: bool = False) -> set[str]:
    """Absolute imports outside `try` blocks (what Transformers' check_imports requires to be installed, for
    an entry file); with module_level, only those that run when the module is imported (not in functions)."""
    found = set()

    def visit(node):
        if isinstance(node, ast.Try):
            return
        if module_level and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found - sys.stdlib_module_names - {"__future__"}


def test_bundled_code_needs_only_the_allowed_packages():
    files = hf_bundle.bundle()
    names = {f.name for f in files}
    assert {"configuration_jocr.py", "modeling_jocr.py", "processing_jocr.py", "deepseek_ocr_mtp.py"} <= names
    assert "jocr_integrations_vllm_guard.py" in names  # named only in a "module:Class" string
    assert "jocr_lines_textlayer.py" in names and "jocr_documents_fetch.py" not in names  # PDFs, not URLs
    for f in files:
        allowed = hf_bundle.ALLOWED_PACKAGES | (
            hf_bundle.VLLM_PACKAGES if f.module in hf_bundle.VLLM_ONLY else set()
        )
        imports = _imports_outside_try(f.source)
        if f.name in hf_bundle.ENTRY_FILES.values():  # Transformers checks these files' imports
            assert imports <= allowed, (f.name, imports - allowed)
        else:  # pypdfium2 only inside the functions that read PDFs
            assert imports <= allowed | hf_bundle.OPTIONAL_PACKAGES, (f.name, imports - allowed)
            module_level = _imports_outside_try(f.source, module_level=True)
            assert module_level <= allowed, (f.name, module_level - allowed)
        jocr_imports = [
            node
            for node in ast.walk(ast.parse(f.source))
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "jocr"
        ]
        assert not jocr_imports, f.name
        assert '"jocr.integrations.vllm_guard:' not in f.source  # the string vLLM imports by
    pages = next(f.source for f in files if f.name == "jocr_documents_pages.py")
    assert "raise ImportError('URL inputs" in pages  # the left-out fetcher's import, as an error
    with pytest.raises(hf_bundle.BundleError, match="fastapi"):
        hf_bundle._jocr_imports("jocr.integrations.hf.modeling", ast.parse("import fastapi"))
    with pytest.raises(hf_bundle.BundleError, match="pypdfium2 at module level"):
        hf_bundle._jocr_imports("jocr.lines.textlayer", ast.parse("import pypdfium2"))
    fetch = "from jocr.documents.fetch import fetch_url"
    with pytest.raises(hf_bundle.BundleError, match="leaves it out"):
        hf_bundle._jocr_imports("jocr.documents.pages", ast.parse(fetch))
    lazy = ast.parse(f"def f():\n    import pypdfium2\n    {fetch}\n")
    assert [t for _, t in hf_bundle._jocr_imports("jocr.documents.pages", lazy)] == ["jocr.documents.fetch"]


def test_export_refuses_an_int8_directory(tmp_path):
    from jocr.model.formats import quantize_model_dir

    quantize_model_dir(MODELS, tmp_path / "int8")
    with pytest.raises(ExportError, match="weight-only int8"):
        export_hf(tmp_path / "int8", tmp_path / "out")
