"""The demo page's block overlay in headless Chromium, with the bundled models: a real born-digital page
(data/frozen-real) is uploaded and read; its document tree's blocks are drawn over the page image (one box
a block with a box, where the tree puts it, scaled to the image as shown, in `--draw`'s colours) and a box
and its Markdown highlight each other under the mouse. A screenshot is left in the test's tmp directory.

Needs Debian's `chromium` and the `playwright` package; skipped cleanly without them."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest
from serve_helpers import LiveServer

from jocr.layout.draw import palette_hex
from jocr.serve.app import create_app
from jocr.serve.backend import EngineBackend
from jocr.serve.config import ServeConfig
from jocr.serve.service import OCRService

pytestmark = pytest.mark.browser

PDF = Path(__file__).resolve().parents[2] / "data" / "frozen-real" / "pdfs" / "pdf" / "rintro-p007.pdf"


@pytest.fixture(scope="module")
def bundled_live():
    """The server as `jocr serve` starts it by default: the bundled models (image and anchored)."""
    config = ServeConfig(max_batch=2, max_queue=4)
    backend = EngineBackend.from_dir(None, config.max_batch, config.max_queue)
    config.model_id = backend.model_id
    service = OCRService(backend, config)
    server = LiveServer(create_app(config, service))
    yield server
    server.stop()
    service.close()


@pytest.fixture(scope="module")
def read_page(bundled_live, browser, tmp_path_factory):
    """The demo page after reading PDF page 1, its console errors, and the tree the API gives for it."""
    with httpx.Client(base_url=bundled_live.url, timeout=600) as api:
        body = {"pdf": base64.b64encode(PDF.read_bytes()).decode(), "read": True}
        response = api.post("/v1/pages", json=body)
    assert response.status_code == 200, response.text
    expected = response.json()
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(600_000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(bundled_live.url + "/")
    page.set_input_files("#file", str(PDF))
    page.wait_for_function("document.getElementById('status').textContent.startsWith('Loaded')")
    page.click("#go")
    page.wait_for_function("/^(Done|.*error)/i.test(document.getElementById('status').textContent)")
    page.wait_for_function("document.getElementById('page-image').complete")
    shot = tmp_path_factory.mktemp("overlay") / "demo-overlay.png"
    page.screenshot(path=str(shot), full_page=True)
    yield page, errors, expected, shot
    context.close()


def test_boxes_are_drawn_where_the_tree_puts_them(read_page):
    page, errors, expected, shot = read_page
    assert page.text_content("#status").startswith("Done"), page.text_content("#status")
    assert shot.stat().st_size > 0
    tree = expected["tree"]
    assert tree is not None and tree["source"] == "anchored" and tree["unit"] == "pt"
    assert page.evaluate("window.pageOverlay.tree") == tree  # the demo drew what the API answers
    boxed = [b for b in tree["blocks"] if b["bbox"] is not None]
    assert len(boxed) >= 5
    drawn = page.eval_on_selector_all(
        "#boxes g.box",
        """gs => gs.map(g => { const r = g.querySelector('rect').getBoundingClientRect();
            return {order: Number(g.dataset.block), type: g.dataset.type,
                    label: g.querySelector('text').textContent,
                    stroke: g.querySelector('rect').getAttribute('stroke'),
                    box: [r.left, r.top, r.right, r.bottom]}; })""",
    )
    assert len(drawn) == len(boxed)
    image = page.eval_on_selector(
        "#page-image",
        "i => { const r = i.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }",
    )
    sx, sy = image[2] / tree["width"], image[3] / tree["height"]
    assert sx == pytest.approx(sy, rel=0.01)  # the image keeps the page's aspect ratio
    palette = palette_hex()
    for block, box in zip(boxed, drawn, strict=True):
        assert box["order"] == block["order"] and box["type"] == block["type"]
        assert box["label"] == str(block["order"] + 1)  # numbered in reading order from 1, as --draw does
        assert box["stroke"] == palette[block["type"]]
        x0, y0, x1, y1 = block["bbox"]
        want = [image[0] + x0 * sx, image[1] + y0 * sy, image[0] + x1 * sx, image[1] + y1 * sy]
        assert box["box"] == pytest.approx(want, abs=1.0)
        assert image[0] - 1 <= box["box"][0] <= box["box"][2] <= image[0] + image[2] + 1
    assert errors == []


def test_hovering_a_box_highlights_its_markdown_and_back(read_page):
    page, _, expected, shot = read_page
    blocks = expected["tree"]["blocks"]
    body = [b for b in blocks if not b["furniture"] and b["bbox"] and b["markdown"].strip()]
    # The panes are built block by block, and still read as the page's Markdown.
    assert page.text_content("#source") == expected["content"]
    assert page.eval_on_selector_all("#rendered .md-block", "ns => ns.length") == len(body)
    block = max(body, key=lambda b: (b["bbox"][2] - b["bbox"][0]) * (b["bbox"][3] - b["bbox"][1]))
    order = block["order"]
    markdown = f'#rendered .md-block[data-block="{order}"]'
    box = f'#boxes g.box[data-block="{order}"]'
    page.hover(box + " rect")
    assert "hl" in page.get_attribute(markdown, "class").split()
    assert "hl" in page.get_attribute(box, "class").split()
    assert page.eval_on_selector_all("#rendered .md-block.hl", "ns => ns.length") == 1
    page.screenshot(path=str(shot.with_name("demo-overlay-hover.png")), full_page=True)
    page.mouse.move(1, 1)
    assert page.eval_on_selector_all(".hl", "ns => ns.length") == 0
    other = next(b for b in body if b["order"] != order)
    page.hover(f'#rendered .md-block[data-block="{other["order"]}"]')
    assert "hl" in page.get_attribute(f'#boxes g.box[data-block="{other["order"]}"]', "class").split()
    assert page.eval_on_selector_all("#boxes g.box.hl", "ns => ns.length") == 1
