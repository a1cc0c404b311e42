"""Font files for the synthetic pages (`jocr.synth.fonts`): found in the first folder holding them, or a
one-line error naming the folders searched and the package to install."""

from __future__ import annotations

import pytest

from jocr.synth import fonts
from jocr.synth.fonts import FontMissingError


@pytest.fixture
def fresh_cache():
    fonts.font_path.cache_clear()
    yield
    fonts.font_path.cache_clear()


def test_the_first_folder_holding_the_font_wins(tmp_path, monkeypatch, fresh_cache):
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        (folder / "DejaVuSans.ttf").write_bytes(b"")
    monkeypatch.setattr(fonts, "_matplotlib_font_dir", lambda: None)
    monkeypatch.setattr(fonts, "_DEJAVU_DIRS", (str(tmp_path / "none"), str(first), str(second)))
    assert fonts.font_path("sans", "regular") == str(first / "DejaVuSans.ttf")


def test_a_missing_font_names_the_folders_and_the_package(monkeypatch, fresh_cache):
    monkeypatch.setattr(fonts, "_matplotlib_font_dir", lambda: None)
    monkeypatch.setattr(fonts, "_DEJAVU_DIRS", ("/nonexistent/a", "/nonexistent/b"))
    monkeypatch.setattr(fonts, "_CJK_DIRS", ("/nonexistent/c",))
    with pytest.raises(FontMissingError) as latin:
        fonts.font_path("sans", "regular")
    assert str(latin.value) == (
        "font DejaVuSans.ttf not found in /nonexistent/a, /nonexistent/b: "
        "install matplotlib or the Debian package fonts-dejavu-core"
    )
    with pytest.raises(FontMissingError) as cjk:
        fonts.font_path("sans", "regular", True)
    assert str(cjk.value).startswith("font ") and str(cjk.value).endswith(
        " not found in /nonexistent/c: install the Debian package fonts-noto-cjk"
    )
