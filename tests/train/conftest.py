"""Shared fixtures: a fake synthetic page generator (so the training loop is tested without rendering)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from PIL import Image, ImageDraw, ImageFont

from jocr.synth.glyphs import GlyphMap, GlyphPen

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]


@dataclass
class FakePage:
    image: Image.Image
    markdown: str
    tests: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    glyphs: GlyphMap | None = None


def fake_generate_page(seed: int, profile: str = "cpu-lines", degrade: bool = False) -> FakePage:
    rng = random.Random(seed)
    text = " ".join(rng.choice(WORDS) for _ in range(2))
    img = Image.new("RGB", (128, 128), "white")
    pen = GlyphPen(ImageDraw.Draw(img), img.size)
    pen.text((8, 60), text, fill="black", font=ImageFont.load_default(12), anchor="ls")
    tests = [{"pdf": f"p{seed}.png", "page": 1, "id": f"p{seed}_0", "type": "present", "text": text}]
    meta = {"profile": profile, "degrade": degrade}
    return FakePage(image=img, markdown=text, tests=tests, meta=meta, glyphs=pen.map)


@pytest.fixture
def fake_synth(monkeypatch):
    import jocr.synth

    monkeypatch.setattr(jocr.synth, "generate_page", fake_generate_page, raising=False)
    return fake_generate_page


@pytest.fixture
def byte_tokenizer_path(tmp_path):
    from jocr.tokenizer import Tokenizer

    path = tmp_path / "tok" / "tokenizer.json"
    path.parent.mkdir()
    Tokenizer.byte_level().save(path)
    return path


TINY_MODEL_DICT = {"preset": "tiny", "vision": {"crop_mode": False}, "mtp": {"enabled": False}}


@pytest.fixture
def tiny_model_cfg():
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in TINY_MODEL_DICT.items()}
