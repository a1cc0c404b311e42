"""The model side of `OCRService`: the documents pipeline (preprocess, prompt, post-process) around the
engine's thread-safe `Scheduler`, so every HTTP request joins the same continuous batch.

The steps are the pipeline's own request builder (`jocr.layout.request.PageRequestBuilder`), so the
server returns what `jocr parse` returns for the same page and settings.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PIL import Image

from jocr.engine import GenerationRequest, QueueFull
from jocr.layout.request import PageRequestBuilder
from jocr.lines.anchor import PageAnchor, page_anchor
from jocr.pipeline.ask import question_ids, request_shape
from jocr.pipeline.ask_decoding import caption_shape
from jocr.serve.openai import ApiError
from jocr.tokenizer import Tokenizer
from jocr.types import PageViews


class EngineBackend:
    """Adapts a `jocr.pipeline.LoadedModel` and its runner (a Scheduler, or a bundle's `BundleRunner`) to the
    generator protocol `OCRService` uses."""

    def __init__(self, loaded, scheduler, model_id: str = "jocr", asking=None):
        self.loaded = loaded
        self.path = loaded.path
        self.tokenizer: Tokenizer = loaded.tokenizer
        self.scheduler = scheduler
        # A bundle's asking member's runner, started by the first asking request (`asking_scheduler`):
        # `asking` builds it; without one, questions share `scheduler`.
        self._make_asking = asking
        self._asking = None
        self._asking_lock = threading.Lock()
        self.model_id = model_id
        self.vision = loaded.vision
        self.builder = PageRequestBuilder(self.tokenizer, self.vision)

    @classmethod
    def from_loaded(
        cls, loaded, max_batch: int = 8, max_queue: int = 64, spec: str | int = "auto", model_id: str = "jocr"
    ) -> EngineBackend:
        """Over a `jocr.pipeline.LoadedModel`: the same engine settings and runner as `jocr.parse` (EOS/PAD
        from the tokenizer, the repetition guard with `<td>`/`</td>` exempt, FastMTP drafts when the
        checkpoint has a head, a bundle's anchored prompts to its anchored member, questions and schemas to
        its asking member), shared by every request."""
        # The server admits at most max_batch + max_queue requests; the scheduler's bound is a backstop.
        queue = max_batch + max_queue

        def asking_runner():
            return loaded.asker.runner(spec, max_batch, queue)

        asking = asking_runner if loaded.has_ask_member else None
        return cls(loaded, loaded.runner(spec, max_batch, queue), model_id, asking)

    def asking_scheduler(self):
        """Where question and extraction prompts go: the asking member's runner (started on first use) in a
        bundle that has one, else the shared scheduler."""
        if self._make_asking is None:
            return self.scheduler
        with self._asking_lock:
            if self._asking is None:
                self._asking = self._make_asking()
            return self._asking

    @classmethod
    def create(
        cls, model, tokenizer: Tokenizer, max_batch: int = 8, max_queue: int = 64, model_id: str = "jocr"
    ) -> EngineBackend:
        from jocr.pipeline import LoadedModel

        return cls.from_loaded(
            LoadedModel(model=model, tokenizer=tokenizer), max_batch, max_queue, "auto", model_id
        )

    @classmethod
    def from_dir(
        cls,
        model_dir: str | Path | None,
        max_batch: int = 8,
        max_queue: int = 64,
        device: str = "cpu",
        dtype: str = "auto",
        quantize: str = "none",
        max_tiles: int | None = None,
    ) -> EngineBackend:
        """Load with `jocr.pipeline.load_model` (None: $JOCR_MODEL, else the bundled models/)."""
        from jocr.pipeline import load_model

        loaded = load_model(model_dir, device=device, dtype=dtype, quantize=quantize, max_tiles=max_tiles)
        model_id = Path(loaded.path).resolve().name if loaded.path else "jocr"
        return cls.from_loaded(loaded, max_batch, max_queue, "auto", model_id or "jocr")

    # Generator protocol ---------------------------------------------------------------------------------
    def prepare(self, image: Image.Image) -> tuple[PageViews, int]:
        return self.builder.views(image)

    def prompt_ids(self, prompt: str, image_token_counts: list[int], anchor: str | None = None) -> list[int]:
        return self.builder.prompt_ids(image_token_counts, prompt, anchor=anchor)

    def anchor(self, source, index: int, mode: str, image: Image.Image | None = None) -> PageAnchor:
        """The page's anchoring decision for this model (`jocr.lines.anchor.page_anchor`, the rule
        `jocr parse` follows); PDFium calls hold the documents' own lock (documents/pdf.py).

        The line source is the text layer alone: a page read (not asked) is never OCR'd here. A chat
        answer is always the model's: a page whose decision is to be read from its lines alone
        (`PageAnchor.alone`, `jocr parse`'s rule for OCR'd pages) is answered by the anchored member."""
        config = self.loaded.anchor_config
        decision = page_anchor(
            source, index, mode, config.version, self.tokenizer, config.max_tokens, image=image, ocr="none"
        )
        if decision.alone:  # its OCR lines were kept for the rules over lines: an answer is not checked
            decision.alone, decision.page_lines = False, None  # against them (`page_anchor`)
        return decision

    def question_ids(
        self, question: str, image_token_counts: list[int], anchor: str | None = None
    ) -> list[int]:
        """A question's (or a schema's extraction prompt's) ids, as `jocr ask` builds them."""
        return question_ids(self.builder, image_token_counts, question, anchor)

    def question_anchor(
        self, source, index: int, mode: str, image: Image.Image | None = None, ocr: str = "none"
    ):
        """(PageAnchor, usable lines or None) of a page asked a question: `jocr.pipeline.ask.question_anchor`
        under the server's anchor setting and OCR line source (`ServeConfig.ocr`)."""
        from jocr.pipeline.ask import AskConfig, question_anchor

        config = AskConfig(anchor=mode, ocr=ocr)
        return question_anchor(source, index, image, self.loaded.asker, config)

    def submit(self, prompt_ids: list[int], views: list[PageViews], params, on_token=None, on_done=None):
        """Into the shared scheduler; `on_token` / `on_done` run on its decode thread. An asking request's
        answer is decoded as `jocr ask` decodes it (`jocr.pipeline.ask.request_shape`), within its
        max_tokens and with its own stop strings too."""
        shape: dict = {"max_tokens": params.max_tokens, "stop_strings": tuple(params.stop)}
        scheduler = self.scheduler
        if getattr(params, "answer", False):  # a question or a schema: the asking member answers it
            if getattr(params, "caption", False):
                shape = caption_shape(self.loaded.asker.tokenizer, params.max_tokens).options()
            else:
                shape = request_shape(self.loaded.asker, params.max_tokens, params.fields).options()
            shape["stop_strings"] = tuple(dict.fromkeys((*shape["stop_strings"], *params.stop)))
            scheduler = self.asking_scheduler()
        request = GenerationRequest(
            prompt_ids=prompt_ids,
            images=views,
            temperature=params.temperature,
            top_p=params.top_p,
            seed=params.seed,
            **shape,
        )
        try:
            return scheduler.submit(request, on_token=on_token, on_done=on_done)
        except QueueFull as exc:
            raise ApiError(
                429, f"server busy: {exc}", code="queue_full", headers={"Retry-After": "1"}
            ) from None
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None

    @property
    def reads_formulas(self) -> bool:
        """Whether the formula prompt goes to the bundle's formula reader rather than to the engine."""
        return self.loaded.has_formula_member

    def read_formulas(self, images: list, max_tokens: int) -> list[str]:
        """Each image's LaTeX by the bundle's formula reader ("" where it reads none), as `jocr parse --task
        formula` reads an image (`jocr.pipeline.formulas.read_member_crops`)."""
        from jocr.pipeline.formulas import read_member_crops

        return read_member_crops(self.loaded.formula_reader, images, max_tokens)

    def cancel(self, handle) -> None:
        if not handle.done:
            handle.cancel()

    def decode(self, ids: list[int]) -> str:
        return self.builder.text(ids)

    def finish(self, raw: str, size: tuple[int, int], finish_reason: str | None) -> str:
        return self.builder.markdown(raw, size, finish_reason)[0]

    def queue_depth(self) -> int:
        asking = self._asking
        return self.scheduler.queue_depth + (asking.queue_depth if asking is not None else 0)

    def close(self) -> None:
        self.scheduler.close()
        with self._asking_lock:
            asking, self._make_asking = self._asking, None  # no asking runner starts after this
        if asking is not None:
            asking.close()
