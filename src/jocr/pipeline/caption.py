"""Figure captions: a crop of a page -> one or two sentences from the model (docs/elements.md, "Captions").

The request is the one the caption training samples hold (`jocr.train.docqa_data.caption_sample_parts`),
so the model that learnt them is asked what it learnt:

- the model is the bundle's asking member (`LoadedModel.asker`; a bundle without one answers as `jocr ask`
  does without it: anchored prompts to its anchored member, the rest to its image model);
- the image is the crop alone (the page rendered as `jocr parse` renders it, cut at the region:
  `jocr.layout.elements.page_scale`);
- the prompt is `PROMPTS["caption"]` verbatim, built by `jocr.pipeline.ask.question_ids` (the page
  request builder), followed by the crop's own anchor: on a born-digital page the text-layer runs inside
  the region (`jocr.lines.anchor.region_anchor`, on the crop's grid under a header of the crop's size),
  on an image or a PDF page without a usable text layer the OCR lines of the crop; none under anchor
  "off", for a model trained without anchors under "auto", or when the crop holds no text.

A caption is decoded as a typed answer is (`jocr.pipeline.ask_decoding.caption_shape`: one line, not
beginning with markup) and any run reference in it is resolved against its anchor. Used by
`jocr parse --task caption` / `--prompt caption`, `jocr.parse(task="caption")` / `prompt="caption"`, the
server's caption prompt and the page tree's generated captions (`--captions generate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jocr.bbox import BBox
from jocr.errors import one_line
from jocr.layout.request import PageRequestBuilder
from jocr.lines.anchor import reads_lines, region_anchor
from jocr.lines.ocr import read_region
from jocr.lines.references import resolve_references
from jocr.pipeline.ask import AskConfig, _generate, _PageRequests, question_ids
from jocr.pipeline.ask_decoding import CAPTION_TOKENS, caption_shape
from jocr.pipeline.model import LoadedModel
from jocr.tokenizer import PROMPTS

CAPTION_PROMPT = PROMPTS["caption"]


@dataclass
class Caption:
    """One crop's caption: `text` (references resolved; empty when the model wrote nothing), `raw` as the
    model wrote it, whether the prompt carried an anchor, and the error of a crop that was not captioned."""

    text: str = ""
    raw: str = ""
    anchored: bool = False
    finish_reason: str | None = None
    error: str | None = None


def is_caption_prompt(prompt: str | None) -> bool:
    """Whether a parse prompt asks for the caption task: the task name "caption" or its prompt text."""
    text = (prompt or "").strip()
    return text.lower() == "caption" or text == CAPTION_PROMPT


def caption_ids(
    builder: PageRequestBuilder, image_tokens: int | Sequence[int], anchor: str | None
) -> list[int]:
    """The caption prompt's ids for a crop of `image_tokens` image tokens: `question_ids` with the caption
    prompt as the question (BOS, the image placeholders, "\\n" + prompt, then the anchor when given)."""
    return question_ids(builder, image_tokens, CAPTION_PROMPT, anchor)


def caption_anchor(
    loaded: LoadedModel,
    crop,
    layer=None,
    region: BBox | None = None,
    anchor: str = "auto",
    ocr: str = "auto",
) -> str | None:
    """The anchor after the caption prompt for `crop` (module docstring), or None. `loaded` is the model
    that captions (its anchor config decides under "auto"); `layer` the page's text layer (None for an
    image) and `region` the crop's box in its units (None: the whole page). A line source that cannot be
    read leaves the crop to its pixels (never fails it)."""
    config = loaded.anchor_config
    if not reads_lines(anchor, config.version):
        return None
    try:
        if layer is not None and layer.usable:
            box = region if region is not None else (0.0, 0.0, float(layer.width), float(layer.height))
            return region_anchor(layer, box, loaded.tokenizer, config.max_tokens)
        lines = read_region(crop, ocr)  # upright: cut from the page as shown
        if lines is None:
            return None
        return region_anchor(lines, (0.0, 0.0, float(lines.width), float(lines.height)), loaded.tokenizer,
                             config.max_tokens)  # fmt: skip
    except Exception:  # a text layer or OCR failure: the crop alone, as a question's page would be
        return None


def caption_text(raw: str, anchor: str | None) -> str:
    """A caption as read: the first line of the model's text, its run references resolved against the
    crop's anchor."""
    text = raw.strip().split("\n", 1)[0] if raw.strip() else ""
    return resolve_references(text, anchor).strip() if anchor else text.strip()


def caption_crops(
    model: LoadedModel,
    crops: Sequence[tuple[object, str | None]],
    max_tokens: int | None = None,
    spec: str | int = 0,
    batch_size: int | None = None,
) -> list[Caption]:
    """Captions of `crops` ((image, anchor) each, the anchor from `caption_anchor` of the same model),
    decoded together on the model that answers questions (`model.asker`). A crop the model cannot take
    (too large a prompt, an image it cannot prepare) gets its error; the others are captioned."""
    from jocr.engine import GenerationRequest

    asker = model.asker
    builder = PageRequestBuilder(asker.tokenizer, asker.vision)
    cfg = AskConfig(max_tokens=max_tokens, spec=spec, **({"batch_size": batch_size} if batch_size else {}))
    shape = caption_shape(asker.tokenizer, max_tokens or CAPTION_TOKENS)
    entries, requests = [], []
    for number, (crop, anchor) in enumerate(crops, start=1):
        entry = _PageRequests(number, crop.size, [anchor])
        entries.append(entry)
        try:
            views, n = builder.views(crop)
        except Exception as exc:  # e.g. a degenerate crop: this one fails, the others are captioned
            entry.error = f"crop {number}: cannot prepare the image ({one_line(exc)})"
            continue
        ids = caption_ids(builder, n, anchor)
        requests.append((entry, GenerationRequest(ids, [views], **shape.options())))
    _generate(asker, requests, cfg)
    out = []
    for entry in entries:
        anchor = entry.anchors[0]
        if entry.error is not None or not entry.results:
            out.append(Caption(anchored=anchor is not None, error=entry.error or "not captioned"))
            continue
        result = entry.results[0]
        raw = asker.tokenizer.decode(result.token_ids)
        out.append(Caption(caption_text(raw, anchor), raw, anchor is not None, result.finish_reason))
    return out


CAPTION_MODES = ("none", "generate")


def check_captions_mode(mode: str | None, figures: str) -> str:
    """The captions mode, "none" (default) or "generate" (figures without a printed caption get the
    model's caption in the page tree: `generate_captions`); "generate" needs figures to be found ("files"
    or "inline"). One-line ValueError otherwise."""
    value = "none" if mode is None else str(mode).strip().lower()
    if value not in CAPTION_MODES:
        raise ValueError(f"captions must be none or generate, not {mode!r}")
    if value == "generate" and str(figures).lower() == "none":
        raise ValueError("captions 'generate' needs figures found on the page (figures 'files' or 'inline')")
    return value


def uncaptioned_figures(page) -> list:
    """The figure blocks of a page's tree that were cut out (`jocr.layout.figures.place_figures`) and have
    no printed caption linked to them."""
    from jocr.layout.tree import FIGURE

    if page.tree is None or page.error is not None:
        return []
    return [b for b in page.tree.blocks if b.type == FIGURE and b.figure is not None and b.caption is None]


def generate_captions(
    doc, model: LoadedModel, max_tokens: int | None = None, anchor: str = "auto", ocr: str = "auto"
) -> int:
    """Sets `generated_caption` on every figure of `doc` (a parsed `Document` whose pages have figures) that
    has no printed caption: its block in the page tree and its `Figure`. Each crop is the figure as cut out
    of the page; its anchor the text-layer runs inside the figure's box where the page was read with its
    text layer (the tree's unit is then PDF points), else the crop's OCR lines. All of a document's figures
    are captioned in one batch. The Markdown is left as it was (the page does not print these captions).
    Returns how many figures were captioned (a non-empty caption)."""
    from jocr.lines.types import TEXTLAYER

    asker = model.asker
    blocks, crops = [], []
    for page in doc.pages:
        figures = uncaptioned_figures(page)
        if not figures:
            continue
        lines = page.anchor.page_lines if page.anchor is not None else None
        layer = lines if lines is not None and lines.source == TEXTLAYER and page.tree.unit == "pt" else None
        for block in figures:
            crop = block.figure.image
            region = tuple(float(v) for v in block.figure.bbox) if layer is not None else None
            blocks.append(block)
            crops.append((crop, caption_anchor(asker, crop, layer, region, anchor, ocr)))
    if not crops:
        return 0
    done = 0
    for block, caption in zip(blocks, caption_crops(model, crops, max_tokens)):
        if caption.text:
            block.generated_caption = block.figure.generated_caption = caption.text
            done += 1
    return done


__all__ = [
    "CAPTION_PROMPT",
    "Caption",
    "caption_anchor",
    "caption_crops",
    "caption_ids",
    "caption_text",
    "check_captions_mode",
    "generate_captions",
    "is_caption_prompt",
    "uncaptioned_figures",
]
