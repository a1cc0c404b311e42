"""Element tasks over documents (`jocr parse --task`, `jocr.parse(task=...)`): each selected page's element
in a region (or the whole page), read by `jocr.layout.elements`' reader for the task, or by the model with
the task's prompt over the region's pixels (docs/elements.md); a caption by the caption path of
`jocr.pipeline.caption` (the asking member, the crop and the crop's own anchor, as captions are trained).
"""

from __future__ import annotations

from typing import Any

from jocr.documents.pages import DocumentError, LoadOptions, open_source, select_pages
from jocr.layout.elements import (
    MODEL_PROMPTS,
    READERS,
    ElementResult,
    RegionError,
    check_region,
    check_task,
    page_frame,
    page_scale,
    parse_region,
)
from jocr.pipeline.results import Document, PageResult


def needs_model(task: str) -> bool:
    """Whether `task` may be read by the model (else only by a reader over the page's geometry)."""
    task = check_task(task)
    return task not in READERS or task in MODEL_PROMPTS


def parse_element(
    item: Any,
    task: str,
    region=None,
    pages=None,
    model=None,
    options: LoadOptions | None = None,
    ocr: str = "auto",
    name: str | None = None,
    max_tokens: int = 1024,
    anchor: str = "auto",
) -> Document:
    """One input's element for `task` on each selected page: a Document whose pages' Markdown is the
    element's (empty, with the note in `metadata["notes"]`, when none was found). A bad region raises
    `RegionError`; an input that cannot be opened comes back with `.error` set. `anchor` ("auto", "on",
    "off"): whether a caption's prompt carries the crop's anchor (`jocr.pipeline.caption.caption_anchor`)."""
    task = check_task(task)
    box = parse_region(region) if isinstance(region, str) else (None if region is None else tuple(region))
    if box is not None:
        box = parse_region(list(box))
    name = name or (str(item) if not hasattr(item, "size") else "<image>")
    doc = Document(source=name)
    doc.metadata = {"source": name, "task": task, "region": None if box is None else list(box)}
    options = options or LoadOptions()
    try:
        source = open_source(item, options, name=name)
    except DocumentError as exc:
        doc.error = str(exc)
        return doc
    with source:
        try:
            indices = select_pages(pages, source.num_pages, name)
        except DocumentError as exc:
            doc.error = str(exc)
            return doc
        results = []
        for index in indices:
            width, height, unit = page_frame(source, index)
            checked = check_region(box, width, height, unit)
            result = READERS[task](source, index, checked, ocr=ocr) if task in READERS else None
            if result is None and task == "caption":
                result = _caption_element(source, index, checked, unit, model, max_tokens, ocr, anchor)
            elif result is None and task == "formula" and model is not None and model.has_formula_member:
                result = _formula_element(source, index, checked, unit, model, max_tokens)
            elif result is None:
                result = _model_element(source, index, checked, task, unit, model, max_tokens)
            results.append(result)
    doc.metadata["notes"] = [r.note for r in results]
    doc.metadata["elements"] = [r.to_dict() for r in results]
    doc.pages = [PageResult(page=r.page, markdown=r.markdown, finish_reason="stop") for r in results]
    return doc


def _region_pixels(source, index: int, region):
    """The page rendered, cut to `region` (page units) when one is given."""
    image = source.render(index)
    if region is None:
        return image
    scale = page_scale(source, index, image)
    return image.crop(tuple(round(v * scale) for v in region))


def _model_element(source, index: int, region, task: str, unit: str, model, max_tokens: int) -> ElementResult:
    """The model's reading of the region's pixels with the task's prompt."""
    import time

    from jocr.pipeline.stream import iter_documents

    start = time.perf_counter()
    image = _region_pixels(source, index, region)
    if task == "formula":  # read folded, as the formula reader was trained (jocr.documents.fold)
        from jocr.documents.fold import fold_wide

        image = fold_wide(image)
    (doc,) = list(iter_documents([image], model, prompt=MODEL_PROMPTS[task], max_tokens=max_tokens,
                                 anchor="off", ocr="none", skip_blank=False))  # fmt: skip
    markdown = doc.pages[0].markdown if doc.pages else ""
    note = "" if markdown.strip() else (doc.error or "the model read nothing in the region")
    method, seconds = f"model:{MODEL_PROMPTS[task]}", time.perf_counter() - start
    return ElementResult(task, index + 1, markdown, note, region, unit, method, seconds)


def _formula_element(source, index: int, region, unit: str, model, max_tokens: int) -> ElementResult:
    """The region's pixels read by the bundle's formula reader (`jocr.pipeline.formulas.read_crops`)."""
    import time

    from jocr.pipeline.formulas import read_crops

    start = time.perf_counter()
    image = _region_pixels(source, index, region)
    (latex,) = read_crops(model, [image], max_tokens)
    markdown = f"$$\n{latex}\n$$" if latex else ""
    note = "" if latex else "the formula reader read no formula in the region"
    return ElementResult("formula", index + 1, markdown, note, region, unit, "model:formula-reader",
                         time.perf_counter() - start)  # fmt: skip


def _caption_element(source, index: int, region, unit: str, model, max_tokens: int, ocr: str,
                     anchor: str) -> ElementResult:  # fmt: skip
    """The caption of the region (the whole page when None) on the caption path (`jocr.pipeline.caption`)."""
    import time

    from jocr.pipeline.caption import caption_anchor, caption_crops

    start = time.perf_counter()
    crop = _region_pixels(source, index, region)
    try:
        layer = source.text_layer(index) if source.kind == "pdf" else None
    except Exception:  # a text layer that cannot be read: the crop's OCR lines or its pixels alone
        layer = None
    crop_anchor = caption_anchor(model.asker, crop, layer, region, anchor, ocr)
    (caption,) = caption_crops(model, [(crop, crop_anchor)], max_tokens)
    note = caption.error or ("" if caption.text else "the model wrote no caption for the region")
    method = "model:caption" + (" with the crop's anchor" if caption.anchored else "")
    result = ElementResult("caption", index + 1, caption.text, note, region, unit, method,
                           time.perf_counter() - start)  # fmt: skip
    return result


__all__ = ["RegionError", "needs_model", "parse_element"]
