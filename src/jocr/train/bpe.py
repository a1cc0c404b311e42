"""Train a small byte-level BPE on synthetic page text with the published special tokens.

A small vocabulary keeps the embedding and lm_head tiny and gives each id many training examples, which is
what a reader trained on two CPU cores needs (DESIGN.md, "Training a reader on two CPU cores"). The special
tokens are those of `jocr.tokenizer.SPECIAL_TOKENS`, in that order, at ids 0..n-1, so BOS/EOS/PAD/`<image>`/
`<td>` are found by name and every code path (prompt building, table cells, grounding) works unchanged.
Digits are split one per token: page numbers and table values are arbitrary, and single digits generalise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer

from jocr.tokenizer import bpe_skeleton


def train_bpe(
    texts: Iterable[str],
    vocab_size: int,
    special_tokens: list[str] | None = None,
    min_frequency: int = 2,
) -> HFTokenizer:
    """Train a byte-level BPE over texts; special tokens get ids 0..len(special_tokens)-1 in order."""
    tok, trainer = bpe_skeleton(vocab_size, min_frequency, split_digits=True, special_tokens=special_tokens)
    tok.train_from_iterator(_non_empty(texts), trainer=trainer)
    return tok


def _non_empty(texts: Iterable[str]) -> Iterator[str]:
    for t in texts:
        if t:
            yield t


def synth_corpus(num_pages: int, profiles: list[str], seed: int = 10_000_000, extra: list[str] | None = None):
    """Markdown of synthetic pages (rendering skipped where the generator allows) plus extra strings.

    The seed range starts far from the training range so the tokenizer sees text, not the exact targets.
    """
    from jocr.synth import generate_page

    yield from extra or []
    for i in range(num_pages):
        profile = profiles[i % len(profiles)]
        yield generate_page(seed + i, profile, False).markdown


def save_tokenizer(tok: HFTokenizer, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path
