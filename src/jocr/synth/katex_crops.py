"""Formula crops typeset by KaTeX in Chromium, for the formula reader (docs/training.md, "The formula
reader").

matplotlib's mathtext (`jocr.synth.formula_crops`) cannot typeset `\\text`, matrices, cases, `\\mathbb` or
`\\mathcal`, and its Computer Modern is not TeX's: spacing, script placement and big delimiters differ from
what papers print. KaTeX lays formulas out by TeX's rules in fonts made from Computer Modern and the AMS
fonts (Debian's `libjs-katex` and `fonts-katex`), so its crops look like a LaTeX paper's. Formulas come from
`jocr.synth.paper_formulas`; a crop is the formula's ink cut from a screenshot, put on paper with a margin and
degraded like a scan as the mathtext crops are (`formula_crops.paper_crop`).

    with KatexTypesetter() as renderer:
        crops = katex_crops(range(100), renderer)      # [(RGB crop, LaTeX), ...], a refused formula left out
"""

from __future__ import annotations

import io
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from jocr.synth.formula_crops import paper_crop
from jocr.synth.paper_formulas import long_paper_formula, paper_formula
from jocr.synth.vector import VectorRenderer

KATEX_DIR = Path("/usr/share/javascript/katex")  # Debian's libjs-katex; its fonts/ are fonts-katex's
_INK = 12  # a pixel darker than white by more than this is ink


@dataclass
class KatexCropConfig:
    """Glyph size (CSS px per em) and margin ranges, the widest formula, its shortest and longest LaTeX
    (others are drawn again), the share of crops degraded like scans, and whether the formulas are
    `long_paper_formula`'s (long chains and aligned rows) instead of `paper_formula`'s."""

    size_px: tuple[int, int] = (16, 36)
    margin_px: tuple[int, int] = (2, 24)
    max_width_px: int = 1600
    max_chars: int = 150
    degrade_share: float = 0.5
    min_chars: int = 0
    long: bool = False
    faces: tuple[str, ...] = ()  # typefaces for letters, digits and words (`coverages`), drawn per crop
    face_share: float = 0.0  # the share of crops set in one of `faces` (the rest in KaTeX's own)


# Long formulas: 110-300 characters of LaTeX, wider crops (the reader's strip narrows them to its width).
LONG_CROPS = KatexCropConfig(size_px=(16, 30), max_width_px=3000, max_chars=300, min_chars=110, long=True)
# Papers are set in other faces than Computer Modern: Times (Termes, Liberation Serif), Palatino (Pagella),
# Century (Schola), Bookman (Bonum), Libertine, DejaVu Serif (Debian's fonts-texgyre, fonts-linuxlibertine,
# fonts-liberation, fonts-dejavu-core).
FACES = (
    "TeX Gyre Termes", "TeX Gyre Pagella", "TeX Gyre Schola", "TeX Gyre Bonum", "Linux Libertine O",
    "Liberation Serif", "DejaVu Serif",
)  # fmt: skip
FACED_CROPS = KatexCropConfig(faces=FACES, face_share=0.75)


_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="{css}"><script src="{js}"></script>
<style>body {{ margin: 0; background: #fff; color: #000; }}
div.f {{ width: max-content; padding: 6px 10px; }} .katex-display {{ margin: 0; }}
div.faced .katex, div.faced .katex .mathrm, div.faced .katex .textrm {{ font-family: var(--face); }}
div.faced .katex .mathnormal, div.faced .katex .mathit {{ font-family: var(--face); font-style: italic; }}
div.faced .katex .mathbf, div.faced .katex .boldsymbol {{ font-family: var(--face); font-weight: bold; }}
</style>
</head><body></body></html>"""

_RENDER = """(items) => {
  const out = [];
  for (const [tex, px, face] of items) {
    const div = document.createElement('div');
    div.className = face ? 'f faced' : 'f';
    div.style.fontSize = px + 'px';
    if (face) div.style.setProperty('--face', '"' + face + '"');
    document.body.appendChild(div);
    try { katex.render(tex, div, {displayMode: true, throwOnError: true}); out.push(true); }
    catch (err) { div.remove(); out.push(false); }
  }
  return document.fonts.ready.then(() => {
    // whole-pixel heights: every formula starts on a whole pixel, so a formula prints the same pixels
    // wherever it stands in a batch
    document.querySelectorAll('div.f').forEach(d => {
      d.style.height = Math.ceil(d.getBoundingClientRect().height) + 'px';
    });
    const boxes = Array.from(document.querySelectorAll('div.f')).map(d => {
      const r = d.getBoundingClientRect();
      return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];
    });
    return [out, boxes];
  });
}"""


class KatexTypesetter(VectorRenderer):
    """One headless Chromium with KaTeX loaded; `coverages` typesets a batch of formulas at once."""

    def __init__(self, executable: str | None = None, katex_dir: Path = KATEX_DIR):
        super().__init__(**({"executable": executable} if executable else {}))
        self.katex_dir = Path(katex_dir)
        self._folder: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> KatexTypesetter:
        if not (self.katex_dir / "katex.min.js").exists():
            raise FileNotFoundError(f"KaTeX not found in {self.katex_dir} (Debian: apt install libjs-katex)")
        super().__enter__()
        self._folder = tempfile.TemporaryDirectory(prefix="jocr-katex-")
        self._html = Path(self._folder.name) / "page.html"
        css, js = (f"file://{self.katex_dir / name}" for name in ("katex.min.css", "katex.min.js"))
        self._html.write_text(_PAGE.format(css=css, js=js))
        self._page.set_viewport_size({"width": 2400, "height": 800})
        return self

    def close(self) -> None:
        super().close()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def coverages(self, items: list[tuple]) -> list[np.ndarray | None]:
        """Each (LaTeX, size in px per em[, typeface]) typeset in display style -> its ink (H, W uint8, ink
        255) cut to the ink's bounding box; None where KaTeX refused the formula or it printed no ink. A
        typeface (a font family installed on the machine) sets the letters, digits, words and the signs of
        KaTeX's main font in place of KaTeX's Computer Modern; big operators, delimiters and symbols keep
        KaTeX's fonts."""
        page = self._page
        page.goto(self._html.as_uri(), wait_until="load")
        rendered, boxes = page.evaluate(
            _RENDER, [[item[0], int(item[1]), item[2] if len(item) > 2 else ""] for item in items]
        )
        shot = Image.open(io.BytesIO(page.screenshot(full_page=True, type="png"))).convert("L")
        ink = 255 - np.asarray(shot, dtype=np.int16)  # (H, W)
        out: list[np.ndarray | None] = []
        boxes_left = iter(boxes)
        for ok in rendered:
            if not ok:
                out.append(None)
                continue
            x, y, w, h = next(boxes_left)
            region = ink[int(y) : int(np.ceil(y + h)), int(x) : int(np.ceil(x + w))]
            rows, cols = np.nonzero(region > _INK)
            if rows.size == 0:
                out.append(None)
                continue
            cut = region[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
            out.append(np.clip(cut, 0, 255).astype(np.uint8))
        return out


def _draw(seed: int, cfg: KatexCropConfig) -> tuple[random.Random, str, int, str]:
    rng = random.Random(f"jocr-katex-crop/{seed}")
    grammar = long_paper_formula if cfg.long else paper_formula
    while True:
        latex = grammar(rng)
        if cfg.min_chars <= len(latex) <= cfg.max_chars:
            break
    size = rng.randint(*cfg.size_px)
    face = rng.choice(cfg.faces) if cfg.faces and rng.random() < cfg.face_share else ""
    return rng, latex, size, face


def katex_crops(
    seeds, renderer: KatexTypesetter, cfg: KatexCropConfig | None = None, degrade: bool = False
) -> list[tuple[Image.Image, str]]:
    """(RGB crop, LaTeX) of formula `seed` for each seed, deterministic per seed; a formula KaTeX refuses
    or wider than `cfg.max_width_px` is left out (so the list may be shorter than `seeds`)."""
    cfg = cfg or KatexCropConfig()
    drawn = [_draw(seed, cfg) for seed in seeds]
    coverages = renderer.coverages([(latex, size, face) for _, latex, size, face in drawn])
    out = []
    for (rng, latex, _, _), coverage in zip(drawn, coverages):
        if coverage is None or coverage.shape[1] > cfg.max_width_px:
            continue
        out.append((paper_crop(coverage, rng, cfg.margin_px, cfg.degrade_share, degrade), latex))
    return out


def refused(latex: list[str], renderer: KatexTypesetter) -> list[str]:
    """The formulas among `latex` KaTeX refuses to typeset (for tests of the grammar)."""
    return [tex for tex, cov in zip(latex, renderer.coverages([(tex, 20) for tex in latex])) if cov is None]
