"""A scripted stand-in for `jocr.engine.Engine` that checks what the pipeline sends it.

It answers each request with text derived from its page views (the brightness at the global view centre), so
tests can tell pages apart and check their order, and it records every batch it is given.
"""

from __future__ import annotations

from types import SimpleNamespace

from jocr.config import tiny_config
from jocr.documents.preprocess import views_token_count
from jocr.engine.requests import GenerationResult
from jocr.engine.stats import RequestStats
from jocr.parse import LoadedModel
from jocr.tokenizer import Tokenizer


class ScriptedEngine:
    def __init__(self, tokenizer: Tokenizer, vision, reply=None):
        self.tokenizer = tokenizer
        self.vision = vision
        self.batches: list[int] = []
        self.reply = reply or (lambda level: f"# Page\n\nlevel {level}")

    def generate(self, requests):
        self.batches.append(len(requests))
        out = []
        for req in requests:
            (views,) = req.images
            placeholders = req.prompt_ids.count(self.tokenizer.image_id)
            assert placeholders == views_token_count(views, self.vision)
            assert req.prompt_ids[0] == self.tokenizer.bos_id
            centre = views.global_view.shape[-1] // 2
            level = round(float(views.global_view[:, centre, centre].mean()), 1)
            ids = self.tokenizer.encode(self.reply(level))[: req.max_tokens]
            reason = "length" if len(ids) == req.max_tokens else "stop"
            out.append(GenerationResult(token_ids=ids, finish_reason=reason, stats=RequestStats()))
        return out


class ScriptedModel(LoadedModel):
    def engine(self, spec="auto", batch_size=8):
        return self.scripted


def scripted_model(reply=None) -> ScriptedModel:
    config = tiny_config()
    tok = Tokenizer.byte_level()
    model = ScriptedModel(model=SimpleNamespace(config=config), tokenizer=tok, path="scripted")
    model.scripted = ScriptedEngine(tok, config.vision, reply)
    return model
