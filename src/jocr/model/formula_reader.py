"""The formula reader: a formula strip in, its LaTeX out (docs/elements.md, "The formula reader").

A smaller shape than the page model, made for one job: the page model sees a crop as 12 x 12 vision tokens
of a 384-pixel square, too coarse for scripts and fraction bars (its formula training read 20% of fresh
crops after 6,000 steps: docs/results/training-log.md). This reader sees the formula as a strip 64 pixels
high (`jocr.documents.formula_strip`) through a small convolutional stem, one vision token per 8 x 16
pixels, and writes LaTeX in LaTeX tokens (a command, a character or a space each), so a 100-character
formula is about 50 tokens.

    strip (B, 1, 64, W) -> stem (B, D, 4, W/8) -> + row/column embeddings -> encoder (B, 4*W/8, D)
    ids (B, T) -> token + position embeddings -> causal decoder with cross-attention -> logits (B, T, V)

The module is pure: `encode` and `decode` compute, the greedy loop is `jocr.engine.formula.read_strips`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import torch
from torch import nn

MODEL_TYPE = "jocr-formula"
PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
# A command (\frac), an escaped sign (\, \{ \|), or one character (a space included: it separates \sin x).
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|.", re.S)


def latex_tokens(latex: str) -> list[str]:
    """LaTeX split as the reader writes it; "".join gives `latex` back."""
    return _TOKEN.findall(latex)


@dataclass
class FormulaReaderConfig:
    """The reader's shape and its vocabulary (the token strings, specials first)."""

    strip_height: int = 64
    dim: int = 192
    heads: int = 4
    ffn: int = 768
    encoder_layers: int = 2
    decoder_layers: int = 3
    max_columns: int = 128  # the widest strip (1024 px) / 8
    max_tokens: int = 256
    dropout: float = 0.1
    vocab: list[str] = field(default_factory=lambda: list(SPECIALS))

    def to_dict(self) -> dict:
        return {"model_type": MODEL_TYPE, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> FormulaReaderConfig:
        if data.get("model_type") != MODEL_TYPE:
            raise ValueError(f"not a formula reader config (model_type {data.get('model_type')!r})")
        return cls(**{k: v for k, v in data.items() if k != "model_type"})


class LatexVocab:
    """Token strings <-> ids of one reader (its config's `vocab`)."""

    def __init__(self, tokens: list[str]):
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.pad, self.bos, self.eos, self.unk = (self.ids[s] for s in SPECIALS)

    def encode(self, latex: str) -> list[int]:
        """BOS, the LaTeX's tokens, EOS; a token outside the vocabulary is UNK."""
        return [self.bos, *(self.ids.get(t, self.unk) for t in latex_tokens(latex)), self.eos]

    def decode(self, ids: list[int]) -> str:
        """The LaTeX of ids up to the first EOS (specials dropped)."""
        out = []
        for i in ids:
            if i == self.eos:
                break
            if i >= len(SPECIALS):
                out.append(self.tokens[i])
        return "".join(out)


def _conv(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


class FormulaReader(nn.Module):
    """Strip encoder + LaTeX decoder (shapes in the module docstring)."""

    def __init__(self, config: FormulaReaderConfig):
        super().__init__()
        self.config = config
        d = config.dim
        self.stem = nn.Sequential(
            *_conv(1, 32), nn.MaxPool2d(2),  # (B, 32, 32, W/2)
            *_conv(32, 64), nn.MaxPool2d(2),  # (B, 64, 16, W/4)
            *_conv(64, 96), nn.MaxPool2d(2),  # (B, 96, 8, W/8)
            *_conv(96, d), nn.MaxPool2d((2, 1)),  # (B, D, 4, W/8)
        )  # fmt: skip
        self.rows = nn.Parameter(torch.zeros(config.strip_height // 16, d))
        self.columns = nn.Parameter(torch.zeros(config.max_columns, d))
        nn.init.normal_(self.rows, std=0.02)
        nn.init.normal_(self.columns, std=0.02)
        layer = nn.TransformerEncoderLayer(d, config.heads, config.ffn, config.dropout, batch_first=True,
                                           norm_first=True)  # fmt: skip
        self.encoder = nn.TransformerEncoder(layer, config.encoder_layers, enable_nested_tensor=False)
        self.embed = nn.Embedding(len(config.vocab), d)
        nn.init.normal_(self.embed.weight, std=0.02)  # tied to the output: logits start near 0
        self.positions = nn.Parameter(torch.zeros(config.max_tokens, d))
        nn.init.normal_(self.positions, std=0.02)
        layer = nn.TransformerDecoderLayer(d, config.heads, config.ffn, config.dropout, batch_first=True,
                                           norm_first=True)  # fmt: skip
        self.decoder = nn.TransformerDecoder(layer, config.decoder_layers)
        self.norm = nn.LayerNorm(d)

    def encode(self, strips: torch.Tensor, widths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """strips (B, 1, H, W) in [0, 1], widths (B,) the strips' own widths in pixels before padding ->
        memory (B, S, D) and its padding mask (B, S), True where a position is padding."""
        x = self.stem(strips)  # (B, D, R, C)
        b, d, r, c = x.shape
        x = x.permute(0, 2, 3, 1) + self.rows[:r, None, :] + self.columns[None, :c, :]  # (B, R, C, D)
        columns = torch.arange(c, device=strips.device)
        pad = columns[None, :] >= ((widths + 7) // 8)[:, None]  # (B, C)
        pad = pad[:, None, :].expand(b, r, c).reshape(b, r * c)  # (B, R*C)
        memory = self.encoder(x.reshape(b, r * c, d), src_key_padding_mask=pad)  # (B, S, D)
        return memory, pad

    def decode(self, ids: torch.Tensor, memory: torch.Tensor, memory_pad: torch.Tensor) -> torch.Tensor:
        """ids (B, T) -> logits (B, T, V) of the next token at each place (causal)."""
        t = ids.shape[1]
        x = self.embed(ids) + self.positions[:t]  # (B, T, D)
        causal = torch.triu(torch.full((t, t), float("-inf"), device=ids.device), diagonal=1)
        x = self.decoder(x, memory, tgt_mask=causal, memory_key_padding_mask=memory_pad)  # (B, T, D)
        return self.norm(x) @ self.embed.weight.T  # (B, T, V)

    def forward(self, strips: torch.Tensor, widths: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, T, V) for ids (B, T)."""
        memory, pad = self.encode(strips, widths)
        return self.decode(ids, memory, pad)


CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


def save_formula_reader(model: FormulaReader, directory) -> None:
    """`config.json` + `model.safetensors`: the 2-D weights (linear layers, embeddings, position tables) as
    weight-only int8 with one scale per row (`jocr.model.weights.quantize_int8`, the asking member's
    scheme), every other tensor in fp16, so the bundle stays under its 50 MB (docs/asking.md). The
    readings were compared with the fp16 weights' before bundling (docs/results/
    2026-12-07-formula-reader.md)."""
    import json
    from pathlib import Path

    from safetensors.torch import save_file

    from jocr.model.weights import DTYPE_KEY, INT8, QUANTIZATION_KEY, SCALE_SUFFIX, quantize_int8

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CONFIG_FILE).write_text(json.dumps(model.config.to_dict(), indent=1, ensure_ascii=False))
    state = {}
    for key, value in model.state_dict().items():
        if value.is_floating_point() and value.dim() == 2:
            state[key], state[key + SCALE_SUFFIX] = quantize_int8(value.detach())
        else:
            state[key] = (value.half() if value.is_floating_point() else value).contiguous()
    save_file(state, str(directory / WEIGHTS_FILE), metadata={QUANTIZATION_KEY: INT8, DTYPE_KEY: "float16"})


def is_formula_reader(directory) -> bool:
    """Whether `directory` holds a formula reader (its config says so); False for anything else."""
    import json
    from pathlib import Path

    try:
        return json.loads((Path(directory) / CONFIG_FILE).read_text()).get("model_type") == MODEL_TYPE
    except (OSError, ValueError, AttributeError):
        return False


def load_formula_reader(directory) -> tuple[FormulaReader, LatexVocab]:
    """The reader saved in `directory` (fp32, eval mode; int8 weights dequantized) and its vocabulary."""
    import json
    from pathlib import Path

    from safetensors.torch import load_file

    from jocr.model.weights import SCALE_SUFFIX, dequantize_int8

    directory = Path(directory)
    config = FormulaReaderConfig.from_dict(json.loads((directory / CONFIG_FILE).read_text()))
    model = FormulaReader(config)
    stored = load_file(str(directory / WEIGHTS_FILE))
    state = {}
    for key, value in stored.items():
        if key.endswith(SCALE_SUFFIX):
            continue
        if (
            value.dtype == torch.int8 and key + SCALE_SUFFIX in stored
        ):  # weight-only int8 (`save_formula_reader`)
            state[key] = dequantize_int8(value, stored[key + SCALE_SUFFIX], torch.float32)
        else:
            state[key] = value.float() if value.is_floating_point() else value
    model.load_state_dict(state)
    return model.eval(), LatexVocab(config.vocab)
