"""One line type for every line source: a PDF's text layer (`jocr.lines.textlayer`) and OCR over a page's
pixels (`jocr.lines.ocr`). The anchor (`jocr.lines.anchor`) and page assembly take `PageLines` from either.

Coordinates: page units with the origin at the top-left of the page as rendered, y growing downwards --
points for a PDF page, pixels of the original image for an image (OCR boxes are mapped back to that frame
after any rotation, deskew or downscale).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from jocr.bbox import BBox as Box

# Line sources.
TEXTLAYER = "textlayer"
RAPIDOCR = "rapidocr"
TESSERACT = "tesseract"
SOURCES = (TEXTLAYER, RAPIDOCR, TESSERACT)

# Verdicts every source can give. Only "ok" lines are used; every other verdict carries a one-line note.
# The text layer has more of its own (jocr.lines.textlayer.VERDICTS).
OK = "ok"
NONE = "none"  # no text found (no text layer; a blank or unreadable image)
TOO_LARGE = "too_large"  # more characters, pixels or time than the limits allow
ERROR = "error"  # the source failed on the page


@dataclass
class Word:
    """One word of a line: `box` in page units; `confidence` in [0, 1], None when the source has none."""

    text: str
    box: Box
    confidence: float | None = None

    def to_dict(self) -> dict:
        out = {"text": self.text, "box": [round(v, 2) for v in self.box]}
        if self.confidence is not None:
            out["confidence"] = round(self.confidence, 4)
        return out


@dataclass
class Line:
    """One run of text on one baseline: `box` (x0, y0, x1, y1) in page units, top-left origin.

    `size` is the font size in points (text layer) or the line's height in pixels (OCR); `weight` the font
    weight (400 regular, 700 bold), 0 when unknown (always for OCR). `confidence` in [0, 1] (None for the
    text layer, whose characters are exact). `words` the line's words with their boxes, None when the
    source does not split lines into words (the text layer)."""

    text: str
    box: Box
    size: float = 0.0
    weight: int = 0
    confidence: float | None = None
    source: str = TEXTLAYER
    words: list[Word] | None = None
    mono: bool = False  # at least 80% of its glyphs in a monospace font (code); the text layer only

    def to_dict(self) -> dict:
        out = {
            "text": self.text,
            "box": [round(v, 2) for v in self.box],
            "size": round(self.size, 2),
            "weight": self.weight,
        }
        if self.confidence is not None:
            out["confidence"] = round(self.confidence, 4)
        if self.source != TEXTLAYER:
            out["source"] = self.source
        if self.words is not None:
            out["words"] = [w.to_dict() for w in self.words]
        if self.mono:
            out["mono"] = True
        return out


@dataclass
class PageLines:
    """A page's lines from one source and the verdict on them; `note` says in one line why they are not
    usable (or what to know about them). `width`/`height`: the page size in page units. `stats`: counts the
    source reports (glyphs read, pixels, seconds), for diagnostics only."""

    width: float
    height: float
    lines: list[Line] = field(default_factory=list)
    verdict: str = NONE
    note: str = ""
    source: str = TEXTLAYER
    stats: dict = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return self.verdict == OK

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    def to_dict(self) -> dict:
        return {
            "width": round(self.width, 2),
            "height": round(self.height, 2),
            "source": self.source,
            "verdict": self.verdict,
            "note": self.note,
            "stats": dict(self.stats),
            "lines": [ln.to_dict() for ln in self.lines],
        }

    def crop(self, box: Box) -> PageLines:
        """The lines whose centre lies inside `box` (x0, y0, x1, y1 in page units), their boxes (and words')
        moved to the box's origin, on a page the box's size: a region's lines, as if it were a page of its
        own (the anchor of an element crop)."""
        x0, y0, x1, y1 = box

        def moved(b: Box) -> Box:
            return (b[0] - x0, b[1] - y0, b[2] - x0, b[3] - y0)

        kept = [
            replace(
                line,
                box=moved(line.box),
                words=None if line.words is None else [replace(w, box=moved(w.box)) for w in line.words],
            )
            for line in self.lines
            if x0 <= (line.box[0] + line.box[2]) / 2 <= x1 and y0 <= (line.box[1] + line.box[3]) / 2 <= y1
        ]
        return replace(self, width=x1 - x0, height=y1 - y0, lines=kept, stats={})

    @classmethod
    def from_dict(cls, data: dict) -> PageLines:
        """The lines `to_dict` wrote (stats as written; a missing verdict reads as usable lines)."""
        lines = [
            Line(
                text=d["text"],
                box=tuple(d["box"]),
                size=d.get("size", 0.0),
                weight=d.get("weight", 0),
                confidence=d.get("confidence"),
                source=d.get("source", TEXTLAYER),
                words=None
                if d.get("words") is None
                else [Word(w["text"], tuple(w["box"]), w.get("confidence")) for w in d["words"]],
                mono=d.get("mono", False),
            )
            for d in data.get("lines", [])
        ]
        return cls(
            width=data["width"],
            height=data["height"],
            lines=lines,
            verdict=data.get("verdict", OK),
            note=data.get("note", ""),
            source=data.get("source", TEXTLAYER),
            stats=dict(data.get("stats") or {}),
        )


def empty_lines(
    verdict: str, note: str, width: float = 0.0, height: float = 0.0, source: str = TEXTLAYER
) -> PageLines:
    """No lines, with the verdict and the one-line note saying why."""
    return PageLines(width=width, height=height, verdict=verdict, note=note, source=source)
