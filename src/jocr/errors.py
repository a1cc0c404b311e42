"""An error as one short line: how every layer shows the exception it caught (one error a line, on
stderr, in a page's note or in a 4xx body). Nothing from jocr is imported here, so any module may use it."""

from __future__ import annotations

ERROR_CHARS = 200  # an error shown in one line is cut to this many characters


def one_line(exc: BaseException, limit: int = ERROR_CHARS) -> str:
    """The first non-empty line of `exc`'s message with its runs of whitespace made one space (libraries'
    messages go on with call logs, tracebacks and hints after the line that says what failed), cut to
    `limit` characters; the exception's type name when its message is empty."""
    first = next((line for line in str(exc).splitlines() if line.strip()), "")
    return " ".join(first.split())[:limit] or type(exc).__name__
