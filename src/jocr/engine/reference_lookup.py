"""Prompt/output lookup that understands run references (docs/parsing.md, "Run references").

An anchored model writes `@i` for run i of its anchor, and mostly names the runs in order:
`@1\\n\\n@2\\n\\n@3`, `<td>@7</td><td>@8</td>`. Plain n-gram lookup cannot continue that text: the digits
differ at every repeat. Here each complete reference becomes one symbol holding its step from the previous
reference (`@7` after `@6` is "+1"; `@1`, where a window's answer starts counting, is a symbol of its own), so
the output above reads as a repeating pattern; the most recent earlier occurrence of the last few symbols is
continued, and the continuation is written back out as tokens with the numbers it implies (`@8`, `@9`, ...,
digits growing from `@9` to `@10`). Text without references is matched token for token, as by
`drafters.NGramDrafter`.

Before its first blank line and its first table a window's answer has nothing of its own to repeat, so the
lookup also searches, behind the row's history (any match in the history wins), `PATTERNS`: the shapes an
answer in references takes (docs/parsing.md): a heading, paragraphs, a table, runs of one line.

Only the drafts depend on this: the verifier keeps the output exactly greedy whatever is proposed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MAX_DIGITS = 6  # `@` and more digits than this is text, not a reference (and never a huge int to parse)
_STEP_OFFSET = 1 << 20  # > any step between two references of MAX_DIGITS digits
_START = -1  # `@1`: where a window's answer starts counting, whatever came before
# A reference's symbol is -(1 + _STEP_OFFSET + step): below _START, and never a token id.
PATTERNS = (
    "# @1\n\n@2\n\n<table><tr><th>@3</th><th>@4</th></tr><tr><td>@5</td><td>@6</td></tr></table>\n\n@7 @8\n\n"
)


class ReferenceLookup:
    """Drafts for one row's history (prompt + output token ids) from the reference-aware lookup."""

    def __init__(
        self,
        at_id: int,
        digit_ids: Sequence[int],
        patterns: Sequence[int] = (),
        max_n: int = 16,
        min_n: int = 2,
        window: int = 512,
    ):
        if len(digit_ids) != 10:
            raise ValueError("reference lookup needs the ids of the ten digits 0-9")
        if not 1 <= min_n <= max_n:
            raise ValueError("reference lookup needs 1 <= min_n <= max_n")
        self.at_id = int(at_id)
        self.digit_ids = [int(d) for d in digit_ids]
        self.digit_of = {d: i for i, d in enumerate(self.digit_ids)}
        self.patterns = list(patterns)  # token ids of PATTERNS (or others), searched behind the history
        self.pattern_symbols = len(self.symbols(self.patterns)[0])
        self.max_n = max_n  # long enough to see a table row whole: its cells differ only by their place
        self.min_n = min_n
        self.window = window  # tokens of history looked at: a pattern's period is far shorter

    @classmethod
    def from_tokenizer(cls, tokenizer) -> ReferenceLookup | None:
        """The lookup for a `jocr.tokenizer.Tokenizer`, searching PATTERNS too; None when `@` or a digit is
        not a single token of it (its references could not be told apart token by token)."""
        ids = [tokenizer.token_to_id(c) for c in "@0123456789"] if tokenizer is not None else [None]
        if None in ids:
            return None
        return cls(ids[0], ids[1:], tokenizer.encode(PATTERNS))

    def symbols(self, tokens: Sequence[int]) -> tuple[list[int], int, str | None]:
        """(symbols, number of the last complete reference (0 before any), digits of an open reference at the
        very end or None). A reference at the end is open (`@1` may yet become `@12`), so it is not a
        symbol."""
        syms: list[int] = []
        last = 0
        i, length = 0, len(tokens)
        while i < length:
            t = tokens[i]
            if t != self.at_id:
                syms.append(t)
                i += 1
                continue
            j = i + 1
            while j < length and tokens[j] in self.digit_of:
                j += 1
            if j - i - 1 > MAX_DIGITS or (j == i + 1 and j < length):  # a bare `@`, or digits past a number
                syms.append(t)
                i += 1
                continue
            digits = "".join(str(self.digit_of[d]) for d in tokens[i + 1 : j])
            if j == length:  # `@` or `@12` ends the history: the reference may go on
                return syms, last, digits
            number = int(digits)
            syms.append(_START if number == 1 else -(1 + _STEP_OFFSET + number - last))
            last = number
            i = j
        return syms, last, None

    def propose(self, history: Sequence[int], k: int) -> tuple[list[int], int]:
        """(up to k draft tokens, symbols matched): the continuation of the most recent earlier occurrence of
        the history's last max_n..min_n symbols; ([], 0) when nothing matches."""
        tail = self.patterns + list(history[-self.window :])
        syms, last, open_digits = self.symbols(tail)
        length = len(syms)
        if length < self.min_n + 1:
            return [], 0
        arr = np.asarray(syms, dtype=np.int64)
        top = min(self.max_n, length - 1)
        # Earlier occurrences end where the last symbol recurs (e <= length - 2); each one's length is its
        # run of symbols equal to the history's last ones, read backwards (at most `top`).
        ends = np.flatnonzero(arr[: length - 1] == arr[length - 1])
        if open_digits is not None:  # a reference is being written: its continuation must start with one
            ends = ends[arr[ends + 1] < 0]
        back = np.arange(top)
        at = ends[:, None] - back  # (E, top) positions compared with the last symbols, newest first
        same = (at >= 0) & (arr[np.maximum(at, 0)] == arr[length - 1 - back])
        matched = np.where(same.all(axis=1), top, same.argmin(axis=1))  # (E,)
        latest_of = {}  # matched length -> the most recent end with that length
        for end, n in zip(ends.tolist(), matched.tolist()):
            latest_of[n] = end
        latest = -1
        for n in range(top, self.min_n - 1, -1):  # the longest match first; the most recent among equals
            latest = max(latest, latest_of.get(n, -1))
            if latest >= 0:
                draft = self._render(syms, latest + 1, last, open_digits, k)
                if draft:
                    return draft, n
        return [], 0

    def _render(self, syms: list[int], start: int, last: int, open_digits: str | None, k: int):
        """Up to k tokens continuing from symbol `start`. A match in the history repeats with period
        len(syms) - start, so a continuation that reaches the end goes on from `start` again; one in PATTERNS
        stops at their end."""
        if start < self.pattern_symbols:
            source = syms[start : self.pattern_symbols]
        else:
            period = syms[start:]
            source = period * (k // len(period) + 2)
        out: list[int] = []
        number = last
        for j, sym in enumerate(source[: k + 1]):  # every symbol but an open reference's gives a token
            if sym >= 0:
                out.append(sym)
                continue
            number = 1 if sym == _START else number - sym - 1 - _STEP_OFFSET
            if number < 1:
                break
            digits = str(number)
            if j == 0 and open_digits is not None:
                if not digits.startswith(open_digits):
                    return []
                digits = digits[len(open_digits) :]
            else:
                out.append(self.at_id)
            out.extend(self.digit_ids[int(c)] for c in digits)
        return out[:k]
