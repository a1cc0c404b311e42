"""jocr.integrations.vllm without vLLM: lazy import, kwargs / sampling / server-command builders, plugin."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys

import jinja2
import pytest
from vllm_fixtures import build_checkpoint

from jocr.config import OCRConfig
from jocr.integrations import vllm as jv
from jocr.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return build_checkpoint(tmp_path_factory.mktemp("vllm_helpers") / "tiny")


def test_import_does_not_load_vllm():
    code = (
        "import sys, jocr.integrations.vllm as m; print(any(k.split('.')[0] == 'vllm' for k in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_plugin_entry_point_names_register():
    points = importlib.metadata.entry_points(group="vllm.general_plugins")
    assert {p.name: p.value for p in points}.get("jocr") == "jocr.integrations.vllm:register"


def test_register_without_vllm_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises ImportError, installed or not
    monkeypatch.setattr(jv, "_registered", False)
    with pytest.raises(ImportError, match=r"jocr\[vllm\]"):
        jv.register()


def test_llm_kwargs_with_fastmtp_draft(ckpt):
    kwargs = jv.vllm_llm_kwargs(ckpt, num_speculative_tokens=3, mtp_heads=1, mtp_recursive=True)
    assert kwargs["model"] == str(ckpt) and kwargs["tokenizer"] == str(ckpt)
    assert kwargs["hf_overrides"] == {"architectures": ["JocrOCRForCausalLM"]}
    assert kwargs["speculative_config"] == {
        "method": "eagle",
        "model": str(ckpt),
        "num_speculative_tokens": 3,
    }
    assert "logits_processors" not in kwargs  # vLLM 0.32 rejects custom logits processors with speculation
    assert kwargs["max_model_len"] == min(8192, OCRConfig.load(ckpt).decoder.max_position_embeddings)
    assert kwargs["dtype"] == "float32"


def test_llm_kwargs_without_speculation_loads_the_guard(ckpt):
    kwargs = jv.vllm_llm_kwargs(ckpt, num_speculative_tokens=0, dtype="bfloat16", enforce_eager=True)
    assert "speculative_config" not in kwargs
    assert kwargs["logits_processors"] == ["jocr.integrations.vllm_guard:NoRepeatNGramLogitsProcessor"]
    assert kwargs["dtype"] == "bfloat16" and kwargs["enforce_eager"] is True  # overrides win


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_speculative_tokens=-1), "num_speculative_tokens"),
        (dict(mtp_heads=2), "mtp_heads=1"),
        (dict(mtp_recursive=False), "mtp_recursive"),
    ],
)
def test_llm_kwargs_refuses_bad_speculation(ckpt, kwargs, message):
    with pytest.raises(ValueError, match=message):
        jv.vllm_llm_kwargs(ckpt, **kwargs)


def test_llm_kwargs_refuses_missing_dir_and_headless_checkpoint(tmp_path, ckpt):
    with pytest.raises(ValueError, match="no config.json"):
        jv.vllm_llm_kwargs(tmp_path / "nowhere")
    config = OCRConfig.load(ckpt)
    config.mtp.enabled = False
    headless = tmp_path / "headless"
    config.save(headless)
    with pytest.raises(ValueError, match="no FastMTP head"):
        jv.vllm_llm_kwargs(headless, num_speculative_tokens=1)
    assert "speculative_config" not in jv.vllm_llm_kwargs(headless, num_speculative_tokens=0)


def test_guard_args_and_tokenizer_whitelist(ckpt):
    tok = Tokenizer.from_dir(ckpt)
    assert jv.td_ids(ckpt) == tuple(tok.td_ids) and len(tok.td_ids) == 2
    assert jv.guard_extra_args(jv.td_ids(ckpt)) == {
        "no_repeat_ngram_size": 30,
        "no_repeat_window": 90,
        "no_repeat_whitelist": list(tok.td_ids),
    }
    assert jv.guard_extra_args()["no_repeat_whitelist"] == [128821, 128822]  # the published ids


def test_chat_template_tokenizes_like_build_prompt(ckpt):
    """vLLM's chat path renders "<image>\\n" + text through the template and tokenizes it without adding
    specials; that must give Tokenizer.build_prompt's ids (BOS, one <image>, "\\n" + prompt)."""
    tok = Tokenizer.from_dir(ckpt)
    text = jv.DEFAULT_OCR_PROMPT
    rendered = jinja2.Template(jv.CHAT_TEMPLATE).render(
        messages=[{"role": "user", "content": "<image>\n" + text}]
    )
    assert tok.encode(rendered) == tok.build_prompt(text, [1])


def test_server_command(ckpt, tmp_path):
    argv = jv.openai_server_command(
        ckpt, port=8123, num_speculative_tokens=1, chat_template_path=tmp_path / "t"
    )
    assert argv[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    opts = dict(zip(argv[3::2], argv[4::2]))
    assert opts["--model"] == str(ckpt) and opts["--port"] == "8123" and opts["--host"] == "127.0.0.1"
    assert json.loads(opts["--speculative-config"])["num_speculative_tokens"] == 1
    assert json.loads(opts["--hf-overrides"]) == {"architectures": ["JocrOCRForCausalLM"]}
    assert opts["--chat-template"] == str(tmp_path / "t")
    plain = jv.openai_server_command(ckpt, num_speculative_tokens=0)
    assert "--logits-processors" in plain and "--speculative-config" not in plain
