"""The web page renderer's paper sizes, CSS lengths and one-line errors (documents/browser_config.py)."""

from __future__ import annotations

import pytest

from jocr.documents.browser_config import BrowserConfig, first_line, length_inches, paper_inches


def test_paper_formats_in_inches_whatever_the_case():
    assert paper_inches("A4") == paper_inches("a4") == (8.27, 11.7)
    assert paper_inches("Letter") == (8.5, 11.0)
    with pytest.raises(ValueError, match=r"unknown paper format 'B5'; one of letter, "):
        paper_inches("B5")


@pytest.mark.parametrize(
    "length,inches",
    [("1cm", 1 / 2.54), ("10mm", 10 / 25.4), ("0.5in", 0.5), ("96px", 1.0), (" 48 ", 0.5), (192, 2.0)],
)
def test_css_lengths_in_inches(length, inches):
    assert length_inches(length) == pytest.approx(inches)


def test_the_default_printed_page_is_a4_with_1cm_margins():
    config = BrowserConfig()
    assert paper_inches(config.paper) == (8.27, 11.7)
    assert length_inches(config.margin) == pytest.approx(1 / 2.54)


def test_first_line_of_a_browser_error():
    error = RuntimeError("Target closed\n  =========================== logs ===========================\n  x")
    assert first_line(error) == "Target closed"
    assert first_line(RuntimeError("  a   b  ")) == "a b"
    assert first_line(RuntimeError("")) == "RuntimeError"
    assert len(first_line(RuntimeError("y" * 1000))) == 300
