"""OmniDocBench's page splitting and normalisers (opendatalab/OmniDocBench `utils/extract.py` `md_tex_filter`,
`utils/data_preprocess.py`): a page's Markdown cut into text, formula and table blocks, and the normal forms
in which blocks are compared. The matching and the metrics over them are in `jocr.checks.omnidoc`.
"""

from __future__ import annotations

import html as html_lib
import re
import unicodedata
from dataclasses import dataclass

FORMULA_FILTERS = (
    "\\mathbf", "\\mathrm", "\\mathnormal", "\\mathit", "\\mathbb", "\\mathcal", "\\mathscr", "\\mathfrak",
    "\\mathsf", "\\mathtt", "\\textbf", "\\text", "\\boldmath", "\\boldsymbol", "\\operatorname", "\\bm",
    "\\symbfit", "\\mathbfcal", "\\symbf", "\\scriptscriptstyle", "\\notag", "\\setlength", "\\coloneqq",
    "\\space", "\\thickspace", "\\thinspace", "\\medspace", "\\nobreakspace", "\\negmedspace", "\\quad",
    "\\qquad",
    "\\enspace", "\\substackw", " ", "$$", "\\left", "\\right", "\\displaystyle",
)  # fmt: skip

_IMG = re.compile(r"!\[.*?\]\(.*?\)")
_FENCES = [re.compile(p, re.M) for p in (r"^```markdown\n?", r"^```html\n?", r"^```latex\n?", r"```\n?$")]
_DISPLAY = re.compile(r"\$\$(.*?)\$\$|\\\[(.*?)\\\]|\$(.*?)\$|\\\((.*?)\\\)", re.S)
_CODE = re.compile(r"```(\w+)\n(.*?)```", re.S)
_INLINE = re.compile(r"\$(.*?)\$|\\\((.*?)\\\)")
_LATEX_CMD = re.compile(r"\\[a-zA-Z]+")
NON_WORD = re.compile(r"[^\w\u4e00-\u9fff]")
# Greek letter commands and the characters pylatexenc gives them (\phi is the closed form, as in LaTeX).
_GREEK = {
    name: chr(code)
    for name, code in zip(
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
        "varsigma sigma tau upsilon phi chi psi omega".split(),
        range(0x3B1, 0x3CA),
    )
}
_GREEK.update({n.capitalize(): c.upper() for n, c in _GREEK.items() if n not in ("varsigma",)})
_GREEK.update(
    {"phi": "\u03d5", "varphi": "\u03c6", "epsilon": "\u03f5", "varepsilon": "\u03b5", "vartheta": "\u03d1"}
)


@dataclass
class Block:
    """One predicted or ground-truth element. `kind` is text, formula or table; `inline` marks a formula found
    inside text (offered for matching, never penalised when unmatched)."""

    kind: str
    content: str
    position: float
    category: str = ""
    inline: bool = False
    norm: str = ""


# ------------------------------------------------------------------------------------------------ normalisers
def inline_letters(tex: str) -> str:
    """Inline math reduced to what survives OmniDocBench's LaTeX-to-Unicode step: Greek letters become
    letters, other commands vanish (their braces' contents stay)."""
    return _LATEX_CMD.sub(lambda m: _GREEK.get(m.group(0)[1:], ""), tex)


def clean_text(text: str) -> str:
    """Word and CJK characters only, inline math turned into letters first (OmniDocBench `clean_string`)."""
    text = _INLINE.sub(lambda m: inline_letters(m.group(1) if m.group(1) is not None else m.group(2)), text)
    for token in ("\\t", "\\n", "\t", "\n", "/t", "/n"):
        text = text.replace(token, "")
    return NON_WORD.sub("", text)


def normalize_formula(text: str) -> str:
    """OmniDocBench `normalized_formula`: delimiters, tags, environments, fonts, spacing dropped, lowered."""
    text = text.strip().strip("$").strip("\n")
    m = re.search(r"\\\[(.+?)(?<!\\)\\\]", text)
    if m:
        text = m.group(1).strip()
    for pattern in (
        r"\\tag\{.*?\}",
        r"\\hspace\{.*?\}",
        r"\\begin\{.*?\}",
        r"\\end\{.*?\}",
        r"\\arraycolsep.*?\}",
    ):
        text = re.sub(pattern, "", text)
    text = text.strip(".")
    for token in FORMULA_FILTERS:
        text = text.replace(token, "")
    return text.lower()


def normalize_table_html(text: str) -> str:
    """Table HTML as OmniDocBench compares it by edit distance (`normalized_html_table`): `<th>` -> `<td>`,
    `<thead>`/`<tbody>`/`<span>` unwrapped, MathML replaced by its alt text, entities decoded, NFKC, layout
    attributes and sup/sub/div/p/colgroup markup dropped, whitespace collapsed, wrapped in a fixed shell."""
    if "<table" not in text.replace(" ", "").replace("'", '"'):
        return ""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "html.parser")
    for th in soup.find_all("th"):
        th.name = "td"
    for tag in soup.find_all(["thead", "span"]):
        tag.unwrap()
    for math in soup.find_all("math"):
        math.replace_with(f"${math.get('alttext', '')}$")
    out = html_lib.unescape(str(soup)).replace("\n", "")
    out = unicodedata.normalize("NFKC", out).strip()
    out = "".join(re.findall(r"<table\b[^>]*>(.*)</table>", out, re.S | re.I))
    for attr in ("style", "height", "width", "align", "class"):
        out = re.sub(f'( {attr}=".*?")', "", out)
    out = re.sub(r"</?tbody>", "", out)
    out = re.sub(r"\s+", " ", out)
    out = '<html><body><table border="1" >' + out + "</table></body></html>"
    for tag in ("sup", "sub", "span", "div", "p"):
        out = out.replace(f"<{tag}>", "").replace(f"</{tag}>", "")
    out = out.replace('<spandata-span-identity="">', "")
    return re.sub(r"<colgroup>.*?</colgroup>", "", out)


# ------------------------------------------------------------------------------------------- splitting a page
def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _html_tables(text: str) -> list[tuple[int, int]]:
    """Outermost `<table>...</table>` spans (nested tables stay inside their parent)."""
    spans = []
    depth, start = 0, 0
    for m in re.finditer(r"<table(?:[^>]*)>|</table>", text):
        if m.group(0).startswith("</"):
            if depth > 0:
                depth -= 1
                if depth == 0:
                    spans.append((start, m.end()))
        else:
            if depth == 0:
                start = m.start()
            depth += 1
    return spans


def markdown_table_to_html(lines: list[str]) -> str:
    """A pipe table as OmniDocBench's converter writes it (`utils/table_utils.py`): one cell per line, every
    cell `<td colspan="1" rowspan="1">`, and any cell line containing ':' or '---' dropped (its
    Markdown-separator filter also catches such cells), rows left without cells dropped."""
    out = ['<table border="1" >']
    for line in lines:
        cells = [c.strip() for c in line.strip().split("|")[1:-1]]
        kept = [c for c in cells if ":" not in c and "---" not in c]
        if kept:
            out.append("    <tr>")
            out.extend(f'      <td colspan="1" rowspan="1">{c}</td>' for c in kept)
            out.append("    </tr>")
    out.append("</table>")
    return "\n".join(out)


def split_markdown(markdown: str) -> list[Block]:
    """Prediction blocks in page order (see module docstring)."""
    content = _IMG.sub("", markdown)
    for pattern in _FENCES:
        content = pattern.sub("", content)
    content = re.sub(r"_{4,}", "____", content)
    content = re.sub(r" {4,}", "    ", content)
    for tag in ("<html>", "</html>", "<body>", "</body>"):
        content = content.replace(tag, "")
    blocks: list[Block] = []
    for start, end in _html_tables(content):
        blocks.append(Block("table", content[start:end], start))
        content = _blank(content, start, end)
    for m in list(_DISPLAY.finditer(content)):
        body = next(g for g in m.groups() if g is not None)
        single = " ".join(m.group(0).strip().split("\n"))
        if m.group(1) is not None or m.group(2) is not None:
            blocks.append(Block("formula", single, m.start()))
            content = _blank(content, m.start(), m.end())
        elif body.strip():
            blocks.append(Block("formula", f"\\[{body}\\]", m.start(), inline=True))
    # Markdown pipe tables: runs of at least two lines that start and end with a pipe.
    lines = content.split("\n")
    offset, run = 0, []
    offsets = []
    for line in lines:
        offsets.append(offset)
        offset += len(line) + 1
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].strip().startswith("|") and lines[j].strip().endswith("|"):
            j += 1
        if j - i >= 2:
            run = lines[i:j]
            blocks.append(Block("table", markdown_table_to_html(run), offsets[i]))
            for k in range(i, j):
                lines[k] = " " * len(lines[k])
            i = j
        else:
            i += 1
    content = "\n".join(lines)
    for m in list(_CODE.finditer(content)):
        blocks.append(Block("text", m.group(2).strip(), m.start(), category="code"))
        content = _blank(content, m.start(), m.end())
    parts = content.split("\n\n")
    if len(parts) == 1:
        parts = content.split("\n")
    pos = 0
    for part in parts:
        start = pos
        pos += len(part) + 2
        text = "\n".join(s.strip() for s in part.strip().split("\n") if s.strip())
        if not text:
            continue
        if text.startswith("<table") and text.endswith("</table>"):
            blocks.append(Block("table", text, start))
        elif text.startswith("$") and text.endswith("$"):
            if text.replace("$", "").strip():
                blocks.append(Block("formula", text.strip(), start))
        else:
            text = re.sub(r"^#+\s*", "", text)
            blocks.append(Block("text", text, start))
    blocks.sort(key=lambda b: (b.inline, b.position))
    return blocks
