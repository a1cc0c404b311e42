"""Tokenizer: special tokens by name, decoding rules, the plain prompt template, the BPE skeleton."""

from __future__ import annotations

import json

from tokenizers import AddedToken, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from jocr.tokenizer import (
    BOS_TOKEN,
    DEFAULT_PROMPT,
    EOS_TOKEN,
    IMAGE_TOKEN,
    PAD_TOKEN,
    PROMPTS,
    SPECIAL_TOKENS,
    Tokenizer,
    bpe_skeleton,
)


def test_byte_level_ids_and_round_trip():
    tok = Tokenizer.byte_level()
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.image_id) == (0, 1, 2, 3)
    assert tok.td_ids == (4, 5)
    assert tok.vocab_size == len(SPECIAL_TOKENS) + 256
    text = "Größe 4.5% — 中文 <td>x</td> $\\frac{a}{b}$\n"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert ids.count(tok.td_ids[0]) == 1 and ids.count(tok.td_ids[1]) == 1  # cell tags are single tokens


def test_decode_drops_only_control_tokens():
    tok = Tokenizer.byte_level()
    body = tok.encode("<|ref|>title<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|># A<td>")
    ids = [tok.bos_id, tok.image_id, *body, tok.pad_id, tok.eos_id]
    assert tok.decode(ids) == "<|ref|>title<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|># A<td>"
    assert tok.decode(ids, skip_special_tokens=False).startswith(BOS_TOKEN + IMAGE_TOKEN)


def test_build_prompt_matches_the_reference_layout():
    """DeepSeek-OCR tokenizes "<image>\\n" + prompt by splitting at <image>: the empty text before it, the
    image placeholders, then "\\n" + prompt; BOS is added in front."""
    tok = Tokenizer.byte_level()
    conversation = "<image>\n" + DEFAULT_PROMPT
    before, after = conversation.split("<image>")
    reference = [tok.bos_id] + tok.encode(before) + [tok.image_id] * 273 + tok.encode(after)
    assert tok.build_prompt(DEFAULT_PROMPT, [273]) == reference
    assert tok.build_prompt(DEFAULT_PROMPT, 273) == reference
    grounding = tok.build_prompt(PROMPTS["grounding"], [5])
    assert grounding[1:6] == [tok.image_id] * 5 and tok.decode(grounding[6:7]) == "\n"
    assert grounding[7] == tok.token_to_id("<|grounding|>")  # the task tag is one token
    assert tok.decode(grounding) == "\n<|grounding|>Convert the document to markdown."


def test_special_tokens_found_by_name_at_any_id(tmp_path):
    """A tokenizer laid out like the published one (specials far from 0..10) works through from_file."""
    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    hf = HFTokenizer(models.BPE(vocab=vocab, merges=[]))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.add_special_tokens([AddedToken(t, special=True) for t in reversed(SPECIAL_TOKENS)])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = Tokenizer.from_dir(tmp_path)
    assert tok.bos_id == hf.token_to_id(BOS_TOKEN) == 256 + len(SPECIAL_TOKENS) - 1
    assert tok.pad_id == hf.token_to_id(PAD_TOKEN) and tok.eos_id == hf.token_to_id(EOS_TOKEN)
    assert json.loads(path.read_text())["added_tokens"]


def test_bpe_skeleton_puts_specials_first():
    hf, trainer = bpe_skeleton(vocab_size=400, min_frequency=1)
    hf.train_from_iterator(
        ["<table><tr><td>Revenue</td><td>4.5%</td></tr></table> The quick fox."] * 20, trainer
    )
    tok = Tokenizer(hf)
    assert [hf.token_to_id(t) for t in SPECIAL_TOKENS] == list(range(len(SPECIAL_TOKENS)))
    text = "<td>Revenue</td> fox"
    assert tok.decode(tok.encode(text)) == text
    assert len(tok.encode(text)) < len(text)
