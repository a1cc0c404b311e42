"""Where KaTeX's glyphs land on the page, computed without a browser, for olmOCR-Bench's second math
comparison.

When the MathML of a candidate formula does not contain the reference's, olmOCR-Bench (allenai/olmocr
`olmocr/bench/katex/render.py`, `compare_rendered_equations`) compares layouts: it takes every innermost
`<span>` with visible text from the browser-rendered KaTeX HTML, splits it into characters of equal width, and
passes if each reference character can be assigned a distinct candidate character with the same text such that
their nearest neighbours up, down, left and right (centres within 5 px on the other axis) correspond too.

This module lays out KaTeX's HTML tree (`katex.__renderToHTMLTree`) the way Chromium does for that page:
24 px container, `.katex` at 1.21 em, KaTeX's own web fonts absent (the official page injects the CSS without
its font files), so glyphs fall back to Liberation Serif (Times metrics; widths measured once into
`katex/fallback_widths.json`), vertical offsets from KaTeX's explicit em styles (vlist `top`, pstrut heights,
`vertical-align`, relative `top`), size changes from the `sizing reset-sizeA sizeB` classes, margins from
inline styles and italic corrections, vlists centred in fractions, accents and limits, and aligned as array
columns say. It is a model of the browser, not the browser: docs/checks.md says where verdicts could differ.
The glyph widths in `fallback_widths.json` were measured with Pillow from Debian's LiberationSerif-Regular
and -Italic TTFs (1000 px em) for ASCII, Greek and common math symbols; other glyphs use KaTeX's metrics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

# KaTeX's sizing multipliers (katex.css `.sizing.reset-sizeA.sizeB` = SIZES[B] / SIZES[A]).
_LAYOUT_JS = r"""
var __jocr_widths = {regular: {}, italic: {}};
function __jocr_layout_json(tex, basePx) {
  var spans = __jocr_layout(tex, basePx);
  return spans === null ? null : JSON.stringify(spans);
}
function __jocr_layout(tex, basePx) {
  var tree;
  try {
    tree = katex.__renderToHTMLTree(tex, {displayMode: true, throwOnError: true});
  } catch (err) {
    return null;
  }
  var SIZES = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.44, 1.728, 2.074, 2.488];
  var ASCENT = 0.891, HEIGHT = 1.107;  // Liberation Serif content area, in em
  var out = [];
  function em(v) {
    if (!v) return 0;
    var m = /^(-?[0-9.]+)em$/.exec(String(v));
    return m ? parseFloat(m[1]) : 0;
  }
  function has(node, cls) { return node.classes && node.classes.indexOf(cls) >= 0; }
  function sizeOf(node, fs) {
    if (!(has(node, "sizing") || has(node, "fontsize-ensurer"))) return fs;
    var from = 6, to = 6;
    for (var i = 0; i < node.classes.length; i++) {
      var c = node.classes[i], m;
      if ((m = /^reset-size(\d+)$/.exec(c))) from = parseInt(m[1]);
      else if ((m = /^size(\d+)$/.exec(c))) to = parseInt(m[1]);
    }
    return fs * SIZES[to - 1] / SIZES[from - 1];
  }
  function isItalic(classes) {
    for (var i = 0; i < classes.length; i++) {
      var c = classes[i];
      if (c === "mathnormal" || c === "mathit" || c === "textit" || c === "boldsymbol" || c === "mathboldit")
        return true;
    }
    return false;
  }
  function glyphWidth(ch, italic, katexEm) {
    var table = __jocr_widths[italic ? "italic" : "regular"];
    if (Object.prototype.hasOwnProperty.call(table, ch)) return table[ch];
    return katexEm;
  }
  // Lays out `node` with its left edge at x and its baseline at base (px); returns its advance width (px).
  function lay(node, x, base, fs, emit, centre) {
    if (!node.children) {
      if (typeof node.text !== "string") return 0;
      var text = node.text, italic = isItalic(node.classes || []);
      var w = 0, chars = Array.from(text);
      var perChar = chars.length ? (node.width || 0) / chars.length : 0;
      for (var i = 0; i < chars.length; i++) w += glyphWidth(chars[i], italic, perChar) * fs;
      var mr = node.italic > 0 ? node.italic * fs : 0;
      var st = node.style || {};
      var ml = em(st.marginLeft) * fs;
      mr += em(st.marginRight) * fs;
      var shift = st.position === "relative" ? em(st.top) * fs : 0;
      if (emit && text.replace(/[\s\u200b-\u200d\u2060\ufeff]/g, "") !== "")
        out.push([text, x + ml, base + shift - ASCENT * fs, w, HEIGHT * fs]);
      return ml + w + mr;
    }
    var st = node.style || {};
    fs = sizeOf(node, fs);
    var ml = (em(st.marginLeft) + em(st.paddingLeft)) * fs, mr = (em(st.marginRight) + em(st.paddingRight)) *
    fs;
    if (st.position === "relative" || (st.top && !has(node, "vlist"))) base += em(st.top) * fs;
    if (st.verticalAlign && !has(node, "strut")) base -= em(st.verticalAlign) * fs;
    var inner = 0;
    if (has(node, "vlist")) {
      var widths = [];
      for (var k = 0; k < node.children.length; k++) {
        var wrap = node.children[k];
        var wst = wrap.style || {}, kids = wrap.children || [];
        var wml = em(wst.marginLeft) * fs, wmr = em(wst.marginRight) * fs, cw = 0;
        for (var j = 0; j < kids.length; j++) cw += lay(kids[j], 0, 0, fs, false, 0);
        widths.push(wml + cw + wmr);
        inner = Math.max(inner, wml + cw + wmr);
      }
      if (emit) {
        for (var k = 0; k < node.children.length; k++) {
          var wrap = node.children[k];
          var wst = wrap.style || {}, kids = wrap.children || [];
          var pstrut = 0;
          for (var j = 0; j < kids.length; j++) if (has(kids[j], "pstrut")) pstrut = em((kids[j].style ||
          {}).height);
          var childBase = base + (em(wst.top) + pstrut) * fs;
          var cx = x + ml + em(wst.marginLeft) * fs + (inner - widths[k]) * centre;
          for (var j = 0; j < kids.length; j++) cx += lay(kids[j], cx, childBase, fs, true, 0);
        }
      }
    } else if (has(node, "vlist-s")) {
      inner = 0;  // the Safari strut cell: Chromium gives it no advance in the inline-table
    } else {
      // Horizontal alignment of a vlist's rows: 0 left, 0.5 centred (fractions, accents, limits, centred
      // array columns), 1 right (right-aligned array columns such as the left column of `aligned`).
      var kidAlign = 0;
      if (has(node, "mfrac") || has(node, "accent") || has(node, "op-limits") || has(node, "col-align-c"))
        kidAlign = 0.5;
      else if (has(node, "col-align-r")) kidAlign = 1;
      var cx = x + ml;
      for (var k = 0; k < node.children.length; k++) {
        var kid = node.children[k];
        var isVlist = has(kid, "vlist-t") || has(kid, "vlist-r") || has(kid, "vlist");
        var align = centre ? centre : (has(kid, "vlist-t") ? kidAlign : 0);
        cx += lay(kid, cx, base, fs, emit, isVlist ? align : 0);
      }
      inner = cx - x - ml;
      if (has(node, "nulldelimiter")) inner = Math.max(inner, 0.12 * fs);
    }
    inner = Math.max(inner, em(st.minWidth) * fs, em(st.width) * fs);
    return ml + inner + mr;
  }
  lay(tree, 0, 0, basePx, true, 0);
  return out;
}
"""

_FONT_PX = 24.0 * 1.21  # olmOCR's container font-size times katex.css `.katex { font-size: 1.21em }`
_TOLERANCE_PX = 5.0  # olmOCR's compute_neighbors tolerance
_SPACES = str.maketrans("", "", " \t\n\r\f\v\u200a\u200b\u200c\u200d\u2060\ufeff\u00a0\u2009\u2002\u2003")


@dataclass(frozen=True)
class Glyph:
    """One visible character and its box (px): x, y of the top-left corner, width, height."""

    text: str
    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


def _widths_json() -> str:
    return resources.files("jocr.checks").joinpath("katex/fallback_widths.json").read_text(encoding="utf-8")


def layout_script() -> str:
    """JavaScript defining `__jocr_layout_json(tex, basePx)`; run after katex.min.js."""
    return _LAYOUT_JS + "\n__jocr_widths = " + _widths_json() + ";\n"


def glyphs_from_spans(spans: list[list]) -> list[Glyph]:
    """Split each span into equal-width characters after removing whitespace (as the official scorer does)."""
    glyphs: list[Glyph] = []
    for text, x, y, w, h in spans:
        chars = str(text).strip().translate(_SPACES)
        chars = "".join(ch for ch in chars if not ch.isspace())
        if not chars:
            continue
        step = w / len(chars)
        glyphs.extend(Glyph(ch, x + i * step, y, step, h) for i, ch in enumerate(chars))
    return glyphs


def _neighbours(glyphs: list[Glyph], tol: float = _TOLERANCE_PX) -> list[dict[str, int | None]]:
    """Nearest glyph above, below, left and right of each glyph (centre within `tol` on the other axis)."""
    result = []
    for i, g in enumerate(glyphs):
        best: dict[str, tuple[float, int] | None] = {"up": None, "down": None, "left": None, "right": None}
        for j, o in enumerate(glyphs):
            if i == j:
                continue
            dx, dy = o.cx - g.cx, o.cy - g.cy
            if abs(dx) <= tol:
                if dy < 0 and (best["up"] is None or -dy < best["up"][0]):
                    best["up"] = (-dy, j)
                if dy > 0 and (best["down"] is None or dy < best["down"][0]):
                    best["down"] = (dy, j)
            if abs(dy) <= tol:
                if dx < 0 and (best["left"] is None or -dx < best["left"][0]):
                    best["left"] = (-dx, j)
                if dx > 0 and (best["right"] is None or dx < best["right"][0]):
                    best["right"] = (dx, j)
        result.append({k: (v[1] if v is not None else None) for k, v in best.items()})
    return result


def layouts_match(reference: list[Glyph], candidate: list[Glyph], max_steps: int = 200_000) -> bool:
    """Can every reference glyph be mapped to a distinct candidate glyph with the same character so that each
    reference neighbour relation is mirrored in the candidate? (Backtracking, bounded by `max_steps`.)"""
    if not reference:
        return True
    options = []
    for g in reference:
        cands = [j for j, c in enumerate(candidate) if c.text == g.text]
        if not cands:
            return False
        options.append(cands)
    ref_nb = _neighbours(reference)
    cand_nb = _neighbours(candidate)
    used = [False] * len(candidate)
    assign: dict[int, int] = {}
    steps = 0

    def consistent(i: int, j: int) -> bool:
        for direction, rn in ref_nb[i].items():
            if rn is None:
                continue
            cn = cand_nb[j][direction]
            if cn is None:
                return False
            if rn in assign:
                if assign[rn] != cn:
                    return False
            elif candidate[cn].text != reference[rn].text:
                return False
        return True

    def search(i: int) -> bool:
        nonlocal steps
        if i == len(reference):
            return True
        for j in options[i]:
            steps += 1
            if steps > max_steps:
                return False
            if used[j] or not consistent(i, j):
                continue
            used[j] = True
            assign[i] = j
            if search(i + 1):
                return True
            used[j] = False
            del assign[i]
        return False

    return search(0)


def font_px() -> float:
    return _FONT_PX


def parse_layout(result: object) -> list[Glyph] | None:
    """Glyphs from the layout script's return value (None when KaTeX rejected the formula)."""
    if result is None:
        return None
    spans = json.loads(result) if isinstance(result, str) else list(result)
    return glyphs_from_spans([list(s) for s in spans])
