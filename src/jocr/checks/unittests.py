"""olmOCR-Bench unit tests: present, absent, order, table, math, baseline, format and footnote.

Each test is a dataclass loaded from one JSONL line (fields as in allenai/olmocr `olmocr/bench/tests.py`, main
branch) whose `run(markdown)` returns a `CheckResult(passed, score, reason)`. `passed` is the official
verdict; `score` in [0, 1] grades partial correctness for rewards (1.0 exactly when the test passes; below 1
it says how close a failing output came), and `reason` says why a test failed ("" when it passed).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from fuzzysearch import find_near_matches

from jocr.checks import math as mathcheck
from jocr.checks.repetition import tail_ngram_repeats
from jocr.checks.table import TableGraph, parse_tables
from jocr.checks.text import normalize_text, partial_ratio, ratio


class CheckResult(NamedTuple):
    """A test's verdict, its graded score in [0, 1] and a one-line reason for a failure ("" on a pass)."""

    passed: bool
    score: float
    reason: str


class ValidationError(ValueError):
    """A test definition that olmOCR-Bench would refuse to load."""


TEST_TYPES = ("baseline", "present", "absent", "order", "table", "math", "format", "footnote")


def _threshold(max_diffs: int, text: str) -> float:
    """1 - max_diffs / len(text): the fuzzy-match threshold olmOCR-Bench derives from a test's edit budget."""
    return 1.0 - max_diffs / (len(text) if len(text) > 0 else 1)


@dataclass(kw_only=True)
class BaseTest:
    """Fields every test has. `extra` keeps JSONL fields this version does not know, so they round-trip."""

    pdf: str
    page: int
    id: str
    type: str
    max_diffs: int = 0
    checked: str | None = None
    url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    types: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        if not self.pdf:
            raise ValidationError("PDF filename cannot be empty")
        if not self.id:
            raise ValidationError("Test ID cannot be empty")
        if isinstance(self.max_diffs, bool) or not isinstance(self.max_diffs, int) or self.max_diffs < 0:
            raise ValidationError(f"test {self.id}: max_diffs must be a non-negative integer")
        if self.type not in self.types:
            raise ValidationError(f"test {self.id}: type {self.type!r} is not one of {', '.join(self.types)}")

    def run(self, markdown: str) -> CheckResult:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The JSONL record (normalised strings, as olmOCR-Bench saves them); unknown fields come back too."""
        data = asdict(self)
        extra = data.pop("extra")
        return {**{k: v for k, v in data.items() if v is not None}, **extra}


@dataclass(kw_only=True)
class TextPresenceTest(BaseTest):
    """`present`: the text occurs (fuzzily, within max_diffs); `absent`: it does not."""

    text: str
    case_sensitive: bool = True
    first_n: int | None = None
    last_n: int | None = None

    types: ClassVar[tuple[str, ...]] = ("present", "absent")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.text = normalize_text(self.text) or ""
        if not self.text.strip():
            raise ValidationError(f"test {self.id}: text cannot be empty")

    def run(self, markdown: str) -> CheckResult:
        query = self.text
        content = normalize_text(markdown) or ""
        if not self.case_sensitive:
            query, content = query.lower(), content.lower()
        if self.first_n and self.last_n:
            content = content[: self.first_n] + content[-self.last_n :]
        elif self.first_n:
            content = content[: self.first_n]
        elif self.last_n:
            content = content[-self.last_n :]
        threshold = _threshold(self.max_diffs, query)
        best = partial_ratio(query, content)
        if self.type == "present":
            if best >= threshold:
                return CheckResult(True, 1.0, "")
            return CheckResult(
                False, best, f"expected {query[:40]!r} (threshold {threshold:.3f}), best match {best:.3f}"
            )
        if best < threshold:
            return CheckResult(True, 1.0, "")
        return CheckResult(
            False,
            1.0 - best,
            f"expected absence of {query[:40]!r} (threshold {threshold:.3f}), match {best:.3f}",
        )


@dataclass(kw_only=True)
class TextOrderTest(BaseTest):
    """`order`: some fuzzy occurrence of `before` starts before some fuzzy occurrence of `after`."""

    before: str
    after: str

    types: ClassVar[tuple[str, ...]] = ("order",)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.before = normalize_text(self.before) or ""
        self.after = normalize_text(self.after) or ""
        if not self.before.strip() or not self.after.strip():
            raise ValidationError(f"test {self.id}: before and after cannot be empty")
        if self.max_diffs > len(self.before) // 2 or self.max_diffs > len(self.after) // 2:
            raise ValidationError(f"test {self.id}: max_diffs is over half the length of a search string")

    def _starts(self, needle: str, content: str) -> list[int]:
        if self.max_diffs == 0:
            return [m.start() for m in re.finditer(f"(?={re.escape(needle)})", content)]
        return [m.start for m in find_near_matches(needle, content, max_l_dist=self.max_diffs)]

    def run(self, markdown: str) -> CheckResult:
        content = normalize_text(markdown) or ""
        before = self._starts(self.before, content)
        after = self._starts(self.after, content)
        if before and after and min(before) < max(after):
            return CheckResult(True, 1.0, "")
        # Partial credit: how well each text is present at all, halved because the order is wrong or unknown.
        presence = (partial_ratio(self.before, content) + partial_ratio(self.after, content)) / 2.0
        if not before:
            return CheckResult(False, 0.5 * presence, f"'before' text {self.before[:40]!r} not found")
        if not after:
            return CheckResult(False, 0.5 * presence, f"'after' text {self.after[:40]!r} not found")
        return CheckResult(
            False, 0.5 * presence, f"{self.before[:40]!r} does not appear before {self.after[:40]!r}"
        )


@dataclass(kw_only=True)
class TableTest(BaseTest):
    """`table`: a cell matching `cell` whose stated neighbours and headings match too, in some table."""

    cell: str
    up: str = ""
    down: str = ""
    left: str = ""
    right: str = ""
    top_heading: str = ""
    left_heading: str = ""
    ignore_markdown_tables: bool = False

    types: ClassVar[tuple[str, ...]] = ("table",)
    _relations: ClassVar[tuple[str, ...]] = ("up", "down", "left", "right", "left_heading", "top_heading")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("cell",) + self._relations:
            setattr(self, name, normalize_text(getattr(self, name)) or "")

    def _neighbours(self, table: TableGraph, name: str, cell: tuple[int, int]) -> set[tuple[int, int]]:
        if name == "left_heading":
            return table.left_headings(cell)
        if name == "top_heading":
            return table.top_headings(cell)
        return getattr(table, name)[cell]

    def run(self, markdown: str) -> CheckResult:
        tables = parse_tables(markdown, include_markdown=not self.ignore_markdown_tables)
        if not tables:
            return CheckResult(False, 0.0, "no tables found")
        threshold = max(0.5, _threshold(self.max_diffs, self.cell))
        wanted = [(name, getattr(self, name)) for name in self._relations if getattr(self, name)]
        best_score = 0.0
        failure = ""
        for table in tables:
            for cell in table.cells:
                if ratio(self.cell, table.normalized(cell)) < threshold:
                    continue
                held = 0
                first_miss = ""
                for name, expected in wanted:
                    limit = max(0.5, _threshold(self.max_diffs, expected))
                    best, best_text = 0.0, None
                    for other in self._neighbours(table, name, cell):
                        sim = ratio(expected, table.normalized(other))
                        if sim > best:
                            best, best_text = sim, table.normalized(other)
                    if best >= limit:
                        held += 1
                    elif not first_miss:
                        first_miss = (
                            f"{name} of {self.cell[:30]!r} is {best_text!r}, expected {expected[:30]!r}"
                        )
                if held == len(wanted):
                    return CheckResult(True, 1.0, "")
                # Graded: the matched cell counts as one relation, then each relation that holds.
                best_score = max(best_score, (1 + held) / (1 + len(wanted)))
                failure = failure or first_miss
        if not failure:
            return CheckResult(False, 0.0, f"no cell matching {self.cell[:40]!r} (threshold {threshold:.2f})")
        return CheckResult(False, best_score, f"cell {self.cell[:40]!r} found but relations fail: {failure}")


@dataclass(kw_only=True)
class MathTest(BaseTest):
    """`math`: some formula in the output renders to MathML containing the reference's."""

    math: str
    ignore_dollar_delimited: bool = False

    types: ClassVar[tuple[str, ...]] = ("math",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.math.strip():
            raise ValidationError(f"test {self.id}: math cannot be empty")
        if not mathcheck.renders(self.math):
            raise ValidationError(f"test {self.id}: KaTeX cannot render the reference {self.math[:60]!r}")

    def run(self, markdown: str) -> CheckResult:
        candidates = mathcheck.extract_formulas(markdown, include_dollars=not self.ignore_dollar_delimited)
        # Closest sources first, as the official scorer orders them (the verdict is "any candidate matches").
        scored = sorted(((ratio(c, self.math), c) for c in candidates), key=lambda x: -x[0])
        if mathcheck.match_any(self.math, [c for _, c in scored]):
            return CheckResult(True, 1.0, "")
        best = scored[0][0] if scored else 0.0
        return CheckResult(False, 0.9 * best, f"no formula matching {self.math[:60]!r}")


@dataclass(kw_only=True)
class BaselineTest(BaseTest):
    """`baseline`: output has alphanumerics, no long n-gram loop at the end, and no CJK/kana/emoji characters;
    with `max_length`, a blank-page test: at most that many alphanumerics."""

    max_length: int | None = None
    max_length_skips_image_alt_tags: bool = False
    max_repeats: int = 30
    check_disallowed_characters: bool = True

    types: ClassVar[tuple[str, ...]] = ("baseline",)

    _disallowed: ClassVar[re.Pattern[str]] = re.compile(
        "[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff\U0001f600-\U0001f64f\U0001f300-\U0001f5ff"
        "\U0001f680-\U0001f6ff\U0001f1e0-\U0001f1ff]"
    )
    _image: ClassVar[re.Pattern[str]] = re.compile(r"!\[.*?\]\(.*?\)")
    # \w is exactly str.isalnum() plus "_", so removing [\W_] leaves the alphanumerics (C speed).
    _non_alnum: ClassVar[re.Pattern[str]] = re.compile(r"[\W_]+")

    def run(self, markdown: str) -> CheckResult:
        n_alnum = len(self._non_alnum.sub("", markdown))
        if self.max_length is not None:
            if self.max_length_skips_image_alt_tags:
                n_alnum = len(self._non_alnum.sub("", self._image.sub("", markdown)))
            if n_alnum > self.max_length:
                return CheckResult(
                    False,
                    self.max_length / n_alnum,
                    f"{n_alnum} characters output for a page expected to be blank",
                )
            return CheckResult(True, 1.0, "")
        if n_alnum == 0:
            return CheckResult(False, 0.0, "no alphanumeric characters")
        for size, count in enumerate(tail_ngram_repeats(markdown, 5), start=1):
            if count > self.max_repeats:
                return CheckResult(False, 0.0, f"text ends with {count} repeating {size}-grams")
        if self.check_disallowed_characters:
            bad = self._disallowed.findall(markdown)
            if bad:
                share = len(bad) / max(1, n_alnum)
                return CheckResult(
                    False, max(0.0, 1.0 - share), f"disallowed characters {''.join(bad[:10])!r}"
                )
        return CheckResult(True, 1.0, "")


@dataclass(kw_only=True)
class FormatTest(BaseTest):
    """`format`: the text appears as a heading, bold or italic (Markdown or HTML)."""

    text: str
    format: str
    case_sensitive: bool = True

    types: ClassVar[tuple[str, ...]] = ("format",)

    _patterns: ClassVar[dict[str, list[tuple[str, int]]]] = {
        "heading": [(r"^#{1,6}\s+(.+?)$", re.MULTILINE), (r"<h[1-6][^>]*>(.*?)</h[1-6]>", re.I | re.S)],
        "bold": [
            (r"\*\*(.*?)\*\*", re.S),
            (r"__(.*?)__", re.S),
            (r"<b[^>]*>(.*?)</b>", re.I | re.S),
            (r"<strong[^>]*>(.*?)</strong>", re.I | re.S),
        ],
        "italic": [
            (r"(?<!\*)\*(?!\*)(.*?)(?<!\*)\*(?!\*)", re.S),
            (r"(?<!_)_(?!_)(.*?)(?<!_)_(?!_)", re.S),
            (r"<i[^>]*>(.*?)</i>", re.I | re.S),
            (r"<em[^>]*>(.*?)</em>", re.I | re.S),
        ],
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        self.text = normalize_text(self.text) or ""
        if not self.text.strip():
            raise ValidationError(f"test {self.id}: text cannot be empty")
        if self.format not in self._patterns:
            raise ValidationError(
                f"test {self.id}: format must be heading, bold or italic, not {self.format!r}"
            )

    def run(self, markdown: str) -> CheckResult:
        spans = []
        for pattern, flags in self._patterns[self.format]:
            spans.extend(re.findall(pattern, markdown, flags))
        target = self.text if self.case_sensitive else self.text.lower()
        threshold = _threshold(self.max_diffs, target)
        best = 0.0
        for span in spans:
            span = normalize_text(span) or ""
            if not self.case_sensitive:
                span = span.lower()
            best = max(best, partial_ratio(target, span))
            if best >= threshold:
                return CheckResult(True, 1.0, "")
        # Graded: the text being there at all (in any format) earns half.
        anywhere = partial_ratio(
            target,
            (normalize_text(markdown) or "")
            if self.case_sensitive
            else (normalize_text(markdown) or "").lower(),
        )
        return CheckResult(
            False, max(0.9 * best, 0.5 * anywhere), f"{target[:40]!r} not found as {self.format}"
        )


_SUPERSCRIPT_DIGITS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(kw_only=True)
class FootnoteTest(BaseTest):
    """`footnote`: the marker appears as `[^m]`, `<sup>m</sup>` or Unicode superscript digits, optionally with
    given text just before and/or just after one of its occurrences."""

    marker: str
    appears_before_marker: str | None = None
    appears_after_marker: str | None = None

    types: ClassVar[tuple[str, ...]] = ("footnote",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.marker:
            raise ValidationError(f"test {self.id}: marker is required")
        if " " in self.marker:
            raise ValidationError(f"test {self.id}: marker cannot contain whitespace")
        for name in ("appears_before_marker", "appears_after_marker"):
            value = getattr(self, name)
            if value:
                value = normalize_text(value) or ""
                if not value.strip():
                    raise ValidationError(f"test {self.id}: {name} cannot be blank")
                setattr(self, name, value)

    def _marker_spans(self, markdown: str) -> list[tuple[int, int]]:
        esc = re.escape(self.marker)
        spans = [m.span() for m in re.finditer(rf"\[\^{esc}\](?!:)", markdown)]
        spans += [m.span() for m in re.finditer(rf"<sup[^>]*>{esc}</sup>", markdown, re.IGNORECASE)]
        if self.marker.isascii() and self.marker.isdigit():
            sup = self.marker.translate(_SUPERSCRIPT_DIGITS)
            spans += [m.span() for m in re.finditer(re.escape(sup), markdown)]
        return spans

    @staticmethod
    def _letters(text: str) -> str:
        return "".join(ch for ch in (normalize_text(text) or "") if ch.isalnum()).lower()

    def _near(self, target: str | None, markdown: str, spans: list[tuple[int, int]], before: bool) -> float:
        """Best similarity of `target` to the text just before (or after) any marker occurrence."""
        if not target:
            return 1.0
        clean_target = self._letters(target)
        best = 0.0
        for start, end in spans:
            window = markdown[max(0, start - 200) : start] if before else markdown[end : end + 200]
            clean = self._letters(window)
            if not clean:
                continue
            n = min(len(clean), len(clean_target) * 2)
            piece = (clean[-n:] if before else clean[:n]) if n > 0 else clean
            best = max(best, partial_ratio(clean_target, piece))
        return best

    def run(self, markdown: str) -> CheckResult:
        spans = self._marker_spans(markdown)
        if not spans:
            return CheckResult(False, 0.0, f"footnote marker {self.marker!r} not found")
        checks = []
        for target, before in ((self.appears_before_marker, True), (self.appears_after_marker, False)):
            sim = self._near(target, markdown, spans, before)
            # The official threshold divides by the normalised text's length (letters and spaces included).
            ok = target is None or not target or sim >= _threshold(self.max_diffs, target)
            checks.append((ok, sim))
        if all(ok for ok, _ in checks):
            return CheckResult(True, 1.0, "")
        score = (1.0 + sum(sim for _, sim in checks)) / 3.0
        return CheckResult(
            False, min(score, 0.99), f"text around footnote marker {self.marker!r} does not match"
        )


_CLASSES: dict[str, type[BaseTest]] = {
    "present": TextPresenceTest,
    "absent": TextPresenceTest,
    "order": TextOrderTest,
    "table": TableTest,
    "math": MathTest,
    "baseline": BaselineTest,
    "format": FormatTest,
    "footnote": FootnoteTest,
}


def load_test(data: str | dict[str, Any]) -> BaseTest:
    """One test from a JSON object or line. Raises ValidationError with a one-line message when invalid."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValidationError("a test must be a JSON object")
    cls = _CLASSES.get(data.get("type"))  # type: ignore[arg-type]
    if cls is None:
        raise ValidationError(f"unknown test type {data.get('type')!r}")
    known = {f.name for f in fields(cls)} - {"extra"}
    kwargs = {k: v for k, v in data.items() if k in known}
    extra = {k: v for k, v in data.items() if k not in known}
    try:
        return cls(**kwargs, extra=extra)
    except TypeError as exc:  # a required field is missing
        raise ValidationError(f"test {data.get('id')!r}: {exc}") from None


def load_tests(path: str | Path) -> list[BaseTest]:
    """All tests of a JSONL file (blank lines skipped); duplicate ids are an error, as in olmOCR-Bench."""
    tests: list[BaseTest] = []
    seen: set[str] = set()
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            test = load_test(line)
        except ValidationError as exc:
            raise ValidationError(f"{path}:{lineno}: {exc}") from None
        if test.id in seen:
            raise ValidationError(f"{path}:{lineno}: duplicate test id {test.id!r}")
        seen.add(test.id)
        tests.append(test)
    return tests


def run_tests(tests: list[BaseTest], markdown: str) -> list[CheckResult]:
    """Run every test on one page's Markdown; a test that raises counts as failed with the error as reason."""
    results = []
    for test in tests:
        try:
            results.append(test.run(markdown))
        except Exception as exc:  # the official runner also records exceptions as failures
            results.append(CheckResult(False, 0.0, f"error: {exc}"))
    return results
