"""Fonts for synthetic pages, found in installed packages only (nothing is downloaded).

Latin text uses DejaVu Sans / Serif, which matplotlib ships inside its wheel (and Debian's
`fonts-dejavu-core` also provides); Chinese uses Noto Sans / Serif CJK from Debian's `fonts-noto-cjk`.
A missing font raises `FontMissingError` with the package that provides it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from PIL import ImageFont


class FontMissingError(RuntimeError):
    """A font file the generator needs is not installed (the message names the package to install)."""


# family -> style -> file name; DejaVu files are looked up in matplotlib's bundled data, then Debian's.
_DEJAVU = {
    "sans": {"regular": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "italic": "DejaVuSans-Oblique.ttf"},
    "serif": {
        "regular": "DejaVuSerif.ttf",
        "bold": "DejaVuSerif-Bold.ttf",
        "italic": "DejaVuSerif-Italic.ttf",
    },
    "mono": {
        "regular": "DejaVuSansMono.ttf",
        "bold": "DejaVuSansMono-Bold.ttf",
        "italic": "DejaVuSansMono.ttf",
    },
}
_CJK = {
    "sans": {"regular": "NotoSansCJK-Regular.ttc", "bold": "NotoSansCJK-Bold.ttc"},
    "serif": {"regular": "NotoSerifCJK-Regular.ttc", "bold": "NotoSerifCJK-Bold.ttc"},
}
_CJK_DIRS = (
    "/usr/share/fonts/opentype/noto",
    "/usr/share/fonts/noto-cjk",
    "/usr/share/fonts/google-noto-cjk",
)
_DEJAVU_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu")
# In the .ttc collections, index 2 is the Simplified Chinese face (SC) in Debian's Noto CJK packaging.
_CJK_SC_INDEX = 2


@functools.cache
def _matplotlib_font_dir() -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


@functools.cache
def font_path(family: str, style: str = "regular", cjk: bool = False) -> str:
    """The file of a font face; raises FontMissingError naming the package that provides it."""
    if cjk:
        name = _CJK.get(family, _CJK["sans"]).get(
            style, _CJK[family if family in _CJK else "sans"]["regular"]
        )
        return _font_file(name, _CJK_DIRS, "the Debian package fonts-noto-cjk")
    name = _DEJAVU[family][style]
    folders = [str(_matplotlib_font_dir())] if _matplotlib_font_dir() else []
    folders += list(_DEJAVU_DIRS)
    return _font_file(name, folders, "matplotlib or the Debian package fonts-dejavu-core")


def _font_file(name: str, folders, provider: str) -> str:
    """`name` in the first of `folders` that holds it; else FontMissingError naming the folders and what to
    install (`provider`)."""
    for folder in folders:
        candidate = os.path.join(folder, name)
        if os.path.exists(candidate):
            return candidate
    raise FontMissingError(f"font {name} not found in {', '.join(folders)}: install {provider}")


@functools.lru_cache(maxsize=512)
def get_font(family: str, style: str, size: int, cjk: bool = False) -> ImageFont.FreeTypeFont:
    """A cached FreeType font object (loading one costs about a millisecond; pages use dozens)."""
    path = font_path(family, style, cjk)
    index = _CJK_SC_INDEX if cjk else 0
    return ImageFont.truetype(path, size=size, index=index)


def check_fonts(cjk: bool = False) -> None:
    """Raise FontMissingError now rather than halfway through a run."""
    for family in ("sans", "serif"):
        for style in ("regular", "bold"):
            font_path(family, style, False)
            if cjk:
                font_path(family, style, True)
