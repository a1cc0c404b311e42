"""Model configuration: one dataclass per component, nested in `OCRConfig`, plus presets and JSON IO.

Two `config.json` dialects are read:
- our own (`{"model_type": "jocr", "vision": {...}, "decoder": {...}, "mtp": {...}, ...}`), written by
  `OCRConfig.save`;
- the published DeepSeek-OCR / jina-ocr-v1 naming (`language_config`, `vision_config.width.{sam_vit_b,
  clip-l-14-224}`, `projector_config`, language fields repeated at top level, `num_nextn_predict_layers`).
Only torch-free standard library here: this module sits at the bottom of the dependency order.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from jocr.types import count_image_tokens

# Keys Transformers writes into a config.json (an exported repository's, `jocr export hf`): bookkeeping, not
# model settings, so jocr's own dialect skips them.
HF_BOOKKEEPING_KEYS = frozenset(
    {
        "architectures",
        "auto_map",
        "torch_dtype",
        "dtype",
        "transformers_version",
        "_name_or_path",
        "tie_word_embeddings",
    }
)


def from_known_keys(cls, data: dict[str, Any], where: str | None = None):
    """Build a dataclass from a dict, refusing unknown keys (a typo must not silently fall back); the error
    names `where` (default: the class) and the unknown keys."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{where or cls.__name__}: unknown key(s) {', '.join(unknown)}")
    return cls(**data)


@dataclass
class VisionConfig:
    """DeepEncoder: SAM-style windowed ViT -> 16x conv compressor -> CLIP-style ViT -> projector.

    Defaults are the published DeepSeek-OCR values (DeepSeek-OCR's `config.json` and `deepencoder/`).
    """

    # SAM-style ViT (build_sam_vit_b in DeepSeek-OCR's deepencoder/sam_vary_sdpa.py).
    patch_size: int = 16
    sam_image_size: int = 1024  # size its absolute position table was trained for (64x64 at patch 16)
    sam_width: int = 768
    sam_depth: int = 12
    sam_heads: int = 12
    sam_mlp_ratio: float = 4.0
    sam_window_size: int = 14
    sam_global_attn_indexes: tuple[int, ...] = (2, 5, 8, 11)
    sam_out_channels: int = 256  # neck output
    sam_layernorm_eps: float = 1e-6
    # Compressor: one Conv2d(k3, s2, p1, no bias) per entry (net_2, net_3).
    compressor_channels: tuple[int, ...] = (512, 1024)
    # CLIP-style ViT over the compressed map (clip_sdpa.py's vit_model_cfg).
    clip_width: int = 1024
    clip_depth: int = 24
    clip_heads: int = 16
    clip_ffn: int = 4096
    clip_image_size: int = 224  # with clip_patch_size: a 16x16 + CLS position table (257 rows)
    clip_patch_size: int = 14  # its patch conv exists in checkpoints but is never used
    clip_layernorm_eps: float = 1e-5
    # Projector Linear(clip_width + compressor_channels[-1] -> projector_dim).
    projector_dim: int = 1280
    # Preprocessing (documents/preprocess.py reads these).
    base_size: int = 1024
    tile_size: int = 640
    crop_mode: bool = True
    min_tiles: int = 2
    # Tile-count limit: DeepSeek-OCR's Transformers code allows 2-9 tiles, its vLLM config and vLLM's
    # processor 2-6 (a 1920x1080 page gets 4x2 tiles under 9, 2x1 under 6); `--max-tiles` overrides it.
    max_tiles: int = 9
    single_view_fit: str = "pad"  # "pad" (base/large modes) or "resize" (tiny/small modes)

    @property
    def compress_factor(self) -> int:
        """Spatial reduction of the compressor: the product of its stride-2 convs (4 when published)."""
        return 2 ** len(self.compressor_channels)

    @property
    def feature_dim(self) -> int:
        """Width of concat(CLIP without CLS, SAM compressed map): the projector's input (2048)."""
        return self.clip_width + self.compressor_channels[-1]

    @property
    def clip_grid(self) -> int:
        """Side of CLIP's trained position grid (16 when published)."""
        return self.clip_image_size // self.clip_patch_size

    def validate(self) -> None:
        if self.compressor_channels[-1] != self.clip_width:
            raise ValueError("compressor_channels[-1] must equal clip_width (CLIP takes the compressed map)")
        if self.sam_width % self.sam_heads or self.clip_width % self.clip_heads:
            raise ValueError("vision widths must be divisible by their head counts")
        if self.single_view_fit not in ("pad", "resize"):
            raise ValueError(f"single_view_fit must be 'pad' or 'resize', not {self.single_view_fit!r}")
        for name in ("base_size", "tile_size"):
            size = getattr(self, name)
            if size % (self.patch_size * self.compress_factor):
                raise ValueError(f"{name}={size} is not a multiple of patch_size * compress_factor")
        if not 1 <= self.min_tiles <= self.max_tiles:
            raise ValueError(
                f"need 1 <= min_tiles <= max_tiles (min_tiles {self.min_tiles}, max_tiles {self.max_tiles})"
            )
        if any(not 0 <= i < self.sam_depth for i in self.sam_global_attn_indexes):
            raise ValueError("sam_global_attn_indexes out of range")


@dataclass
class DecoderConfig:
    """DeepSeek-V2-style MoE decoder with plain multi-head attention (DeepSeek3B-MoE-A570M)."""

    vocab_size: int = 129280
    hidden_size: int = 1280
    num_hidden_layers: int = 12
    num_attention_heads: int = 10
    num_key_value_heads: int = 10
    head_dim: int = 128
    rope_theta: float = 1e6
    max_position_embeddings: int = 32768
    rms_norm_eps: float = 1e-6
    first_k_dense_replace: int = 1
    intermediate_size: int = 6848  # dense MLP of the first layers (and the MTP block)
    n_routed_experts: int = 64
    num_experts_per_tok: int = 6
    moe_intermediate_size: int = 896
    n_shared_experts: int = 2  # one MLP of width n_shared_experts * moe_intermediate_size
    routed_scaling_factor: float = 1.0
    norm_topk_prob: bool = False

    def is_moe_layer(self, layer_idx: int) -> bool:
        return layer_idx >= self.first_k_dense_replace and self.n_routed_experts > 0

    def validate(self) -> None:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.head_dim % 2:
            raise ValueError("head_dim must be even for rotate-half RoPE")
        if self.n_routed_experts and not 1 <= self.num_experts_per_tok <= self.n_routed_experts:
            raise ValueError("need 1 <= num_experts_per_tok <= n_routed_experts")


@dataclass
class MTPConfig:
    """FastMTP draft head (arXiv 2509.18362): one dense block reused for every draft step."""

    enabled: bool = True
    num_steps: int = 3  # K draft tokens per speculative step
    # State fed to the head: the verifier's / previous step's hidden state taken before ("pre_norm") or after
    # ("post_norm") the shared final norm. Public ports disagree, so it is a switch.
    feedback: str = "pre_norm"
    share_embedding: bool = True
    share_norm: bool = True
    share_lm_head: bool = True

    def validate(self) -> None:
        if self.feedback not in ("pre_norm", "post_norm"):
            raise ValueError(f"mtp.feedback must be 'pre_norm' or 'post_norm', not {self.feedback!r}")
        if self.num_steps < 1:
            raise ValueError("mtp.num_steps must be >= 1")


@dataclass
class AnchorConfig:
    """Document anchoring (docs/parsing.md): the page's text layer in the prompt beside the image.

    `version` is the anchor format the model was trained with (jocr.lines.anchor.ANCHOR_VERSION); 0 means
    trained on images alone, so `--anchor auto` never gives it one. `max_tokens` is the anchor's token budget.
    `ocr`: trained on OCR anchors too (the profile "vector-ocr", docs/training.md), so `--anchor auto` gives
    it the anchor of an OCR'd page; a model trained on text-layer anchors alone leaves those pages to the
    rules over lines (`jocr.lines.anchor.page_anchor`).
    """

    version: int = 0
    max_tokens: int = 1024
    ocr: bool = False

    def validate(self) -> None:
        if self.version < 0:
            raise ValueError("anchor.version must be >= 0")
        if self.max_tokens < 1:
            raise ValueError("anchor.max_tokens must be >= 1")


@dataclass
class ElementsConfig:
    """Element tasks a model was trained on beyond page reading (docs/elements.md).

    `formula`: trained on formula crops under the formula prompt (the profile "formula-crop",
    docs/training.md), so the page pipeline has it read the formula regions of pages read from pixels
    (`jocr.pipeline.formulas`); a model without it leaves those regions as their OCR text.
    """

    formula: bool = False


@dataclass
class OCRConfig:
    vision: VisionConfig = field(default_factory=VisionConfig)
    decoder: DecoderConfig = field(default_factory=DecoderConfig)
    mtp: MTPConfig = field(default_factory=MTPConfig)
    anchor: AnchorConfig = field(default_factory=AnchorConfig)
    elements: ElementsConfig = field(default_factory=ElementsConfig)
    bos_token_id: int = 0
    eos_token_id: int = 1
    pad_token_id: int = 2
    image_token_id: int = 128815

    def __post_init__(self) -> None:
        # Accept nested dicts so `OCRConfig(**json)` works too.
        if isinstance(self.vision, dict):
            self.vision = _vision_from_dict(self.vision)
        if isinstance(self.decoder, dict):
            self.decoder = from_known_keys(DecoderConfig, self.decoder)
        if isinstance(self.mtp, dict):
            self.mtp = from_known_keys(MTPConfig, self.mtp)
        if isinstance(self.anchor, dict):
            self.anchor = from_known_keys(AnchorConfig, self.anchor)
        if isinstance(self.elements, dict):
            self.elements = from_known_keys(ElementsConfig, self.elements)

    def validate(self) -> OCRConfig:
        self.vision.validate()
        self.decoder.validate()
        self.mtp.validate()
        self.anchor.validate()
        if self.vision.projector_dim != self.decoder.hidden_size:
            raise ValueError("vision.projector_dim must equal decoder.hidden_size")
        for name in ("bos_token_id", "eos_token_id", "pad_token_id", "image_token_id"):
            if not 0 <= getattr(self, name) < self.decoder.vocab_size:
                raise ValueError(f"{name}={getattr(self, name)} is outside the vocabulary")
        return self

    # Token layout ---------------------------------------------------------------------------------------
    def image_token_count(self, grid: tuple[int, int] = (1, 1), tiled: bool = False) -> int:
        """`<image>` placeholders for one image: global view (+ tile grid when tiled)."""
        v = self.vision
        return count_image_tokens(grid, tiled, v.base_size, v.tile_size, v.patch_size, v.compress_factor)

    # JSON IO --------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["vision"]["sam_global_attn_indexes"] = list(self.vision.sam_global_attn_indexes)
        data["vision"]["compressor_channels"] = list(self.vision.compressor_channels)
        return {"model_type": "jocr", **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OCRConfig:
        """Our own layout, or the published DeepSeek-OCR / jina-ocr-v1 `config.json` naming."""
        if data.get("model_type") == "jocr" or "decoder" in data:
            data = {k: v for k, v in data.items() if k != "model_type" and k not in HF_BOOKKEEPING_KEYS}
            return from_known_keys(cls, data).validate()
        return from_published_dict(data)

    def save(self, path: str | Path) -> Path:
        """Write `config.json` (path may be the file or its directory)."""
        path = Path(path)
        if path.is_dir() or path.suffix != ".json":
            path.mkdir(parents=True, exist_ok=True)
            path = path / "config.json"
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> OCRConfig:
        path = Path(path)
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise FileNotFoundError(f"no config.json at {path}")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: invalid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object")
        return cls.from_dict(with_tokenizer_image_id(data, path.parent))

    @classmethod
    def preset(cls, name: str) -> OCRConfig:
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return PRESETS[name]().validate()


def with_tokenizer_image_id(data: dict[str, Any], directory: str | Path) -> dict[str, Any]:
    """`data` (a config.json's contents from `directory`) with the `<image>` id filled in where it lacks one.

    The published DeepSeek-OCR config.json does not name the `<image>` id; like vLLM, take it from the
    tokenizer beside it rather than assume the published tokenizer's 128815 (jocr's own configs name it).
    """
    if not _published_without_image_id(data):
        return data
    return {**data, "image_token_id": tokenizer_image_id(directory)}


def _published_without_image_id(data: dict[str, Any]) -> bool:
    if data.get("model_type") == "jocr" or "decoder" in data:
        return False
    lang = data.get("language_config") or {}
    return data.get("image_token_id") is None and lang.get("image_token_id") is None


def tokenizer_image_id(directory: str | Path) -> int:
    """The id of `<image>` in `directory/tokenizer.json` (its added tokens, else its vocabulary)."""
    directory = Path(directory)
    path = directory / "tokenizer.json"
    fix = (
        f'add "image_token_id": <the id of <image> in the model\'s tokenizer> to '
        f"{directory / 'config.json'}, or put the model's tokenizer.json in {directory}"
    )
    if not path.is_file():
        raise ValueError(
            f"{directory}: config.json does not name image_token_id and there is no tokenizer.json; {fix}"
        )
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: invalid JSON ({exc}); {fix}") from None
    for token in data.get("added_tokens") or []:
        if isinstance(token, dict) and token.get("content") == "<image>" and isinstance(token.get("id"), int):
            return token["id"]
    vocab = (data.get("model") or {}).get("vocab")
    if isinstance(vocab, dict) and isinstance(vocab.get("<image>"), int):
        return vocab["<image>"]
    raise ValueError(
        f"{directory}: config.json does not name image_token_id and tokenizer.json has no <image> token; "
        f"{fix}"
    )


def _vision_from_dict(data: dict[str, Any]) -> VisionConfig:
    data = dict(data)
    for key in ("sam_global_attn_indexes", "compressor_channels"):
        if key in data:
            data[key] = tuple(data[key])
    return from_known_keys(VisionConfig, data)


def from_published_dict(data: dict[str, Any]) -> OCRConfig:
    """Map DeepSeek-OCR's Hugging Face `config.json` (and jina-ocr-v1's additions) onto `OCRConfig`.

    Language fields are read from `language_config`, overridden by the copies at top level; fields the file
    omits take the library defaults that the reference runtimes use (RoPE base 10000, RMSNorm eps 1e-6).
    """
    lang = dict(data.get("language_config") or {})
    lang.update({k: v for k, v in data.items() if k not in ("language_config", "vision_config")})

    def get(key: str, default: Any) -> Any:
        value = lang.get(key)
        return default if value is None else value

    hidden = int(get("hidden_size", 1280))
    heads = int(get("num_attention_heads", 10))
    rope_theta = lang.get("rope_theta")
    if rope_theta is None and isinstance(lang.get("rope_parameters"), dict):
        rope_theta = lang["rope_parameters"].get("rope_theta")
    decoder = DecoderConfig(
        vocab_size=int(get("vocab_size", 129280)),
        hidden_size=hidden,
        num_hidden_layers=int(get("num_hidden_layers", 12)),
        num_attention_heads=heads,
        num_key_value_heads=int(get("num_key_value_heads", heads)),
        head_dim=int(lang.get("head_dim") or hidden // heads),
        rope_theta=float(rope_theta if rope_theta is not None else 10000.0),
        max_position_embeddings=int(get("max_position_embeddings", 8192)),
        rms_norm_eps=float(get("rms_norm_eps", 1e-6)),
        first_k_dense_replace=int(get("first_k_dense_replace", 0)),
        intermediate_size=int(get("intermediate_size", 6848)),
        n_routed_experts=int(get("n_routed_experts", 0)),
        num_experts_per_tok=int(get("num_experts_per_tok", 1)),
        moe_intermediate_size=int(get("moe_intermediate_size", 896)),
        n_shared_experts=int(get("n_shared_experts", 0)),
        routed_scaling_factor=float(get("routed_scaling_factor", 1.0)),
        norm_topk_prob=bool(get("norm_topk_prob", False)),
    )
    if lang.get("use_mla"):
        raise ValueError(
            "config uses MLA attention (use_mla: true); only plain multi-head attention is supported"
        )
    if get("topk_method", "greedy") != "greedy" or get("scoring_func", "softmax") != "softmax":
        raise ValueError("only greedy top-k routing over softmax scores is supported")

    vcfg = data.get("vision_config") or {}
    width = vcfg.get("width") or {}
    sam = width.get("sam_vit_b") or {}
    clip = width.get("clip-l-14-224") or {}
    proj = data.get("projector_config") or {}
    defaults = VisionConfig()
    base = int(vcfg.get("image_size", defaults.base_size))
    vision = VisionConfig(
        sam_image_size=base,
        sam_width=int(sam.get("width", defaults.sam_width)),
        sam_depth=int(sam.get("layers", defaults.sam_depth)),
        sam_heads=int(sam.get("heads", defaults.sam_heads)),
        sam_global_attn_indexes=tuple(sam.get("global_attn_indexes", defaults.sam_global_attn_indexes)),
        compressor_channels=tuple(sam.get("downsample_channels", defaults.compressor_channels)),
        clip_width=int(clip.get("width", defaults.clip_width)),
        clip_depth=int(clip.get("layers", defaults.clip_depth)),
        clip_heads=int(clip.get("heads", defaults.clip_heads)),
        clip_image_size=int(clip.get("image_size", defaults.clip_image_size)),
        clip_patch_size=int(clip.get("patch_size", defaults.clip_patch_size)),
        projector_dim=int(proj.get("n_embed", hidden)),
        base_size=base,
    )
    if "input_dim" in proj and int(proj["input_dim"]) != vision.feature_dim:
        raise ValueError(
            f"projector_config.input_dim {proj['input_dim']} != CLIP + SAM width {vision.feature_dim}"
        )
    if data.get("tile_tag", "2D") != "2D":
        raise ValueError(f"tile_tag must be '2D', not {data.get('tile_tag')!r}")

    n_mtp = int(get("num_nextn_predict_layers", 0))
    mtp = MTPConfig(
        enabled=n_mtp > 0,
        num_steps=int(get("mtp_num_speculative_steps", 3)),
        feedback=str(get("mtp_feedback", "pre_norm")),
    )
    return OCRConfig(
        vision=vision,
        decoder=decoder,
        mtp=mtp,
        bos_token_id=int(get("bos_token_id", 0)),
        eos_token_id=int(get("eos_token_id", 1)),
        pad_token_id=int(get("pad_token_id", 2)),
        image_token_id=int(get("image_token_id", 128815)),
    ).validate()


def deepseek_ocr_config() -> OCRConfig:
    """The published DeepSeek-OCR model with jina-ocr-v1's RoPE base 1e6 / 32768 positions."""
    return OCRConfig()


def tiny_config() -> OCRConfig:
    """A few million parameters for CPU tests: 2 decoder layers (1 dense, 1 MoE with 4 experts, top-2),
    head_dim 32 (vLLM's CPU attention kernels need >= 32), 128-pixel global views of 4x4 tokens and 64-pixel
    tiles of 2x2 tokens (patch 8, compress factor 4)."""
    vision = VisionConfig(
        patch_size=8,
        sam_image_size=128,
        sam_width=64,
        sam_depth=2,
        sam_heads=2,
        sam_window_size=4,
        sam_global_attn_indexes=(1,),
        sam_out_channels=32,
        compressor_channels=(64, 128),
        clip_width=128,
        clip_depth=2,
        clip_heads=4,
        clip_ffn=256,
        clip_image_size=8,
        clip_patch_size=2,
        projector_dim=128,
        base_size=128,
        tile_size=64,
        crop_mode=True,
        min_tiles=2,
        max_tiles=6,
    )
    decoder = DecoderConfig(
        vocab_size=512,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=32,
        rope_theta=10000.0,
        max_position_embeddings=4096,
        first_k_dense_replace=1,
        intermediate_size=256,
        n_routed_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=64,
        n_shared_experts=1,
    )
    return OCRConfig(vision=vision, decoder=decoder, mtp=MTPConfig(num_steps=3), image_token_id=3)


PRESETS = {"deepseek-ocr": deepseek_ocr_config, "tiny": tiny_config}
