"""Tokenizer over a Hugging Face `tokenizers` tokenizer.json, with the DeepSeek-OCR special tokens and the
model's plain prompt template (image first, then text).

Special tokens are looked up by name, never by a fixed id, so the published DeepSeek-OCR / jina-ocr-v1
tokenizer (BOS 0, EOS 1, PAD 2, `<image>` 128815, `<td>` 128821, `</td>` 128822) and the small BPE trained for
the bundled model (specials first, ids 0..10) both work.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import AddedToken, decoders, models, pre_tokenizers, trainers
from tokenizers import Tokenizer as HFTokenizer

# Names as the published tokenizer spells them (fullwidth bar U+FF5C and U+2581 in the sentence tokens).
BOS_TOKEN = "<｜begin▁of▁sentence｜>"
EOS_TOKEN = "<｜end▁of▁sentence｜>"
PAD_TOKEN = "<｜▁pad▁｜>"
IMAGE_TOKEN = "<image>"
TD_OPEN_TOKEN = "<td>"
TD_CLOSE_TOKEN = "</td>"
REF_OPEN_TOKEN = "<|ref|>"
REF_CLOSE_TOKEN = "<|/ref|>"
DET_OPEN_TOKEN = "<|det|>"
DET_CLOSE_TOKEN = "<|/det|>"
GROUNDING_TOKEN = "<|grounding|>"

# Order matters for a freshly trained BPE: `tokenizers` trainers give special tokens ids 0..n-1 in list
# order, which puts BOS/EOS/PAD at 0/1/2 as in the published tokenizer.
SPECIAL_TOKENS: tuple[str, ...] = (
    BOS_TOKEN,
    EOS_TOKEN,
    PAD_TOKEN,
    IMAGE_TOKEN,
    TD_OPEN_TOKEN,
    TD_CLOSE_TOKEN,
    REF_OPEN_TOKEN,
    REF_CLOSE_TOKEN,
    DET_OPEN_TOKEN,
    DET_CLOSE_TOKEN,
    GROUNDING_TOKEN,
)

# Removed by `decode(skip_special_tokens=True)`. `<td>`/`</td>` are content (table cells) and the grounding
# tags carry boxes that layout/postprocess.py turns into JSON, so those are always kept.
CONTROL_TOKENS: tuple[str, ...] = (BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, IMAGE_TOKEN)

# Prompts. The default is jina-ocr-v1's published OCR prompt; the grounding and free-OCR prompts are
# DeepSeek-OCR's (DeepSeek-OCR-vllm/config.py); the element prompts are the project's own task prompts.
DEFAULT_PROMPT = (
    "Transcribe the provided document image into a clean Markdown format, "
    "preserving the natural reading order."
)
PROMPTS: dict[str, str] = {
    "ocr": DEFAULT_PROMPT,
    "free": "Free OCR.",
    "grounding": "<|grounding|>Convert the document to markdown.",
    "table": "Transcribe the table in the image as an HTML table.",
    "formula": "Transcribe the formula in the image as LaTeX.",
    "caption": "Describe the figure in the image in one or two sentences.",
}


# Document anchoring (docs/parsing.md): the anchor (jocr.lines.anchor) follows the prompt text between
# these plain-text delimiters (olmOCR wraps its anchor in RAW_TEXT_START / RAW_TEXT_END the same way).
ANCHOR_OPEN = "\n<anchor>\n"
ANCHOR_CLOSE = "\n</anchor>"


class Tokenizer:
    """Wrapper over `tokenizers.Tokenizer` exposing the ids the model, engine and trainers need."""

    def __init__(self, hf_tokenizer: HFTokenizer):
        self.hf = hf_tokenizer
        missing = [t for t in (BOS_TOKEN, EOS_TOKEN, IMAGE_TOKEN) if hf_tokenizer.token_to_id(t) is None]
        if missing:
            raise ValueError(f"tokenizer lacks required special tokens: {', '.join(missing)}")
        self.bos_id = self._id(BOS_TOKEN)
        self.eos_id = self._id(EOS_TOKEN)
        pad = hf_tokenizer.token_to_id(PAD_TOKEN)
        self.pad_id = self.eos_id if pad is None else pad
        self.image_id = self._id(IMAGE_TOKEN)
        td = (self.token_to_id(TD_OPEN_TOKEN), self.token_to_id(TD_CLOSE_TOKEN))
        self.td_ids = tuple(i for i in td if i is not None)
        self._control_ids = frozenset(i for i in map(self.token_to_id, CONTROL_TOKENS) if i is not None)

    def _id(self, token: str) -> int:
        return int(self.hf.token_to_id(token))

    # Construction ---------------------------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | Path) -> Tokenizer:
        return cls(HFTokenizer.from_file(str(path)))

    @classmethod
    def from_dir(cls, directory: str | Path) -> Tokenizer:
        path = Path(directory) / "tokenizer.json"
        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer.json in {directory}")
        return cls.from_file(path)

    @classmethod
    def byte_level(cls) -> Tokenizer:
        """A small tokenizer for tests: the special tokens (ids 0..10), then one token per byte (256)."""
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
        for ch in sorted(alphabet):
            vocab[ch] = len(vocab)
        hf = HFTokenizer(models.BPE(vocab=vocab, merges=[]))
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        hf.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
        return cls(hf)

    def save(self, path: str | Path) -> None:
        self.hf.save(str(path))

    # Encoding -------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return int(self.hf.get_vocab_size(with_added_tokens=True))

    def token_to_id(self, token: str) -> int | None:
        i = self.hf.token_to_id(token)
        return None if i is None else int(i)

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, without BOS/EOS; special-token strings inside `text` map to their ids."""
        return list(self.hf.encode(text, add_special_tokens=False).ids)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(e.ids) for e in self.hf.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of `ids`. With skip_special_tokens, BOS/EOS/PAD/`<image>` are dropped; `<td>`, `</td>` and
        the grounding tags are kept because they are part of the output format."""
        ids = [int(i) for i in ids]
        if skip_special_tokens:
            ids = [i for i in ids if i not in self._control_ids]
        return self.hf.decode(ids, skip_special_tokens=False)

    def build_prompt(
        self, prompt_text: str, image_token_counts: int | Sequence[int], anchor: str | None = None
    ) -> list[int]:
        """The plain template (DeepSeek-OCR `sft_format="plain"`): BOS, `<image>` x n for each image, then
        "\\n" + prompt. The image placeholders come first, exactly as `"<image>\\n" + prompt` tokenizes in the
        reference processor (empty text before the image, BOS added by the tokenizer).

        With `anchor` (jocr.lines.anchor.build_anchor's text), the prompt text is followed by
        ANCHOR_OPEN + anchor + ANCHOR_CLOSE: the one prompt format of anchored models, in training and
        inference."""
        counts = [image_token_counts] if isinstance(image_token_counts, int) else list(image_token_counts)
        ids = [self.bos_id]
        for n in counts:
            if n < 0:
                raise ValueError(f"negative image token count {n}")
            ids.extend([self.image_id] * n)
        ids.extend(self.encode("\n" + prompt_text))
        if anchor is not None:
            ids.extend(self.encode(ANCHOR_OPEN + anchor + ANCHOR_CLOSE))
        return ids

    def is_anchored(self, prompt_ids: Sequence[int]) -> bool:
        """Whether a prompt carries an anchor (`build_prompt(..., anchor=...)`): its text holds ANCHOR_OPEN.
        Decoded rather than matched as ids: byte-level BPE may merge the delimiter's last byte with the
        anchor's first ones."""
        return ANCHOR_OPEN in self.decode(prompt_ids)


def bpe_skeleton(
    vocab_size: int,
    min_frequency: int = 2,
    split_digits: bool = False,
    special_tokens: list[str] | None = None,
) -> tuple[HFTokenizer, trainers.BpeTrainer]:
    """An untrained byte-level BPE tokenizer and a trainer that gives the special tokens (default
    SPECIAL_TOKENS) ids 0..n-1 in order; `split_digits` makes every digit its own pre-token.

    Train with `hf.train_from_iterator(texts, trainer)`, then wrap: `Tokenizer(hf)`.
    """
    specials = list(SPECIAL_TOKENS) if special_tokens is None else list(special_tokens)
    hf = HFTokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    if split_digits:
        digits = pre_tokenizers.Digits(individual_digits=True)
        hf.pre_tokenizer = pre_tokenizers.Sequence([digits, byte_level])
    else:
        hf.pre_tokenizer = byte_level
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in specials],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    return hf, trainer
