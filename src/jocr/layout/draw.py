"""A page image with its document tree's blocks drawn on it: each block's box in its type's colour, numbered
in reading order (`jocr parse --draw`), to see at a glance what the tree made of a page."""

from __future__ import annotations

from PIL import Image, ImageDraw

from jocr.bbox import clamp
from jocr.layout.tree import FROM_MARKDOWN, PageTree

COLOURS = {
    "title": (214, 39, 40),
    "heading": (255, 127, 14),
    "paragraph": (31, 119, 180),
    "list_item": (44, 160, 44),
    "table": (148, 103, 189),
    "formula": (140, 86, 75),
    "figure": (227, 119, 194),
    "caption": (188, 189, 34),
    "code": (23, 190, 207),
    "footnote": (127, 127, 127),
    "header": (180, 180, 180),
    "footer": (180, 180, 180),
    "page_number": (180, 180, 180),
}


UNKNOWN_COLOUR = (0, 0, 0)


def palette_hex() -> dict[str, str]:
    """The block colours as CSS hex strings, the one palette `--draw` and the server's demo page
    (`/static/palette.json`) both use; `""` names the colour of a type not in it."""
    out = {name: "#{:02x}{:02x}{:02x}".format(*rgb) for name, rgb in COLOURS.items()}
    out[""] = "#{:02x}{:02x}{:02x}".format(*UNKNOWN_COLOUR)
    return out


BOX_SLACK = 0.5  # in the tree's unit: rounding of coordinates (to_dict keeps two decimals) and float noise


def box_problems(tree: PageTree, slack: float = BOX_SLACK) -> list[str]:
    """What keeps `tree`'s boxes from being drawn faithfully, one line each (empty: none): a block without
    a box on a page whose blocks have positions (every source but `FROM_MARKDOWN`, an unanchored answer
    without grounding boxes), a box not inside the page, a box that does not cover one of its block's
    lines (an anchored block's runs, a line-rules block's lines). The demo's overlay and `--draw` show
    these boxes; `benchmarks/boxes.py` counts them over real pages."""
    problems = []
    for number, block in enumerate(tree.blocks, 1):
        where = f"block {number} ({block.type})"
        if block.bbox is None:
            if tree.source != FROM_MARKDOWN:
                problems.append(f"{where}: no box")
            continue
        x0, y0, x1, y1 = block.bbox
        if not (-slack <= x0 <= x1 <= tree.width + slack and -slack <= y0 <= y1 <= tree.height + slack):
            problems.append(f"{where}: box {list(block.bbox)} not inside the {tree.width}x{tree.height} page")
        for line in block.lines:
            if line.bbox is None:
                continue
            lx0, ly0, lx1, ly1 = line.bbox
            if lx0 < x0 - slack or ly0 < y0 - slack or lx1 > x1 + slack or ly1 > y1 + slack:
                label = f"run {line.run}" if line.run is not None else f"line {line.text[:30]!r}"
                problems.append(f"{where}: box {list(block.bbox)} does not cover {label} {list(line.bbox)}")
    return problems


def draw_tree(image: Image.Image, tree: PageTree) -> Image.Image:
    """A copy of the page `image` with `tree`'s blocks drawn: boxes scaled from the tree's unit to the
    image's pixels and clamped to it, a number (reading order, from 1) at each box's top-left corner."""
    out = image.convert("RGB")
    if tree.width <= 0 or tree.height <= 0:
        return out
    sx, sy = out.width / tree.width, out.height / tree.height
    layer = Image.new("RGBA", out.size, (0, 0, 0, 0))
    pen = ImageDraw.Draw(layer)
    for number, block in enumerate(tree.blocks, 1):
        if block.bbox is None:
            continue
        box = clamp((block.bbox[0] * sx, block.bbox[1] * sy, block.bbox[2] * sx, block.bbox[3] * sy),
                    out.width - 1, out.height - 1)  # fmt: skip
        if box is None:
            continue
        colour = COLOURS.get(block.type, UNKNOWN_COLOUR)
        pen.rectangle(box, outline=colour + (255,), fill=colour + (40,), width=2)
        label = str(number)
        left, top = box[0], max(0.0, box[1] - 11)
        pen.rectangle((left, top, left + 7 * len(label) + 4, top + 11), fill=colour + (230,))
        pen.text((left + 2, top), label, fill=(255, 255, 255, 255))
    out.paste(layer, (0, 0), layer)  # blended by the layer's alpha: compositing without converting the page
    return out


def save_drawn(image: Image.Image, target) -> None:
    """Write a drawn page (`draw_tree`) as `jocr parse --draw` writes it: a PNG at zlib level 1, about twice
    as fast to write as the default level for a file some 7% larger."""
    image.save(target, format="PNG", compress_level=1)
