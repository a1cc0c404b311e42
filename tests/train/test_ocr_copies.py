"""OCR copies of the vector pages and their targets (jocr.train.ocr_copies), and the profile "vector-ocr"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jocr.lines.references import resolve_references
from jocr.lines.types import OK, Line, PageLines, Word
from jocr.tokenizer import ANCHOR_CLOSE, ANCHOR_OPEN, Tokenizer
from jocr.train import ocr_copies
from jocr.train.config import TrainConfig
from jocr.train.data import DataConfig, SampleMaker
from jocr.train.ocr_copies import ocr_reference_form, read_copy, write_ocr_copies
from jocr.train.sft import build_model

VECTOR_DIR = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "vector"


def test_runs_are_placed_up_to_ocr_errors():
    markdown = "# The quick brown fox\n\nIt jumps over the lazy dog and runs away."
    runs = {1: "Tbe quick brovvn fox", 2: "It jumps over the lazy", 3: "dog and runs avvay."}
    target = ocr_reference_form(markdown, runs)
    assert target == "# @1\n\n@2 @3"
    anchor = "page 100x100 rapidocr\n" + "\n".join(f"@{k} 1,{k} {t}" for k, t in runs.items())
    # The references resolve to what OCR read: the spaces between runs are the page's.
    assert (
        resolve_references(target, anchor)
        == "# Tbe quick brovvn fox\n\nIt jumps over the lazy dog and runs avvay."
    )


def test_what_ocr_did_not_read_stays_typed():
    markdown = "Alpha beta gamma.\n\nA line OCR never saw."
    assert ocr_reference_form(markdown, {1: "Alpha beta gamma.", 2: "Something else entirely"}) == (
        "@1\n\nA line OCR never saw."
    )


def test_a_stretch_keeps_whole_words_and_never_takes_a_tag():
    markdown = "<table><tr><td>Quantity shipped</td><td>Unit price</td></tr></table>"
    target = ocr_reference_form(markdown, {1: ">Quantity shippe", 2: "Unit prlce"})
    assert target == "<table><tr><td>@1</td><td>@2</td></tr></table>"


def test_short_runs_only_where_they_stand_once():
    markdown = "<td>12 kg</td><td>7 kg</td><td>Oslo</td><td>x</td>"
    target = ocr_reference_form(markdown, {1: "kg", 2: "x", 3: "Oslo"})
    assert target == "<td>12 kg</td><td>7 kg</td><td>@3</td><td>@2</td>"  # "kg" twice: left typed


def test_cjk_runs_do_not_swallow_the_sentence_after_them():
    markdown = "技术部门在第三季度保持稳定增长，同比增长12.5%。"
    target = ocr_reference_form(markdown, {1: "技术部门在第三季度保持稳定增长，同比增长"})
    assert target == "@1" + "12.5%。"


def test_markdown_holding_references_is_left_alone():
    assert ocr_reference_form("see @3 here", {1: "see"}) == "see @3 here"


def test_page_lines_round_trip_through_their_dict():
    lines = PageLines(
        width=100.0,
        height=200.0,
        lines=[
            Line(
                "a b",
                (1, 2, 3, 4),
                size=9.0,
                confidence=0.9,
                source="rapidocr",
                words=[Word("a", (1, 2, 2, 4), 0.8)],
            )
        ],
        verdict=OK,
        note="deskewed 1 degrees",
        source="rapidocr",
        stats={"seconds": 1.0},
    )
    back = PageLines.from_dict(json.loads(json.dumps(lines.to_dict())))
    assert back.to_dict() == lines.to_dict() and back.usable


def _vector_folder(tmp_path: Path, pages: int = 2) -> Path:
    root = tmp_path / "vector"
    (root / "pdfs").mkdir(parents=True)
    (root / "gt").mkdir()
    for pdf in sorted((VECTOR_DIR / "pdfs").glob("*.pdf"))[:pages]:
        shutil.copy(pdf, root / "pdfs" / pdf.name)
        gt = VECTOR_DIR / "gt" / f"{pdf.stem}_pg1_repeat1.md"
        shutil.copy(gt, root / "gt" / gt.name)
    return root


def _misread(text: str) -> str:
    """One character in the middle of a line read wrong, as OCR does."""
    middle = len(text) // 2
    return text[:middle] + "?" + text[middle + 1 :] if len(text) >= 8 else text


def _fake_ocr(calls: list):
    """An OCR engine that 'reads' a rendered vector page as its ground-truth lines, one character of each
    long line wrong: the page's own text, so the test does not depend on an engine's accuracy."""

    def read_image(image, config=None, page_size=None):
        calls.append(image.size)
        markdown = _fake_ocr.gt.read_text(encoding="utf-8")
        texts = [_misread(t.strip("#- ")) for t in markdown.splitlines() if t.strip() and "<" not in t]
        lines = [
            Line(t, (10, 20 * k, 300, 20 * k + 12), size=12, source="rapidocr")
            for k, t in enumerate(texts, 1)
        ]
        return PageLines(image.width, image.height, lines, verdict=OK, source="rapidocr")

    return read_image


def test_copies_are_written_once_and_training_reads_them(
    tmp_path, monkeypatch, tiny_model_cfg, byte_tokenizer_path
):
    root = _vector_folder(tmp_path, pages=1)
    _fake_ocr.gt = next((root / "gt").glob("*.md"))
    calls: list = []
    monkeypatch.setattr("jocr.lines.ocr.read_image", _fake_ocr(calls))
    assert write_ocr_copies(root, pages=5) == 1
    assert write_ocr_copies(root, pages=5) == 0 and len(calls) == 1  # kept: a stopped run resumes
    stem = next((root / "pdfs").glob("*.pdf")).stem
    copy = read_copy(root, stem)
    assert copy.variant == "scan" and copy.image.exists() and copy.lines.source == "rapidocr"
    assert read_copy(root, "missing") is None

    tok = Tokenizer.from_file(byte_tokenizer_path)
    cfg = TrainConfig.from_dict({"model": tiny_model_cfg, "tokenizer": {"path": str(byte_tokenizer_path)}})
    vision = build_model(cfg, tok).config.vision
    data = DataConfig(
        stages=[{"samples": 10, "profiles": {"vector-ocr": 1.0}}],
        vector_dir=str(root),
        anchor_max_tokens=100_000,
        max_target_tokens=100_000,
        dedup=False,
    )
    sample = SampleMaker(data, tok, vision).make(0)
    assert sample.anchored and sample.profile == "vector-ocr"
    prompt = tok.decode([t for t, label in zip(sample.input_ids, sample.labels) if label == -100])
    anchor = prompt[prompt.index(ANCHOR_OPEN) + len(ANCHOR_OPEN) : prompt.rindex(ANCHOR_CLOSE)]
    assert anchor.splitlines()[0].endswith(" rapidocr")  # the anchor says where its runs came from
    target = tok.decode([x for x in sample.labels if x != -100])
    resolved = resolve_references(target, anchor)
    assert target.count("@") >= 3 and resolved != _fake_ocr.gt.read_text(encoding="utf-8").strip()
    assert all(line.text in resolved for line in copy.lines.lines)  # every run placed, OCR's text kept


def test_a_folder_without_copies_says_so(tmp_path, tiny_model_cfg, byte_tokenizer_path):
    root = _vector_folder(tmp_path, pages=1)
    tok = Tokenizer.from_file(byte_tokenizer_path)
    cfg = TrainConfig.from_dict({"model": tiny_model_cfg, "tokenizer": {"path": str(byte_tokenizer_path)}})
    vision = build_model(cfg, tok).config.vision
    data = DataConfig(stages=[{"samples": 10, "profiles": {"vector-ocr": 1.0}}], vector_dir=str(root))
    with pytest.raises(ValueError, match="no OCR copies"):
        SampleMaker(data, tok, vision).make(0)
    with pytest.raises(ValueError, match="needs data.vector_dir"):
        DataConfig(stages=[{"samples": 10, "profiles": {"vector-ocr": 1.0}}])
    with pytest.raises(ValueError, match="holds no pdfs"):
        write_ocr_copies(tmp_path / "empty", pages=1)
    assert ocr_copies.OCR_DIR == "ocr"
