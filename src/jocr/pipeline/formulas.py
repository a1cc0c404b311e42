"""Formulas of pages read from pixels, read by the formula reader (docs/elements.md, "Formulas in page
images").

A page read from its OCR lines (an image, or a scanned PDF page) gets a formula block where the layout
detector finds an equation region (`jocr.layout.regions.CLASS_KINDS`): its box and the OCR text, which is not
the formula. Only a formula reader reads them (`reads_formulas`): the bundle's formula member
(`jocr.model.formula_reader`, a smaller shape made for formula strips), else an image model trained on formula
crops under the formula prompt (`jocr.config.ElementsConfig.formula`); with neither, the blocks keep their OCR
text and nothing is cut. With one, when a page is finished (`jocr.pipeline.stream.finish_page`),
`cut_formula_crops` cuts each such block's box out of the page image (the image is dropped afterwards); then
`read_formulas` reads the crops of a group of pages in one batch with the model's formula prompt
(`PROMPTS["formula"]`, as `jocr parse --task formula` asks an image) and puts the LaTeX in the blocks and the
pages' Markdown: a document's pages in `jocr parse` (the stream, once the document is done), a batch's pages
in `jocr batch` (`jocr.bulk.stages.JocrPageReader`).
"""

from __future__ import annotations

import logging
import re

from jocr.errors import one_line
from jocr.layout.tree import FORMULA, Block, PageTree

# A formula's answer: at most this many tokens (the longest training crops' LaTeX is 300 characters, about
# 200 of the reader's tokens; a reading that runs on is cut here, never looped: the engine's repetition guard
# applies as well).
FORMULA_TOKENS = 240
# Pixels of margin around the block's box when cut out (the training crops have 2-24).
CROP_MARGIN = 6
# The formula reader's mean token log-probability below which a reading is no formula (the region keeps its
# OCR text, `--task formula` answers nothing): set on the development crops (docs/results/
# 2026-12-07-formula-reader.md, "How sure").
MIN_FORMULA_LOGPROB = -0.2
log = logging.getLogger(__name__)
_DISPLAY = re.compile(r"^\s*\$\$\s*(.*?)\s*\$\$\s*$", re.S)


def reads_formulas(loaded) -> bool:
    """Whether the model (a `LoadedModel`) has a formula member or was trained on formula crops."""
    return bool(loaded is not None and (loaded.has_formula_member or loaded.model.config.elements.formula))


def reads_formulas_at(directory) -> bool:
    """`reads_formulas` for a model directory, read from its config without loading weights (a batch job
    decides what its pages keep before any model is loaded); False for what is not a model directory."""
    from jocr.config import OCRConfig
    from jocr.pipeline.model import formula_member

    try:
        return formula_member(directory) is not None or bool(OCRConfig.load(directory).elements.formula)
    except Exception:  # not a model directory: the actor that loads it reports that, once, for the job
        return False


def unread_formulas(tree: PageTree | None) -> list[Block]:
    """The formula blocks of a page read from pixels (`PageTree.from_pixels`) that hold no LaTeX yet."""
    if tree is None or not tree.from_pixels:
        return []
    return [b for b in tree.blocks if b.type == FORMULA and b.latex is None and b.bbox is not None]


def mark_page_formulas(page) -> int:
    """A pixel page's display formulas found among its OCR lines made formula blocks
    (`jocr.layout.formula_lines.mark_formulas`), its Markdown rendered again from the tree; a page whose
    Markdown is not its tree's (a model's answer) is left as it is. Returns how many were made."""
    from jocr.layout.formula_lines import mark_formulas
    from jocr.layout.render import page_markdown

    tree = page.tree
    if tree is None or not tree.from_pixels or page_markdown(tree) != page.markdown:
        return 0
    made = mark_formulas(tree)
    if made:
        page.markdown = page_markdown(tree)
    return made


def cut_formula_crops(tree: PageTree | None, image) -> int:
    """Cuts each unread formula block's box (with `CROP_MARGIN` pixels) out of `image` (the page as read: an
    image in the tree's pixels, or a scanned PDF page rendered at any scale, its tree in points) into the
    block's `crop`. Returns how many were cut."""
    blocks = unread_formulas(tree)
    if image is None:
        return 0
    width, height = image.size
    sx, sy = (width / tree.width, height / tree.height) if tree.unit == "pt" else (1.0, 1.0)
    for block in blocks:
        x0, y0, x1, y1 = (v * s for v, s in zip(block.bbox, (sx, sy, sx, sy)))
        box = (
            max(0, int(x0) - CROP_MARGIN),
            max(0, int(y0) - CROP_MARGIN),
            min(width, int(x1 + 0.999) + CROP_MARGIN),
            min(height, int(y1 + 0.999) + CROP_MARGIN),
        )
        if box[2] - box[0] >= 4 and box[3] - box[1] >= 4:
            block.crop = image.crop(box)
    return len(blocks)


def formula_latex(text: str) -> str:
    """The LaTeX of the reader's answer (`$$\\n...\\n$$`); "" for an answer that is not one formula."""
    found = _DISPLAY.match(text)
    latex = found.group(1).strip() if found else ""
    return "" if "$$" in latex else latex


def read_crops(loaded, crops: list, max_tokens: int = FORMULA_TOKENS) -> list[str]:
    """The LaTeX of each crop (a PIL image), "" for a crop that cannot be read or whose reading did not end:
    by the bundle's formula member when it has one (`read_member_crops`), else by the model under the
    formula prompt."""
    if loaded.has_formula_member:
        return read_member_crops(loaded.formula_reader, crops, max_tokens)
    return read_prompt_crops(loaded, crops, max_tokens)


def read_member_crops(reader, crops: list, max_tokens: int = FORMULA_TOKENS) -> list[str]:
    """`read_crops` by a formula reader ((model, vocab), `jocr.model.formula_reader`): each crop as its
    input strip (`jocr.documents.formula_strip`), read greedily in batches (`jocr.engine.formula`); a
    reading less sure than `MIN_FORMULA_LOGPROB` is none."""
    from jocr.documents.formula_strip import formula_strip
    from jocr.engine.formula import read_strips

    model, vocab = reader
    slots, strips = [], []
    for k, crop in enumerate(crops):
        if min(crop.size) < 2:  # a line of pixels holds no formula
            continue
        slots.append(k)
        strips.append(formula_strip(crop))
    out = [""] * len(crops)
    for k, reading in zip(slots, read_strips(model, vocab, strips, max_tokens) if strips else []):
        sure = reading.finished and reading.mean_logprob >= MIN_FORMULA_LOGPROB
        out[k] = reading.latex.strip() if sure else ""
    return out


def read_prompt_crops(loaded, crops: list, max_tokens: int = FORMULA_TOKENS) -> list[str]:
    """`read_crops` by an image model trained on formula crops: each crop under the formula prompt, folded
    as in training (`jocr.documents.fold`), decoded together."""
    from jocr.documents.fold import fold_wide
    from jocr.engine import GenerationRequest
    from jocr.layout.request import PageRequestBuilder

    builder = PageRequestBuilder(loaded.tokenizer, loaded.vision, "formula")
    engine = loaded.new_engine(0)  # its own: the stream's scheduler may be decoding other pages
    slots, requests = [], []
    for k, crop in enumerate(crops):
        try:
            page = builder.page(fold_wide(crop.convert("RGB")))  # as the reader was trained
        except Exception:  # a degenerate crop: this one stays unread, the others are read
            continue
        request = GenerationRequest(page.prompt_ids, [page.views], max_tokens=max_tokens)
        try:
            engine.check(request)
        except ValueError:
            continue
        slots.append(k)
        requests.append(request)
    out = [""] * len(crops)
    for k, result in zip(slots, engine.generate(requests) if requests else []):
        if result.finish_reason == "stop":
            out[k] = formula_latex(loaded.tokenizer.decode(result.token_ids))
    return out


def read_formulas(pages: list, loaded, max_tokens: int = FORMULA_TOKENS) -> int:
    """Reads the cut formula crops of `pages` (`PageResult`s) in one batch with `loaded`'s image model when
    it reads formulas, sets each block's LaTeX and Markdown and the pages' Markdown; the crops are dropped
    either way, and a reading that fails leaves the blocks' OCR text (a logged warning), never the pages.
    Returns how many formulas were read."""
    from jocr.layout.render import block_markdown, page_markdown, replace_block

    found = [(page, b) for page in pages for b in unread_formulas(page.tree) if b.crop is not None]
    if not found:
        return 0
    crops = [b.crop for _, b in found]
    for _, block in found:
        block.crop = None
    latex = [""] * len(found)
    if reads_formulas(loaded):
        try:
            latex = read_crops(loaded, crops, max_tokens)
        except Exception as exc:  # the formulas stay OCR text; the pages are kept
            log.warning("%d formula crops not read (%s)", len(crops), one_line(exc))
    done = 0
    for (page, block), text in zip(found, latex, strict=True):
        if not text:
            continue
        old = block.markdown
        block.latex = text
        block.markdown = block_markdown(block)
        page.markdown = replace_block(page.markdown, old, block.markdown) or page_markdown(page.tree)
        done += 1
    return done
