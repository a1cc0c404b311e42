"""The one place a page's line source is chosen (docs/parsing.md, "OCR line source"):

- a PDF page whose text layer is usable -> the text layer;
- an image, or a PDF page without a usable text layer -> OCR over the page image, when `ocr` is not
  "none" and an engine is installed (`jocr.lines.ocr.resolve_engine`);
- otherwise the text layer's verdict (or None for an image), and the page is read from its image alone.

The CLI, `jocr.parse`, `jocr batch` and the server reach it through `jocr.lines.anchor.page_anchor`.
"""

from __future__ import annotations

from dataclasses import replace

from PIL import Image

from jocr.lines.types import PageLines


def page_lines(
    source,
    index: int,
    image: Image.Image | None = None,
    ocr: str = "auto",
    config: OCRLinesConfig | None = None,  # noqa: F821 (jocr.lines.ocr, imported where OCR runs)
    layer: PageLines | None = None,
) -> PageLines | None:
    """The lines of page `index` of `source` (a `jocr.documents.pages.PageSource`) from its line source, or
    None for an image that OCR does not read. `image` is the page as rendered (needed for OCR: without it
    only the text layer is read). The result's `source` says which source it came from; an OCR result of
    a PDF page has its boxes in points and its note says why the text layer was not used; when OCR finds
    no usable lines either, the text layer's verdict is returned, its note saying what OCR found. `layer`:
    the page's text layer when it was read already (one pass over the page); None reads it here."""
    if layer is None:
        layer = source.text_layer(index)
    if layer is not None and layer.usable:
        return layer
    if image is None or ocr == "none":
        return layer
    # OCR only from here: an exported model (jocr.integrations.hf) reads text layers without it.
    from jocr.lines.ocr import OCRLinesConfig, normalise_ocr_mode, read_image, resolve_engine

    ocr = normalise_ocr_mode(ocr)
    config = config or OCRLinesConfig()
    if resolve_engine(ocr) is None:
        return layer
    page_size = (layer.width, layer.height) if layer is not None and layer.width > 0 else None
    config = replace(config, engine=ocr)
    lines = read_image(image, config, page_size=page_size)
    if layer is None:
        if not lines.usable:
            lines.note = f"the input has no text layer (an image); {lines.source}: {lines.note}"
        return lines
    if not lines.usable:  # the layer's verdict stands; the note adds what OCR found
        layer.note = "; ".join(n for n in (layer.note, f"{lines.source}: {lines.note}") if n)
        return layer
    why = f"text layer {layer.verdict}" + (f" ({layer.note})" if layer.note else "")
    lines.note = "; ".join(n for n in (why, lines.note) if n)
    return lines
