"""The document tree's written forms agree with the API: `jocr.parse(...).to_dict()` is the JSON file that
`jocr parse --format json` writes (timings aside: they are measured per run), and the HTML file that
`--format html` writes loads in Chromium without a console error. A real page (data/frozen-real), the
bundled models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import jocr
from jocr.cli import main
from jocr.layout.render import page_markdown
from jocr.layout.tree import PageTree

PDF = Path(__file__).resolve().parents[2] / "data" / "frozen-real" / "pdfs" / "pdf" / "rintro-p007.pdf"
CHROMIUM = "/usr/bin/chromium"


def _untimed(data: dict) -> dict:
    pages = [{k: v for k, v in page.items() if k != "timings"} for page in data["pages"]]
    return {**data, "pages": pages}


@pytest.fixture(scope="module")
def parsed() -> dict:
    return jocr.parse(str(PDF), figures="files").to_dict()  # the CLI default


def test_json_file_is_the_documents_dict(parsed, tmp_path, capsys):
    assert main(["parse", "-q", str(PDF), "-o", str(tmp_path), "--format", "json"]) == 0, (
        capsys.readouterr().err
    )
    written = json.loads((tmp_path / f"{PDF.stem}.json").read_text(encoding="utf-8"))
    assert written["pages"][0]["tree"]["blocks"], "the page has a tree"
    assert set(written["pages"][0]["timings"]) == set(parsed["pages"][0]["timings"])
    assert _untimed(written) == _untimed(parsed)
    # one place: each page's Markdown is its tree's, read back from the file
    for page in written["pages"]:
        assert page["markdown"] == page_markdown(PageTree.from_dict(page["tree"]))
    assert (tmp_path / f"{PDF.stem}.md").read_text(encoding="utf-8") == parsed["markdown"] + "\n"


@pytest.mark.browser
def test_html_file_loads_in_chromium_without_console_errors(parsed, tmp_path, capsys):
    sync_api = pytest.importorskip("playwright.sync_api")
    if shutil.which(CHROMIUM) is None:
        pytest.skip("Debian chromium is not installed")
    assert main(["parse", "-q", str(PDF), "-o", str(tmp_path), "--format", "html"]) == 0, (
        capsys.readouterr().err
    )
    html = tmp_path / f"{PDF.stem}.html"
    body = [b for b in parsed["pages"][0]["tree"]["blocks"] if not b["furniture"]]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True
        )
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(html.as_uri(), wait_until="load")
            assert page.eval_on_selector_all("section.page", "ss => ss.length") == 1
            assert page.text_content("h1") == "Preface"
            assert page.eval_on_selector_all("section.page > *", "ns => ns.length") == len(body)
            assert errors == []
        finally:
            browser.close()
