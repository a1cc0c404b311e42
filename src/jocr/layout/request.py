"""The one place a page becomes model input and model output becomes Markdown.

    builder = PageRequestBuilder(tokenizer, vision, prompt="ocr")
    page = builder.page(image)            # views + prompt ids (image placeholders first, then the prompt)
    ... engine: GenerationRequest(prompt_ids=page.prompt_ids, images=[page.views], ...) ...
    markdown, boxes = builder.markdown(token_ids, page.size, finish_reason)

Parsing, the server, the Reader, training, evaluation and the vLLM processor all go through it, so a page
reads the same everywhere. The layout of the prompt is `Tokenizer.build_prompt` (docs/architecture.md,
"Tokenizer contract"); views are `preprocess_image` (docs/architecture.md, "Vision input").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from jocr.documents.preprocess import preprocess_image, views_token_count
from jocr.layout.answer_tree import anchored_tree
from jocr.layout.formulas import with_formulas
from jocr.layout.grounding_tree import markdown_tree
from jocr.layout.line_rules import lines_tree
from jocr.layout.postprocess import Box, extract_grounding
from jocr.layout.render import page_markdown
from jocr.layout.tree import PageTree
from jocr.lines.hyphens import SOFT_HYPHEN, without_open_broken_word
from jocr.tokenizer import DEFAULT_PROMPT, PROMPTS, Tokenizer
from jocr.types import PageViews


def prompt_text(prompt: str | None) -> str:
    """A task name from `PROMPTS` ("ocr", "free", "grounding", ...), free text, or None for the default."""
    return DEFAULT_PROMPT if prompt is None else PROMPTS.get(prompt, prompt)


@dataclass
class PageInput:
    """One page ready for the engine: its views, its prompt ids, and what post-processing needs."""

    views: PageViews
    prompt_ids: list[int]
    image_tokens: int
    size: tuple[int, int]  # (width, height) of the page image in pixels


def join_windows(texts: Sequence[str]) -> str:
    """The raw output of a page read in several requests (one per anchor window): in order, blank lines
    between them."""
    return texts[0] if len(texts) == 1 else "\n\n".join(t.strip() for t in texts)


def page_text(
    texts: Sequence[str],
    anchors: Sequence[str] = (),
    reasons: Sequence[str | None] = (),
    lines: Sequence | None = None,
    formulas: Sequence = (),
) -> str:
    """A page's text from its requests' outputs (one per anchor window, or the one of an unanchored page).
    An anchored page's text is the Markdown of its document tree (`page_tree`, `jocr.layout.render`): each
    window's tables of prose put back as text (`jocr.layout.prose_tables`), its run references resolved
    against its own anchor, the page's furniture left out (`jocr.layout.furniture`; kept, marked, in the
    tree), paragraphs the model split at every line joined back, words the text layer broke across lines
    joined where their next part goes on the same paragraph. A window whose answer ran out of room (its
    finish reason, in `reasons`, is "length": the model's positions or the request's max_tokens ended
    first) is followed by the runs it never reached, which would otherwise be lost (docs/parsing.md, "Run
    references"). An unanchored page's text is its raw output, which `PageRequestBuilder.markdown` turns
    into Markdown through its tree.

    `anchors` are all the page's windows (furniture is a property of the whole page), or none for an
    unanchored page; `texts` may be the outputs of the first few of them (a page being streamed).
    `reasons`, when given, has one entry per text, None for a window still being written: its text stops
    where more output could still rewrite it (before a table still open, before a broken word), so that
    the text of a page being streamed only ever grows. Without `reasons` every window is complete.
    `lines`, when given, are the page's text-layer lines in the anchor's order (`PageLines.lines`): their
    boxes and font sizes then replace the positions the anchors give. `formulas`, when given, are the
    page's formulas read from its text layer (`jocr.layout.page_read.page_formulas`): the lines inside a
    display formula become one `formula` block of its LaTeX."""
    if not anchors:
        return join_windows(texts)
    if len(texts) > len(anchors):
        raise ValueError(f"{len(texts)} outputs for {len(anchors)} anchor windows")
    tree = anchored_tree(texts, anchors, reasons, lines)
    if formulas:
        tree = with_formulas(tree, list(formulas))
    text = page_markdown(tree)
    if texts and reasons and reasons[len(texts) - 1] is None:
        text = without_open_broken_word(text)
    return text.replace(SOFT_HYPHEN, "-")


def page_tree(
    texts: Sequence[str],
    anchors: Sequence[str] = (),
    reasons: Sequence[str | None] = (),
    lines: Sequence | None = None,
    size: tuple[int, int] = (0, 0),
    page: int = 1,
    finish_reason: str | None = None,
    formulas: Sequence = (),
) -> PageTree:
    """A page's document tree (`jocr.layout.tree`) from the same inputs as `page_text`: an anchored page's
    from its answers and anchors (boxes in points), an unanchored page's from its raw output (grounding
    boxes, when the model wrote them, in pixels of a `size` page image). `finish_reason` is the page's
    (`page_finish_reason` of `reasons` when not given)."""
    if anchors:
        tree = anchored_tree(texts, anchors, reasons, lines, page, image_width=size[0])
        if formulas:
            tree = with_formulas(tree, list(formulas))
        for block in tree.blocks:
            block.markdown = block.markdown.replace(SOFT_HYPHEN, "-")
            block.text = block.text.replace(SOFT_HYPHEN, "-")
        return tree
    reason = finish_reason or (page_finish_reason(list(reasons)) if reasons else None)
    return markdown_tree(join_windows(texts) if texts else "", size[0], size[1], reason, page)


def layer_tree(layer, page: int = 1, formulas: Sequence = ()) -> PageTree:
    """The tree of a page read from its text layer alone (no model answer): every line, by the rules over
    lines (`jocr.layout.line_rules`); the lines of the display formulas found on the page
    (`jocr.layout.formulas.page_formulas`), when given, become `formula` blocks."""
    paper = layer.stats.get("paper") if isinstance(getattr(layer, "stats", None), dict) else None
    tree = lines_tree(layer.lines, layer.width, layer.height, page=page, paper=paper)
    return with_formulas(tree, list(formulas)) if formulas else tree


def page_finish_reason(reasons: Sequence[str | None]) -> str | None:
    """A page's finish reason over its requests: the first that did not stop normally, else the first."""
    return next((r for r in reasons if r != "stop"), reasons[0])


class PageRequestBuilder:
    """Page image -> views + prompt ids; generated ids -> text -> Markdown, for one tokenizer, vision
    config and prompt. Without a tokenizer only `views` works (vLLM tokenizes the prompt itself)."""

    def __init__(self, tokenizer: Tokenizer | None, vision, prompt: str | None = None):
        self.tokenizer = tokenizer
        self.vision = vision
        self.prompt = prompt_text(prompt)

    def views(self, image: Image.Image) -> tuple[PageViews, int]:
        """(views, their image token count) for one image."""
        views = preprocess_image(image, self.vision)
        return views, views_token_count(views, self.vision)

    def prompt_ids(
        self, image_token_counts: int | Sequence[int], text: str | None = None, anchor: str | None = None
    ) -> list[int]:
        """BOS, `<image>` x n per image, then the prompt: this builder's, or `text` verbatim (a request's own
        words, as the server receives them); then the page's anchor when given (`jocr.lines.anchor`)."""
        prompt = self.prompt if text is None else text
        return self.tokenizer.build_prompt(prompt, image_token_counts, anchor=anchor)

    def page(self, image: Image.Image, anchor: str | None = None) -> PageInput:
        return self.pages(image, [anchor])[0]

    def pages(self, image: Image.Image, anchors: Sequence[str | None]) -> list[PageInput]:
        """One input per anchor (the windows of a long page's anchor: `PageAnchor.texts`), sharing the
        image's views."""
        views, n = self.views(image)
        return [
            PageInput(views=views, prompt_ids=self.prompt_ids([n], anchor=a), image_tokens=n, size=image.size)
            for a in anchors
        ]

    def text(self, token_ids: Sequence[int]) -> str:
        """Generated ids -> raw text (special control tokens such as EOS dropped)."""
        return self.tokenizer.decode([int(t) for t in token_ids])

    def page_output(
        self,
        texts: Sequence[str],
        anchors: Sequence[str],
        reasons: Sequence[str | None],
        size: tuple[int, int],
        lines: Sequence | None = None,
        page: int = 1,
        formulas: Sequence = (),
    ) -> tuple[str, list[Box], PageTree]:
        """A finished page's (Markdown, grounding boxes in pixels, document tree) from its requests' outputs:
        what `jocr parse` and `jocr.parse` keep for each page. The Markdown is the tree's."""
        reason = page_finish_reason(list(reasons)) if reasons else None
        markdown, boxes = self.markdown(page_text(texts, anchors, reasons, lines, formulas), size, reason)
        tree = page_tree(texts, anchors, reasons, lines, size, page, formulas=formulas)
        return markdown, boxes, tree

    def markdown(
        self, raw: str | Sequence[int], size: tuple[int, int], finish_reason: str | None = None
    ) -> tuple[str, list[Box]]:
        """Raw text (or generated ids; an anchored page's `page_text`) -> (Markdown, grounding boxes in
        pixels of a `size` page). The Markdown is that of the text's tree (`markdown_tree`): blocks joined
        by blank lines, furniture the model labelled in grounding output left out."""
        if not isinstance(raw, str):
            raw = self.text(raw)
        _, boxes = extract_grounding(raw, size[0], size[1])
        return page_markdown(markdown_tree(raw, size[0], size[1], finish_reason)), boxes
