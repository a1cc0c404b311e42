"""The demo page in headless Chromium: upload an image, see its page image and its Markdown (the pipeline's
transcription); the page's renderer shows HTML tables and KaTeX formulas and escapes everything else.

Needs Debian's `chromium` and the `playwright` package; skipped cleanly without them."""

from __future__ import annotations

import pytest
from serve_helpers import page_image, pipeline_markdown

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser, live):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(live.url + "/")
    yield page
    context.close()


def test_upload_image_shows_markdown(page, tiny_model, tokenizer, tmp_path):
    image = page_image(5)
    path = tmp_path / "page.png"
    image.save(path)
    expected = pipeline_markdown(tiny_model, tokenizer, image)[0]
    page.set_input_files("#file", str(path))
    page.wait_for_function("document.getElementById('status').textContent.startsWith('Loaded')")
    page.click("#go")
    page.wait_for_function("document.getElementById('status').textContent.startsWith('Done')")
    assert page.text_content("#source") == expected
    assert page.get_attribute("#page-image", "src").startswith("data:image/png;base64,")
    assert page.get_attribute("#page", "max") == "1"
    assert page.eval_on_selector("#status", "e => e.className") == ""


def test_bad_upload_shows_the_error(page, tmp_path):
    path = tmp_path / "notes.png"
    path.write_bytes(b"this is not an image")
    page.set_input_files("#file", str(path))
    page.wait_for_function("document.getElementById('status').textContent.startsWith('Loaded')")
    page.click("#go")
    page.wait_for_function("document.getElementById('status').className === 'error'")
    assert "unsupported file type" in page.text_content("#status")


def test_renderer_tables_formulas_and_escaping(page):
    markdown = (
        "# Title\n\nInline $x^2$ and display:\n\n$$\\frac{a}{b}$$\n\n"
        '<table><tr><td colspan="2" onclick="alert(1)">A</td></tr><tr><td>1</td><td>2</td></tr></table>\n\n'
        "| h1 | h2 |\n|---|---|\n| c1 | c2 |\n\n<script>window.pwned = 1</script><img src=x onerror=alert(1)>"
    )
    html = page.evaluate("md => renderMarkdown(md)", markdown)
    page.evaluate("html => { document.getElementById('rendered').innerHTML = html; }", html)
    assert page.eval_on_selector_all("#rendered table", "ts => ts.length") == 2
    assert page.get_attribute("#rendered td[colspan]", "colspan") == "2"
    assert page.get_attribute("#rendered td[colspan]", "onclick") is None
    assert page.eval_on_selector_all("#rendered script, #rendered img", "es => es.length") == 0
    assert page.evaluate("window.pwned") is None
    assert page.text_content("#rendered h1") == "Title"
    # KaTeX is served from the package (no CDN): formulas become MathML; without it they stay LaTeX source.
    if page.evaluate("!!window.katex"):
        assert page.eval_on_selector_all("#rendered math", "ms => ms.length") == 2
    else:
        assert page.eval_on_selector_all("#rendered code.math", "cs => cs.length") == 2
