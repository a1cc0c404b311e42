"""LaTeX math: find formulas in Markdown and compare them by the MathML KaTeX renders, without a browser.

olmOCR-Bench's math test (allenai/olmocr `olmocr/bench/katex/render.py`) renders both the reference and each
candidate formula with KaTeX 0.16.21 (display mode, throwOnError) in Chromium, takes the `<math>` element,
drops the `<annotation>` (which holds the TeX source), strips all whitespace, and passes if the reference's
MathML is a substring of a candidate's. KaTeX's MathML does not depend on a layout engine, so here the same
KaTeX build (vendored from npm, `katex/katex.min.js`, MIT, see `katex/LICENSE`) runs in V8 via mini-racer and
`renderToString` gives the same markup. When the MathML differs, the official scorer compares glyph layouts in
the browser; `mathlayout.py` models that layout. Renders are cached per formula.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from importlib import resources

from jocr.checks import mathlayout

# Candidate formula delimiters in olmOCR-Bench's order; each kind is removed from the text before the next is
# searched, so `$$x$$` is not also read as two `$` formulas.
_PAREN = re.compile(r"\\\((.+?)\\\)", re.DOTALL)
_BRACKET = re.compile(r"\\\[(.+?)\\\]", re.DOTALL)
_DOUBLE_DOLLAR = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
_DOLLAR = re.compile(r"\$(.+?)\$", re.DOTALL)

_SEMANTICS = re.compile(r"<semantics>(.*)</semantics>", re.DOTALL)
_ANNOTATION = re.compile(r"<annotation\b[^>]*>.*?</annotation>", re.DOTALL)
# Whitespace as the official comparison strips it: Unicode spaces plus hair/zero-width spaces, joiners, BOM.
_MATHML_SPACE = re.compile(r"[\s\u200a-\u200d\u2060\ufeff]+")
# renderToString escapes ' and " in text; a browser's serialisation (then BeautifulSoup's) does not.
_TEXT_ENTITIES = {"&#x27;": "'", "&quot;": '"'}

_RENDER_JS = """
function __jocr_katex_mathml(tex) {
  try {
    return [true, katex.renderToString(tex, {displayMode: true, throwOnError: true, output: "mathml"})];
  } catch (err) {
    return [false, String((err && err.message) || err)];
  }
}
function __jocr_katex_batch(texsJson) {
  var texs = JSON.parse(texsJson), out = [];
  for (var i = 0; i < texs.length; i++) {
    var r = __jocr_katex_mathml(texs[i]);
    out.push(r[0] ? r[1] : null);
  }
  return JSON.stringify(out);
}
function __jocr_layout_batch(texsJson, basePx) {
  var texs = JSON.parse(texsJson), out = [];
  for (var i = 0; i < texs.length; i++) out.push(__jocr_layout(texs[i], basePx));
  return JSON.stringify(out);
}
"""


def extract_formulas(markdown: str, include_dollars: bool = True) -> list[str]:
    """Formulas in \\(..\\), \\[..\\] and (unless excluded) $$..$$ and $..$, stripped, in that order."""
    found: list[str] = []
    patterns = [_PAREN, _BRACKET] + ([_DOUBLE_DOLLAR, _DOLLAR] if include_dollars else [])
    rest = markdown
    for pattern in patterns:
        found.extend(m.strip() for m in pattern.findall(rest))
        rest = pattern.sub("", rest)
    return found


class KatexRenderer:
    """KaTeX in an embedded V8 context. Thread-safe; the context is created on first use (about 0.5 s)."""

    def __init__(self, cache_size: int = 65536, timeout_s: float = 10.0):
        self._ctx = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, str | None] = OrderedDict()
        self._glyph_cache: OrderedDict[str, list[mathlayout.Glyph] | None] = OrderedDict()
        self._cache_size = cache_size
        self._timeout_s = timeout_s

    def _context(self):
        if self._ctx is None:
            from py_mini_racer import MiniRacer

            ctx = MiniRacer()
            source = resources.files("jocr.checks").joinpath("katex/katex.min.js").read_text(encoding="utf-8")
            ctx.eval(source)
            ctx.eval(_RENDER_JS)
            ctx.eval(mathlayout.layout_script())
            self._ctx = ctx
        return self._ctx

    def mathml(self, tex: str) -> str | None:
        """The `<math>` markup KaTeX renders for `tex` in display mode, or None if KaTeX rejects it."""
        with self._lock:
            if tex in self._cache:
                self._cache.move_to_end(tex)
                return self._cache[tex]
            try:
                ok, out = self._context().call("__jocr_katex_mathml", tex, timeout_sec=self._timeout_s)
            except Exception:  # a V8 timeout or out-of-memory counts as a formula that does not render
                ok, out = False, ""
            result = out if ok else None
            self._cache[tex] = result
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return result

    def glyphs(self, tex: str) -> list[mathlayout.Glyph] | None:
        """Visible characters of `tex` with their boxes as the official page lays them out (None: invalid)."""
        with self._lock:
            if tex in self._glyph_cache:
                self._glyph_cache.move_to_end(tex)
                return self._glyph_cache[tex]
            try:
                raw = self._context().call(
                    "__jocr_layout_json", tex, mathlayout.font_px(), timeout_sec=self._timeout_s
                )
            except Exception:  # a V8 timeout or out-of-memory counts as a formula that does not render
                raw = None
            result = mathlayout.parse_layout(raw)
            self._glyph_cache[tex] = result
            if len(self._glyph_cache) > self._cache_size:
                self._glyph_cache.popitem(last=False)
            return result

    def _store(self, cache: OrderedDict, tex: str, value) -> None:
        cache[tex] = value
        if len(cache) > self._cache_size:
            cache.popitem(last=False)

    def prefetch(self, texs: list[str], layouts: bool = False) -> None:
        """Render every uncached formula in one call into V8 (each call crosses threads, which costs far more
        than rendering a formula); with `layouts`, their glyph layouts too."""
        with self._lock:
            cache = self._glyph_cache if layouts else self._cache
            todo = list(dict.fromkeys(t for t in texs if t not in cache))
            if not todo:
                return
            fn = "__jocr_layout_batch" if layouts else "__jocr_katex_batch"
            args = (json.dumps(todo), mathlayout.font_px()) if layouts else (json.dumps(todo),)
            try:
                raw = json.loads(self._context().call(fn, *args, timeout_sec=self._timeout_s * len(todo)))
            except Exception:  # fall back to one call per formula, where a failure stays local
                return
            for tex, value in zip(todo, raw):
                self._store(cache, tex, mathlayout.parse_layout(value) if layouts else value)

    def key(self, tex: str) -> str | None:
        """The comparison key: MathML inside `<semantics>` without the annotation, whitespace removed."""
        markup = self.mathml(tex)
        if markup is None:
            return None
        return mathml_key(markup)


_TAG_ATTRS = re.compile(r"<([A-Za-z][\w:-]*)((?:\s+[\w:-]+=\"[^\"]*\")+)\s*(/?)>")
_ATTR = re.compile(r"([\w:-]+)=\"([^\"]*)\"")
# KaTeX's spacing nodes (\, \: \; \! ...) become bare text in the DOM but `<mtext>` in renderToString.
_SPACE_MTEXT = re.compile("<mtext>([\u200a\u2009\u2005\u205f\u2063]+)</mtext>")
_EMPTY_ELEMENT = re.compile(r"<([A-Za-z][\w:-]*)((?:\s+[\w:-]+=\"[^\"]*\")*)\s*></\1>")


def _sorted_attributes(m: re.Match) -> str:
    attrs = " ".join(f'{k}="{v}"' for k, v in sorted(_ATTR.findall(m.group(2))))
    return f"<{m.group(1)} {attrs}{m.group(3)}>"


def mathml_key(markup: str) -> str:
    """Normalise rendered MathML the way olmOCR-Bench compares it (see module docstring). Its BeautifulSoup
    XML round trip writes attributes in alphabetical order and empty elements self-closed (`<mrow/>`), which
    decides substring matches (an `mtable`'s `columnalign`/`rowspacing`, empty groups): both are done here."""
    m = _SEMANTICS.search(markup)
    inner = _ANNOTATION.sub("", m.group(1)) if m else markup
    inner = _TAG_ATTRS.sub(_sorted_attributes, inner)
    for entity, char in _TEXT_ENTITIES.items():
        inner = inner.replace(entity, char)
    # The browser serialises U+00A0 as `&nbsp;`, an entity XML does not define: the XML parser drops it.
    inner = inner.replace("\u00a0", "")
    inner = _SPACE_MTEXT.sub(r"\1", inner)
    inner = _EMPTY_ELEMENT.sub(r"<\1\2/>", inner)  # XML serialisation writes empty elements self-closed
    return _MATHML_SPACE.sub("", inner)


_renderer: KatexRenderer | None = None
_renderer_lock = threading.Lock()


def default_renderer() -> KatexRenderer:
    """The process-wide renderer (one V8 context and one cache shared by all checks)."""
    global _renderer
    with _renderer_lock:
        if _renderer is None:
            _renderer = KatexRenderer()
        return _renderer


def renders(tex: str) -> bool:
    """Whether KaTeX accepts `tex` (what olmOCR-Bench requires of a math test's reference)."""
    return default_renderer().mathml(tex) is not None


def match_any(reference: str, candidates: list[str]) -> bool:
    """True if any candidate matches the reference (as `formulas_match`), rendering in batches: first all
    MathML, then, only if no MathML contains the reference's, all glyph layouts."""
    if any(c == reference for c in candidates):
        return True
    if not candidates:
        return False
    renderer = default_renderer()
    renderer.prefetch([reference, *candidates])
    ref_key = renderer.key(reference)
    if ref_key is None:
        return False
    keys = [renderer.key(c) for c in candidates]
    if any(k is not None and ref_key in k for k in keys):
        return True
    rendered = [c for c, k in zip(candidates, keys) if k is not None]
    if not rendered:
        return False
    renderer.prefetch([reference, *rendered], layouts=True)
    ref_glyphs = renderer.glyphs(reference)
    if ref_glyphs is None:
        return False
    for cand in rendered:
        cand_glyphs = renderer.glyphs(cand)
        if cand_glyphs is not None and mathlayout.layouts_match(ref_glyphs, cand_glyphs):
            return True
    return False


def formulas_match(reference: str, candidate: str) -> bool:
    """True if the candidate renders to MathML that contains the reference's (or the sources are equal)."""
    if reference == candidate:
        return True
    renderer = default_renderer()
    ref_key = renderer.key(reference)
    cand_key = renderer.key(candidate)
    if ref_key is None or cand_key is None:
        return False
    if ref_key in cand_key:
        return True
    # Second chance, as in olmOCR-Bench: the same characters in the same relative places on the page.
    ref_glyphs = renderer.glyphs(reference)
    cand_glyphs = renderer.glyphs(candidate)
    if ref_glyphs is None or cand_glyphs is None:
        return False
    return mathlayout.layouts_match(ref_glyphs, cand_glyphs)
