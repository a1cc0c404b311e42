"""Vision parity: our SAM encoder (+ compressor) vs transformers' DeepSeek-OCR-2 SAM encoder (same design),
and our CLIP part vs transformers' CLIPVisionModel where the layouts line up (split vs packed qkv)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from jocr.config import VisionConfig
from jocr.model.vision import ClipEncoder, SamEncoder, resize_abs_pos_2d
from jocr.model.weights import init_weights

transformers = pytest.importorskip("transformers")

SAM = VisionConfig(
    patch_size=8,
    sam_image_size=128,
    sam_width=64,
    sam_depth=3,
    sam_heads=2,
    sam_window_size=5,  # 16x16 grid -> windows padded to 20x20: exercises window padding
    sam_global_attn_indexes=(1,),
    sam_out_channels=32,
    compressor_channels=(48, 96),
    clip_width=96,
    clip_heads=3,
    clip_ffn=128,
    clip_depth=2,
    clip_image_size=8,
    clip_patch_size=2,
    projector_dim=64,
    base_size=128,
    tile_size=64,
)


def hf_sam(config: VisionConfig):
    from transformers.models.deepseek_ocr2.configuration_deepseek_ocr2 import DeepseekOcr2SamVisionConfig
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import DeepseekOcr2SamVisionEncoder

    hf_config = DeepseekOcr2SamVisionConfig(
        hidden_size=config.sam_width,
        output_channels=config.sam_out_channels,
        num_hidden_layers=config.sam_depth,
        num_attention_heads=config.sam_heads,
        image_size=config.sam_image_size,
        patch_size=config.patch_size,
        mlp_ratio=config.sam_mlp_ratio,
        window_size=config.sam_window_size,
        global_attn_indexes=list(config.sam_global_attn_indexes),
        downsample_channels=list(config.compressor_channels),
        layer_norm_eps=config.sam_layernorm_eps,
    )
    hf_config._attn_implementation = "eager"
    return DeepseekOcr2SamVisionEncoder(hf_config).eval()


def sam_key_map(key: str) -> str:
    """transformers' DeepSeek-OCR-2 SAM names -> the published DeepSeek-OCR names we use."""
    prefixes = [
        ("patch_embed.projection.", "patch_embed.proj."),
        ("neck.conv1.", "neck.0."),
        ("neck.layer_norm1.", "neck.1."),
        ("neck.conv2.", "neck.2."),
        ("neck.layer_norm2.", "neck.3."),
        ("proj.conv1.", "net_2."),
        ("proj.conv2.", "net_3."),
    ]
    for old, new in prefixes:
        if key.startswith(old):
            return new + key[len(old) :]
    if key.startswith("layers."):
        key = "blocks." + key[len("layers.") :]
        key = key.replace(".layer_norm1.", ".norm1.").replace(".layer_norm2.", ".norm2.")
    return key


@pytest.mark.parametrize("size", [128, 64])  # trained size, and a smaller view (position tables resized)
def test_sam_matches_transformers_deepseek_ocr2(size):
    ours = SamEncoder(SAM)
    init_weights(ours, std=0.05, seed=2)
    with torch.no_grad():  # non-trivial norm scales / position tables so every parameter matters
        for name, p in ours.named_parameters():
            if (
                "norm" in name
                or "neck.1" in name
                or "neck.3" in name
                or "rel_pos" in name
                or "pos_embed" in name
            ):
                p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(len(name))) * 0.1)
    hf = hf_sam(SAM)
    ours_sd = ours.state_dict()
    hf_sd = hf.state_dict()
    mapped = {k: sam_key_map(k) for k in hf_sd}
    assert set(mapped.values()) == set(ours_sd), "layouts differ"
    hf.load_state_dict({k: ours_sd[v] for k, v in mapped.items()})
    x = torch.randn(2, 3, size, size)
    with torch.no_grad():
        expected = hf(x).last_hidden_state
        got = ours(x)
    q = size // (SAM.patch_size * SAM.compress_factor)
    assert got.shape == expected.shape == (2, SAM.compressor_channels[-1], q, q)
    assert (got - expected).abs().max().item() <= 1e-4


def hf_clip(config: VisionConfig, image_size: int):
    from transformers import CLIPVisionConfig, CLIPVisionModel

    hf_config = CLIPVisionConfig(
        hidden_size=config.clip_width,
        intermediate_size=config.clip_ffn,
        num_hidden_layers=config.clip_depth,
        num_attention_heads=config.clip_heads,
        image_size=image_size,
        patch_size=config.clip_patch_size,
        hidden_act="quick_gelu",
        layer_norm_eps=config.clip_layernorm_eps,
    )
    hf_config._attn_implementation = "eager"
    return CLIPVisionModel(hf_config).eval()


def load_clip_into_hf(ours: ClipEncoder, hf) -> None:
    sd = ours.state_dict()
    hf_sd = hf.state_dict()
    pfx = "vision_model." if any(k.startswith("vision_model.") for k in hf_sd) else ""
    target = {}
    dim = ours.embeddings.class_embedding.shape[0]
    for key, value in sd.items():
        if key.endswith("self_attn.qkv_proj.weight") or key.endswith("self_attn.qkv_proj.bias"):
            kind = key.rsplit(".", 1)[1]
            prefix = key.replace("transformer.", "encoder.").rsplit("qkv_proj", 1)[0]
            for name, chunk in zip(("q_proj", "k_proj", "v_proj"), value.split(dim, dim=0)):
                target[f"{pfx}{prefix}{name}.{kind}"] = chunk
        else:
            target[pfx + key.replace("transformer.", "encoder.")] = value
    for key in (f"{pfx}post_layernorm.weight", f"{pfx}post_layernorm.bias"):
        target[key] = hf_sd[key]  # CLIP's final norm exists in transformers; DeepEncoder never applies it
    hf.load_state_dict(target, strict=False)
    missing = set(hf_sd) - set(target) - {f"{pfx}embeddings.position_ids"}
    assert not missing, missing


def test_clip_matches_transformers_clip_vision_model():
    ours = ClipEncoder(SAM)
    init_weights(ours, std=0.05, seed=4)
    with torch.no_grad():
        for name, p in ours.named_parameters():
            if "norm" in name:
                p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(len(name))) * 0.1)
    grid = SAM.clip_grid
    hf = hf_clip(SAM, SAM.clip_image_size)
    load_clip_into_hf(ours, hf)
    pixels = torch.randn(2, 3, SAM.clip_image_size, SAM.clip_image_size)
    with torch.no_grad():
        expected = hf(pixel_values=pixels).last_hidden_state  # no post_layernorm on the sequence output
        patch_embeds = ours.embeddings.patch_embedding(pixels)  # (B, C, grid, grid): the layouts line up here
        got = ours(patch_embeds)
    assert got.shape == expected.shape == (2, grid * grid + 1, SAM.clip_width)
    assert (got - expected).abs().max().item() <= 1e-4


def test_clip_on_a_resized_grid_matches_transformers_with_the_resized_table():
    """On a grid other than the trained one, CLIP keeps the CLS row and resizes the patch rows (bicubic,
    antialiased, as DeepSeek-OCR does; transformers' own interpolation is not antialiased). A transformers
    CLIP built for the new grid and given our resized table must agree."""
    ours = ClipEncoder(SAM)
    init_weights(ours, std=0.05, seed=5)
    big = SAM.clip_image_size * 3 // 2  # 6x6 patches from a 4x4 table
    grid = big // SAM.clip_patch_size
    hf = hf_clip(SAM, big)
    sd = ours.state_dict()
    with torch.no_grad():
        resized = ours.embeddings.positions(grid * grid)  # (1 + 36, C)
    sd["embeddings.position_embedding.weight"] = resized
    ours_big = ClipEncoder(dataclasses.replace(SAM, clip_image_size=big))
    ours_big.load_state_dict(sd)
    load_clip_into_hf(ours_big, hf)
    pixels = torch.randn(1, 3, big, big)
    with torch.no_grad():
        expected = hf(pixel_values=pixels).last_hidden_state
        got = ours(ours.embeddings.patch_embedding(pixels))
    assert (got - expected).abs().max().item() <= 1e-4


def test_abs_pos_downsampling_is_antialiased_bicubic():
    """A 1024 view's 64x64 SAM table shrinks to 40x40 for a 640 tile, bicubic + antialias (DeepSeek-OCR)."""
    table = torch.randn(1, 64, 64, 8)
    got = resize_abs_pos_2d(table, 40)
    ref = F.interpolate(table.permute(0, 3, 1, 2), size=(40, 40), mode="bicubic", antialias=True)
    assert torch.allclose(got, ref.permute(0, 2, 3, 1), atol=1e-6)
    plain = F.interpolate(table.permute(0, 3, 1, 2), size=(40, 40), mode="bicubic").permute(0, 2, 3, 1)
    assert not torch.allclose(got, plain, atol=1e-3)


def test_published_sam_relative_tables():
    """Windowed blocks hold 2*14-1 = 27 rows, global blocks 2*64-1 = 127 (resized to 79 for 640 tiles)."""
    config = dataclasses.replace(VisionConfig(), sam_depth=3, sam_global_attn_indexes=(2,))
    with torch.device("meta"):
        sam = SamEncoder(config)
    assert sam.blocks[0].attn.rel_pos_h.shape == (27, 64)
    assert sam.blocks[2].attn.rel_pos_h.shape == (127, 64)
    assert sam.pos_embed.shape == (1, 64, 64, 768)
