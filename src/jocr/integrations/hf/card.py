"""The exported repository's model card (README.md): what the files are and the two usage snippets.

The snippets are tested as written (tests/integrations/test_hf_export.py runs them with jocr unimportable):
each starts with `model_path = ...`, the only line a user changes.
"""

from __future__ import annotations

from jocr.config import OCRConfig
from jocr.model.params import count_parameters

TRANSFORMERS_SNIPPET = """\
import torch
from transformers import AutoModel, AutoTokenizer

model_path = "{name}"  # this repository: a local path or its Hub id
device = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=True)
model = AutoModel.from_pretrained(model_path, trust_remote_code=True, use_safetensors=True).eval().to(device)

text = model.infer(tokenizer, prompt="<image>\\n{prompt}", image_file="page.png",
                   output_path="out", base_size={base}, image_size={tile}, crop_mode={crop},
                   save_results=False, eval_mode=True)
print(text)
"""

VLLM_SNIPPET = """\
import sys

from PIL import Image
from vllm import LLM

model_path = "{name}"  # this repository, downloaded: e.g. huggingface_hub.snapshot_download(...)
sys.path.insert(0, model_path)
from deepseek_ocr_mtp import DEFAULT_OCR_PROMPT, register, vllm_llm_kwargs, vllm_sampling_params

register()
llm = LLM(**vllm_llm_kwargs(model_path,
                            num_speculative_tokens=3,
                            mtp_heads=1,
                            mtp_recursive=True))

image = Image.open("page.png").convert("RGB")
outputs = llm.chat(
    [{{"role": "user", "content": [{{"type": "image_pil", "image_pil": image}},
                                  {{"type": "text", "text": DEFAULT_OCR_PROMPT}}]}}],
    sampling_params=vllm_sampling_params(max_tokens=4096),
)
print(outputs[0].outputs[0].text)
"""


# For a model trained with anchors (config.json `anchor.version` > 0): PDF pages read with their text layer.
ANCHORED_SECTION = """## PDF pages with a text layer

This model reads a born-digital PDF page with the page's text layer in its prompt and answers in run
references (`@i`: run i of the text layer). `infer` does it all when given a PDF (pypdfium2 must be
installed): the page rendered at 144 dpi, its text layer read and anchored, the references resolved.

```python
text = model.infer(tokenizer, image_file="paper.pdf", page=1, eval_mode=True)
```

With vLLM: `inputs, page = vllm_page_prompts(model_path, "paper.pdf", page=1)`, then
`vllm_page_markdown(model_path, page, llm.generate(inputs, vllm_sampling_params()))` (both in
`deepseek_ocr_mtp.py`).

"""


def snippets(config: OCRConfig, name: str) -> dict[str, str]:
    from jocr.tokenizer import DEFAULT_PROMPT

    v = config.vision
    transformers = TRANSFORMERS_SNIPPET.format(
        name=name, prompt=DEFAULT_PROMPT, base=v.base_size, tile=v.tile_size, crop=bool(v.crop_mode)
    )
    return {"transformers": transformers, "vllm": VLLM_SNIPPET.format(name=name)}


def model_card(config: OCRConfig, name: str, code_files: list[str]) -> str:
    counts = count_parameters(config)
    v, d = config.vision, config.decoder
    code = snippets(config, name)
    files = "\n".join(f"- `{f}`" for f in code_files)
    anchored = ANCHORED_SECTION.format(name=name) if config.anchor.version else ""
    mtp = (
        f"a FastMTP draft head ({config.mtp.num_steps} recursive steps)"
        if config.mtp.enabled
        else "no draft head"
    )
    return f"""---
library_name: transformers
pipeline_tag: image-text-to-text
tags: [ocr, document-parsing, deepseek-ocr, jocr, custom_code]
---

# {name}

A document parser exported by jocr (`jocr export hf`): page image in, Markdown out
(tables as HTML, formulas as LaTeX). DeepSeek-OCR's architecture: a DeepEncoder vision tower, a
mixture-of-experts decoder ({d.num_hidden_layers} layers, {d.n_routed_experts} routed experts,
{d.num_experts_per_tok} active) and {mtp}. {counts["total_params"]:,} parameters,
{counts["active_params"]:,} active per decoded token.

Views: a {v.base_size}-pixel global view{
        f" plus {v.tile_size}-pixel tiles ({v.min_tiles} to {v.max_tiles})" if v.crop_mode else ""
    }. It needs torch, transformers, safetensors, tokenizers and Pillow; vLLM for the second recipe.
jocr need not be installed: these code files are jocr's own modules, bundled at export time:

{files}

## Transformers

The code names no device: it runs where the model is moved (CPU, Apple MPS, CUDA). `infer` decodes
greedily with the MoE decoder alone (the FastMTP weights are loaded but unused; speculation would not change
the text) and post-processes the text the way `jocr parse` does. `model.generate(**inputs)` also works,
with `inputs` from `processing_jocr.JocrProcessor.from_pretrained(model_path)(image, prompt)`.

```python
{code["transformers"]}```

{anchored}## vLLM (FastMTP speculative decoding)

The FastMTP head runs as an EAGLE draft (`method="eagle"`: each draft step is fed the previous step's own
state, as the head was trained) and vLLM verifies the drafts greedily, so the text is the greedy text.
`vllm_llm_kwargs` adds vLLM's CPU settings when vLLM runs on a CPU.

```python
{code["vllm"]}```
"""
