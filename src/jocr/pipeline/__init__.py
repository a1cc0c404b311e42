"""Documents -> engine -> Markdown: what the CLI, the Python API and the server call.

    import jocr
    doc = jocr.parse("paper.pdf", pages="1-3")
    print(doc.markdown)

`model.py` finds and loads a model, `stream.py` is the streaming pipeline (`iter_documents`, a blocking
loop over `DocumentRun`), `results.py` the `Document` / `PageResult` it returns; `parse` below is the
one-call API over them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from jocr.documents.pages import DocumentError, LoadOptions
from jocr.pipeline.ask import Answer, AskConfig, AskError, Extraction, ask, extract
from jocr.pipeline.model import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_TOKENS,
    MODEL_ENV,
    LoadedModel,
    ModelNotFoundError,
    default_model_dir,
    load_model,
    normalise_spec,
)
from jocr.pipeline.results import Document, PageResult
from jocr.pipeline.stream import DocumentRun, iter_documents

__all__ = [
    "Answer",
    "AskConfig",
    "AskError",
    "Extraction",
    "ask",
    "extract",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_TOKENS",
    "MODEL_ENV",
    "Document",
    "DocumentRun",
    "LoadedModel",
    "ModelNotFoundError",
    "PageResult",
    "default_model_dir",
    "iter_documents",
    "load_model",
    "normalise_spec",
    "parse",
]


def parse(
    inputs: Any,
    pages: str | Sequence[int] | None = None,
    model: LoadedModel | str | os.PathLike | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    spec: str | int = "auto",
    batch_size: int = DEFAULT_BATCH_SIZE,
    prompt: str | None = None,
    dpi: float | None = None,
    longest_side: int | None = None,
    password: str | None = None,
    device: str = "cpu",
    raise_errors: bool = True,
    skip_blank: bool = True,
    max_tiles: int | None = None,
    anchor: str = "auto",
    ocr: str = "auto",
    task: str = "page",
    region: str | Sequence[float] | None = None,
    figures: str = "none",
    captions: str = "none",
) -> Document | list[Document]:
    """Parse a path, URL, bytes or PIL image (-> Document) or a list of them (-> list of Documents).

    pages: 1-based selection ("1-3,7" or [1, 2]) applied to every input. model: a `LoadedModel`, a model
    directory, or None for the default (`load_model()`). prompt: a task name from `jocr.tokenizer.PROMPTS`
    ("ocr", "free", "grounding", "table", "formula", "caption") or free text; None is the default OCR prompt.
    dpi / longest_side: PDF rendering (144 dpi by default; longest_side renders to that many pixels).
    With raise_errors, an input that cannot be parsed raises `DocumentError`; otherwise it comes back as a
    Document with `.error` set. skip_blank: pages without ink come back empty (finish_reason "blank")
    without running the model. max_tiles: the tile-count limit when `model` is loaded here (see `load_model`).
    anchor: "auto" (the page's text layer goes into the prompt when the model was trained with anchors and
    the layer is usable), "on" or "off"; each page's `anchor` says what happened (docs/parsing.md).
    ocr: "auto" (default), "rapidocr", "tesseract" or "none": OCR reads the lines of images and of PDF pages
    without a usable text layer; under anchor "auto" such a page is read from its lines alone
    (docs/parsing.md, "OCR line source").
    task: "page" (the whole page as Markdown, default), or an element task, "table", "formula" or
    "caption": each selected page's element in `region` ("x0,y0,x1,y1" or four numbers in the page's unit:
    PDF points, image pixels; None for the whole page) alone (docs/elements.md). The caption prompt
    (`prompt="caption"`) is the caption task: a caption is asked as captions are trained
    (`jocr.pipeline.caption`: the asking member, the crop and its own anchor under `anchor`). A region
    outside the page, inverted or too small raises `jocr.layout.elements.RegionError` (a ValueError).
    figures: "none" (default), "files" or "inline": each page's figures become figure blocks of its tree and
    are cut out of the page (`page.figures`: PNG bytes, `.image`); the Markdown names them
    `<stem>_p<N>_fig<K>.png` (`files`, saved with `jocr.layout.figures.write_figures`) or embeds them
    (`inline`) (docs/layout.md, "Figures").
    captions: "none" (default) or "generate": each figure without a printed caption gets the model's caption
    as `generated_caption` in its tree block and `page.figures` (`jocr.pipeline.caption.generate_captions`;
    needs figures "files" or "inline"); the Markdown stays as the page prints it.
    """
    from jocr.pipeline.caption import check_captions_mode, generate_captions, is_caption_prompt

    single = not isinstance(inputs, list | tuple)
    items = [inputs] if single else list(inputs)
    if task == "page" and is_caption_prompt(prompt):
        task = "caption"  # the caption prompt is the caption task (jocr.pipeline.caption)
    if task != "page" or region is not None:
        return _parse_elements(items, single, task, region, pages, model, device, max_tiles, dpi,
                               longest_side, password, ocr, raise_errors, max_tokens, anchor)  # fmt: skip
    captions = check_captions_mode(captions, figures)
    if not isinstance(model, LoadedModel):
        model = load_model(model, device=device, max_tiles=max_tiles)
    loaded = model
    options = LoadOptions(password=password, longest_side=longest_side)
    if dpi is not None:
        options.dpi = float(dpi)
    docs = list(
        iter_documents(
            items,
            loaded,
            pages=pages,
            max_tokens=max_tokens,
            spec=spec,
            batch_size=batch_size,
            prompt=prompt,
            options=options,
            skip_blank=skip_blank,
            anchor=anchor,
            ocr=ocr,
            figures=figures,
        )
    )
    if raise_errors:
        for doc in docs:
            if doc.error:
                raise DocumentError(doc.error)
    if captions == "generate":
        for doc in docs:
            generate_captions(doc, loaded, anchor=anchor, ocr=ocr)
    return docs[0] if single else docs


def _parse_elements(items, single, task, region, pages, model, device, max_tiles, dpi, longest_side, password,
                    ocr, raise_errors, max_tokens, anchor="auto"):  # fmt: skip
    """`parse` for an element task (jocr.pipeline.elements): the model is loaded only for a task it reads."""
    from jocr.layout.elements import RegionError, check_task
    from jocr.pipeline.elements import needs_model, parse_element

    if check_task(task) == "page":
        raise RegionError("a region needs an element task: table, formula or caption")
    if needs_model(task) and not isinstance(model, LoadedModel):
        model = load_model(model, device=device, max_tiles=max_tiles)
    options = LoadOptions(password=password, longest_side=longest_side)
    if dpi is not None:
        options.dpi = float(dpi)
    docs = [
        parse_element(item, task, region, pages, model, options, ocr, max_tokens=max_tokens, anchor=anchor)
        for item in items
    ]
    if raise_errors:
        for doc in docs:
            if doc.error:
                raise DocumentError(doc.error)
    return docs[0] if single else docs
