"""The reference-aware lookup (jocr.engine.reference_lookup) on the bundled tokenizer: run references are
continued with the numbers they imply, in every shape an anchored answer takes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from jocr.engine.reference_lookup import PATTERNS, ReferenceLookup
from jocr.tokenizer import Tokenizer

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.from_dir(MODELS / "anchored")


@pytest.fixture(scope="module")
def lookup(tok) -> ReferenceLookup:
    return ReferenceLookup.from_tokenizer(tok)


def draft(lookup: ReferenceLookup, tok: Tokenizer, text: str, k: int = 12) -> str:
    tokens, _ = lookup.propose(tok.encode(text), k)
    return tok.decode(tokens)


def test_paragraphs_continue_with_the_next_numbers(lookup, tok):
    assert draft(lookup, tok, "# @1\n\n@2\n\n@3\n\n@") == "4\n\n@5\n\n@6\n\n@"
    assert draft(lookup, tok, "# @1\n\n@2\n\n@3\n\n@4") == "\n\n@5\n\n@6\n\n@7"
    # the same pattern elsewhere in the numbering: one symbol per step, whatever the digits
    assert draft(lookup, tok, "@31\n\n@32\n\n@33\n\n@") == "34\n\n@35\n\n@36"


def test_numbers_gain_a_digit(lookup, tok):
    assert draft(lookup, tok, "@5@6@7@8@9@") == "10@11@12@13@"
    assert draft(lookup, tok, "@97 @98 @99 @1", k=8) == "00 @101 "


def test_an_open_reference_that_cannot_be_the_next_one_gets_no_draft(lookup, tok):
    # `@9` cannot be the beginning of `@4`, which every earlier occurrence implies
    assert lookup.propose(tok.encode("x @1\n\n@2\n\n@3\n\n@9"), 8) == ([], 0)


def test_hostile_numbers_draft_nothing_odd(lookup, tok):
    """Numbers far apart or longer than any run number: text, or a step that continues nothing; every draft
    is a real token id and nothing is parsed that could not be."""
    long = "@" + "9" * 5000
    for text in ("@1 @999999 @1 @999999 @", f"{long} {long} @", "@5 @123456789012 @5 @1", "@99998 @99999 @"):
        tokens, _ = lookup.propose(tok.encode(text), 8)
        assert all(0 <= t < tok.vocab_size for t in tokens)
    assert draft(lookup, tok, "@1 @999999 @1 @999999 @1", k=3) == " @9"  # the largest step, taken again


def test_table_rows_end_where_the_earlier_rows_ended(lookup, tok):
    rows = "<table><tr><td>@1</td><td>@2</td><td>@3</td></tr><tr><td>@4</td><td>@5</td><td>@6</td></tr>"
    assert draft(lookup, tok, rows + "<tr><td>@7</td><td>@8</td><td>@9", k=11) == "</td></tr><tr><td>@10</td>"
    assert draft(lookup, tok, rows + "<tr><td>@7</td><td>@8", k=9) == "</td><td>@9</td></tr><tr"


def test_a_window_answer_starts_from_the_patterns(lookup, tok):
    """Nothing of the answer to repeat yet: the shapes in PATTERNS supply the draft; the prompt's own anchor
    lines (`@1 x,y text`) do not look like an answer."""
    prompt = "<anchor>\n@1 100,50 Title\n@2 100,90 First paragraph\n</anchor>\nConvert the document. "
    assert draft(lookup, tok, prompt + "# ", k=8) == "@1\n\n@2\n\n"
    bare = ReferenceLookup(*_ids(tok))  # without patterns: only the history
    assert bare.propose(tok.encode("# "), 8) == ([], 0)


def test_history_beats_the_patterns(lookup, tok):
    """The answer's own habits (references run together on one line) win over PATTERNS' blank lines."""
    assert draft(lookup, tok, "# @1\n\n@2 @3 @4\n\n@5 @6 @7\n\n@8", k=8) == " @9 @10\n"


def test_text_without_references_is_copied_as_ngram_lookup_does(lookup, tok):
    assert draft(lookup, tok, "hello world. hello w", k=5) == "orld. "


def test_the_patterns_are_a_reference_answer(tok):
    """PATTERNS resolve, like an answer, into the runs they name in order."""
    from jocr.lines.references import REFERENCES

    numbers = [int(n) for match in REFERENCES.findall(PATTERNS) for n in match.split("@")[1:]]
    assert numbers == list(range(1, len(numbers) + 1))


def test_a_tokenizer_without_single_digit_tokens_has_no_lookup(tok):
    class Merged:
        def token_to_id(self, token):
            return None if token == "7" else tok.token_to_id(token)

    assert ReferenceLookup.from_tokenizer(Merged()) is None
    assert ReferenceLookup.from_tokenizer(None) is None


def _ids(tok: Tokenizer) -> tuple[int, list[int]]:
    return tok.token_to_id("@"), [tok.token_to_id(str(d)) for d in range(10)]


def test_the_longest_most_recent_earlier_occurrence_is_continued(lookup):
    """Against the definition written out: for n = max_n .. min_n, the latest start p < len - n with
    syms[p : p + n] == syms[-n:] (and, while a reference is open, a reference after it) whose continuation
    renders to a draft; random histories of references, digits and a few text tokens."""
    rng = random.Random(3)
    alphabet = [lookup.at_id] * 4 + lookup.digit_ids + list(range(4, 12))

    def oracle(history, k):
        syms, last, open_digits = lookup.symbols(lookup.patterns + history)
        length = len(syms)
        if length < lookup.min_n + 1:
            return [], 0
        for n in range(min(lookup.max_n, length - 1), lookup.min_n - 1, -1):
            hits = [p for p in range(length - n) if syms[p : p + n] == syms[length - n :]]
            if open_digits is not None:
                hits = [p for p in hits if syms[p + n] < 0]
            if hits:
                draft = lookup._render(syms, hits[-1] + n, last, open_digits, k)
                if draft:
                    return draft, n
        return [], 0

    for _ in range(300):
        history = [rng.choice(alphabet) for _ in range(rng.randint(0, 50))]
        assert lookup.propose(history, 3) == oracle(history, 3), history
