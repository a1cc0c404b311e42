"""Markdown and HTML rendered from a page's document tree (`jocr.layout.tree`): the one place a page's
blocks become the text users read. Furniture is left out; consecutive list items form one list."""

from __future__ import annotations

import html as html_lib
import re

from jocr.layout.tree import (
    CAPTION,
    CODE,
    FIGURE,
    FOOTNOTE,
    FORMULA,
    FROM_LINES,
    HEADING,
    LIST_ITEM,
    TABLE,
    TITLE,
    Block,
    PageTree,
)

_IMAGE = re.compile(r"!\[((?:[^\]\\]|\\.)*)\]\(([^)\s]+)\)")
_ORDERED = re.compile(r"[0-9]{1,3}[.)]|[a-zA-Z][.)]|\(?[ivxIVX]{1,5}[.)]")


def block_markdown(block: Block) -> str:
    """How a block reads in Markdown, from its type and text (tables and formulas keep their own form)."""
    text = block.text.strip()
    if block.type in (TITLE, HEADING):
        level = 1 if block.type == TITLE else max(1, min(6, block.level or 2))
        return f"{'#' * level} {' '.join(text.split())}" if text else ""
    if block.type == LIST_ITEM:
        marker = block.marker or "-"
        return f"{marker if _ORDERED.fullmatch(marker) else '-'} {text}" if text else ""
    if block.type == CODE:
        return f"```\n{block.text.rstrip()}\n```" if text else ""
    if block.type == TABLE:
        return block.html or text
    if block.type == FORMULA:
        return f"$$\n{block.latex}\n$$" if block.latex else text
    return text


def page_markdown(tree: PageTree) -> str:
    """The page's Markdown: its body blocks' Markdown in reading order, blank lines between them; the list
    items the rules over lines found (`FROM_LINES`) on consecutive lines, one list (a model's answer keeps
    the separation it wrote)."""
    out: list[str] = []
    previous: Block | None = None
    tight = tree.source == FROM_LINES
    for block in tree.body:
        md = block.markdown.strip("\n")
        if not md.strip():
            continue
        if out:
            together = (
                tight and previous is not None and previous.type == LIST_ITEM and block.type == LIST_ITEM
            )
            out.append("\n" if together else "\n\n")
        out.append(md)
        previous = block
    return "".join(out)


def replace_block(markdown: str, old: str, new: str) -> str | None:
    """`markdown` (a page's, blocks between blank lines) with the block whose Markdown is `old` written as
    `new` ("" leaves it out); None where `old` is not a block of its own there (the caller renders the tree
    again)."""
    padded = f"\n\n{markdown}\n\n"
    piece = f"\n\n{old}\n\n"
    if not old or piece not in padded:
        return None
    return padded.replace(piece, f"\n\n{new}\n\n" if new else "\n\n", 1)[2:-2]


def page_html(tree: PageTree) -> str:
    """The page's body as an HTML fragment (one `<section>`), list items grouped into lists; a block's
    text is escaped, a table's HTML kept as the model or the rules wrote it."""
    parts = [f'<section class="page" data-page="{tree.page}">']
    open_list: str | None = None
    for block in tree.body:
        tag = "ol" if block.type == LIST_ITEM and _ORDERED.fullmatch(block.marker or "") else "ul"
        if open_list and (block.type != LIST_ITEM or tag != open_list):
            parts.append(f"</{open_list}>")
            open_list = None
        if block.type == LIST_ITEM and open_list is None:
            parts.append(f"<{tag}>")
            open_list = tag
        parts.append(_block_html(block))
    if open_list:
        parts.append(f"</{open_list}>")
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _block_html(block: Block) -> str:
    text = html_lib.escape(block.text.strip(), quote=False)
    if not text and block.type not in (TABLE, FORMULA, FIGURE):
        return ""
    if block.type in (TITLE, HEADING):
        level = 1 if block.type == TITLE else max(1, min(6, block.level or 2))
        return f"<h{level}>{text}</h{level}>"
    if block.type == LIST_ITEM:
        return f"<li>{text}</li>"
    if block.type == TABLE:
        return block.html or f"<p>{text}</p>"
    if block.type == FORMULA:
        latex = html_lib.escape(block.latex or block.text, quote=False)
        return f'<div class="math display">\\[{latex}\\]</div>'
    if block.type == CODE:
        return f"<pre><code>{html_lib.escape(block.text.rstrip(), quote=False)}</code></pre>"
    if block.type == CAPTION:
        return f'<p class="caption">{text}</p>'
    if block.type == FOOTNOTE:
        return f'<aside class="footnote">{text}</aside>'
    if block.type == FIGURE:
        image = _IMAGE.search(block.markdown or "")
        if image is not None:  # a figure cut out of the page (jocr.layout.figures), or the model's image
            alt = html_lib.escape(image.group(1).replace("\\", ""), quote=True)
            src = html_lib.escape(image.group(2), quote=True)
            return f'<figure><img src="{src}" alt="{alt}"></figure>'
        return f"<figure>{text}</figure>" if text else "<figure></figure>"
    return f"<p>{text}</p>"


def document_html(trees: list[PageTree], title: str = "") -> str:
    """A whole HTML document of pages' trees, one `<section>` a page."""
    head = f"<title>{html_lib.escape(title, quote=False)}</title>" if title else ""
    body = "\n".join(page_html(t) for t in trees)
    head = f'<head><meta charset="utf-8">{head}</head>'
    return f"<!DOCTYPE html>\n<html>\n{head}\n<body>\n{body}\n</body>\n</html>\n"
