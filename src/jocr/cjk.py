"""Unicode ranges of CJK text, named once for the modules that tell Chinese (and Japanese, Korean) text
from Latin text: character classes are built from these strings (`f"[{HAN}]"`).

`WORDS` splits text into words the way comparisons of CJK and Latin text need it: a run of Latin letters or
digits is one word, each Han character is a word of its own (Chinese is written without spaces).
"""

from __future__ import annotations

import re

HAN = "\u3400-\u9fff"  # CJK Unified Ideographs Extension A and the unified block
HAN_COMPAT = "\uf900-\ufaff"  # CJK Compatibility Ideographs
CJK_PUNCT = "\u3000-\u303f"  # ideographic space and CJK symbols and punctuation (、。「」)
KANA = "\u3040-\u30ff"  # Hiragana and Katakana
HANGUL = "\uac00-\ud7af"  # Hangul syllables
FULLWIDTH = "\uff00-\uffef"  # halfwidth and fullwidth forms (，：（）)

WORDS = re.compile(f"[{HAN}]|[^\\W_{HAN}]+")
# One character of CJK writing: punctuation, kana, Han, Hangul or a full-width form.
CJK_CHAR = re.compile(f"[{CJK_PUNCT}{KANA}{HAN}{HAN_COMPAT}{FULLWIDTH}{HANGUL}]")
# A CJK or full-width punctuation mark ("：", "，", "。").
WIDE_MARK = re.compile(f"[{CJK_PUNCT}{FULLWIDTH}]")
