"""OCRModel composition: image token layout (published view sizes), splicing into the prompt, MTP head."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from model_helpers import make_cache, tiny

from jocr.config import DecoderConfig, OCRConfig, VisionConfig
from jocr.model import OCRModel
from jocr.types import PageViews


@pytest.fixture(scope="module")
def published_layout_model() -> OCRModel:
    """Published view geometry (patch 16, 1024 global, 640 tiles, 16x compression) with very narrow layers."""
    vision = VisionConfig(
        sam_width=32,
        sam_depth=1,
        sam_heads=1,
        sam_global_attn_indexes=(),
        sam_out_channels=16,
        compressor_channels=(16, 32),
        clip_width=32,
        clip_depth=1,
        clip_heads=1,
        clip_ffn=64,
        projector_dim=32,
    )
    decoder = DecoderConfig(
        vocab_size=300, hidden_size=32, num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
        head_dim=32, intermediate_size=64, n_routed_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=16, n_shared_experts=1,
    )  # fmt: skip
    config = OCRConfig(vision=vision, decoder=decoder, image_token_id=5)
    model = OCRModel(config).init_weights(seed=0).eval()
    return model


def page(config: OCRConfig, grid=(1, 1), tiled=False, seed=0) -> PageViews:
    g = torch.Generator().manual_seed(seed)
    v = config.vision
    tiles = torch.randn(grid[0] * grid[1], 3, v.tile_size, v.tile_size, generator=g) if tiled else None
    return PageViews(torch.randn(3, v.base_size, v.base_size, generator=g), tiles, grid)


def test_global_view_gives_273_embeddings(published_layout_model):
    model = published_layout_model
    with torch.no_grad():
        (emb,) = model.encode_images([page(model.config)])
    assert emb.shape == (273, 32)
    assert model.config.image_token_count((1, 1), False) == 273
    newline, sep = model.model.image_newline, model.model.view_seperator
    assert torch.equal(emb[-1], sep)
    for row in range(16):  # image_newline closes every one of the 16 rows of 16 tokens
        assert torch.equal(emb[row * 17 + 16], newline)
        assert not torch.equal(emb[row * 17 + 15], newline)


def test_tile_grid_layout(published_layout_model):
    """A 2-wide, 3-high grid adds (3*10) rows of (2*10 + 1): [tiles, global, separator], tiles row-major."""
    model = published_layout_model
    pv = page(model.config, grid=(2, 3), tiled=True, seed=1)
    with torch.no_grad():
        (emb,) = model.encode_images([pv])
        (plain,) = model.encode_images([PageViews(pv.global_view, None, (1, 1))])
        tile_feats = model._encode_views(pv.tiles)  # (6, 10, 10, D)
    assert emb.shape[0] == 273 + 30 * 21 == model.config.image_token_count((2, 3), True)
    assert torch.allclose(emb[630:], plain, atol=1e-6)  # the global view follows the tile grid
    local = emb[:630].view(30, 21, -1)
    assert torch.equal(local[:, 20], model.model.image_newline.expand(30, -1))
    for index in range(6):
        row, col = divmod(index, 2)  # tiles are cut left to right, top to bottom
        block = local[row * 10 : row * 10 + 10, col * 10 : col * 10 + 10]
        assert torch.allclose(block, tile_feats[index], atol=1e-6)


def test_batched_images_match_single_encoding(published_layout_model):
    model = published_layout_model
    a, b = page(model.config, seed=2), page(model.config, grid=(3, 1), tiled=True, seed=3)
    with torch.no_grad():
        both = model.encode_images([a, b])
        alone = model.encode_images([b])[0]
    assert torch.allclose(both[1], alone, atol=1e-5)


def prompt(config: OCRConfig, n_image: int, n_text: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    text = torch.randint(10, config.decoder.vocab_size, (n_text,), generator=g)
    return torch.cat(
        [torch.tensor([config.bos_token_id]), torch.full((n_image,), config.image_token_id), text]
    )


def test_forward_splices_images_in_order():
    config = tiny()
    model = OCRModel(config).init_weights(seed=3).eval()
    pv1, pv2 = page(config, seed=4), page(config, grid=(2, 2), tiled=True, seed=5)
    n = config.image_token_count((1, 1), False) + config.image_token_count((2, 2), True)
    ids = prompt(config, n, 6, seed=6)[None]
    with torch.no_grad():
        out = model(ids, images=[[pv1, pv2]])
        embeds = model.embed(ids, [model.encode_images([pv1, pv2])])
        ref = model.decode(embeds, torch.arange(ids.shape[1])[None])
    assert out.logits.dtype == torch.float32 and out.logits.shape == (
        1,
        ids.shape[1],
        config.decoder.vocab_size,
    )
    assert torch.allclose(out.logits, ref.logits, atol=1e-5)
    spliced = embeds[0, 1 : 1 + n]
    assert torch.allclose(spliced, torch.cat(model.encode_images([pv1, pv2])), atol=1e-6)
    assert torch.allclose(out.normed_hidden_states, model.model.norm(out.hidden_states), atol=1e-6)


def test_a_page_shared_by_rows_is_encoded_once(monkeypatch):
    config = tiny()
    model = OCRModel(config).init_weights(seed=3).eval()
    shared, other = page(config, seed=7), page(config, seed=8)
    ids = prompt(config, config.image_token_count((1, 1), False), 4, seed=9)[None].repeat(3, 1)
    with torch.no_grad():
        expected = model(ids, images=[[shared], [dataclasses.replace(shared)], [other]]).logits
        calls = []
        encode = model.encode_images
        monkeypatch.setattr(model, "encode_images", lambda views: calls.append(len(views)) or encode(views))
        out = model(ids, images=[[shared], [shared], [other]]).logits
    assert calls == [2]  # the same PageViews object in two rows: two encodings, not three
    assert torch.allclose(out, expected, atol=1e-5)


def test_rows_without_images_and_padding():
    config = tiny()
    model = OCRModel(config).init_weights(seed=3).eval()
    n = config.image_token_count()
    with_image = prompt(config, n, 4, seed=7)
    text_only = torch.cat([prompt(config, 0, 4, seed=8), torch.full((n,), config.pad_token_id)])
    ids = torch.stack([with_image, text_only])
    with torch.no_grad():
        batched = model(ids, images=[[page(config, seed=9)], None])
        single = model(text_only[None, :5])
    # right padding does not change the real positions of a causal model
    assert torch.allclose(batched.logits[1, :5], single.logits[0], atol=1e-5)


def test_placeholder_count_mismatch_is_a_clear_error():
    config = tiny()
    model = OCRModel(config).init_weights(seed=3).eval()
    ids = prompt(config, config.image_token_count() - 1, 3, seed=10)[None]
    with pytest.raises(ValueError, match="placeholders"):
        model(ids, images=[[page(config)]])
    with pytest.raises(ValueError, match="placeholders"):
        model(prompt(config, 4, 3, seed=10)[None])
    with pytest.raises(ValueError, match="rows"):
        model(ids, images=[])


def test_mtp_step_and_feedback():
    config = tiny()
    model = OCRModel(config).init_weights(seed=11).eval()
    ids = prompt(config, 0, 12, seed=12)[None]
    pos = torch.arange(ids.shape[1])[None]
    with torch.no_grad():
        out = model(ids)
        prev = model.mtp_feedback(out)
        assert prev is out.hidden_states  # default: fed back before the final norm
        step = model.mtp_step(prev[:, :-1], ids[:, 1:], pos[:, :-1])
        assert step.logits.shape == (1, 12, config.decoder.vocab_size)
        assert torch.allclose(step.normed_hidden_states, model.model.norm(step.hidden_states), atol=1e-6)
        # recursive: step 2 consumes step 1's own state
        step2 = model.mtp_step(model.mtp_feedback(step)[:, :-1], ids[:, 2:], pos[:, :-2])
        assert step2.logits.shape == (1, 11, config.decoder.vocab_size)
        # the MTP block writes cache layer num_hidden_layers, after the decoder's layers
        cache = make_cache(config, 1, 32)
        model(ids, positions=pos, cache=cache)
        model.mtp_step(prev[:, :-1], ids[:, 1:], pos[:, :-1], cache=cache)
        assert cache.calls == [0, 1, 2]
        cached = model.mtp_step(prev[:, -2:-1], ids[:, -1:], pos[:, -2:-1], cache=cache)
    assert torch.allclose(cached.logits[0, -1], step.logits[0, -1], atol=1e-4)
    post = OCRModel(dataclasses.replace(config, mtp=dataclasses.replace(config.mtp, feedback="post_norm")))
    assert post.mtp_feedback(out) is out.normed_hidden_states


def test_mtp_head_is_one_dense_block_with_published_names():
    with torch.device("meta"):
        model = OCRModel(OCRConfig.preset("deepseek-ocr"))
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items() if k.startswith("mtp_module")}
    assert shapes["mtp_module.heads.0.eh_proj.weight"] == (1280, 2560)
    assert shapes["mtp_module.heads.0.mtp_block.mlp.gate_proj.weight"] == (6848, 1280)
    assert shapes["mtp_module.heads.0.mtp_block.self_attn.q_proj.weight"] == (1280, 1280)
    assert {k.split(".")[3] for k in shapes} == {"enorm", "hnorm", "eh_proj", "mtp_block"}


def test_published_key_layout():
    with torch.device("meta"):
        model = OCRModel(OCRConfig.preset("deepseek-ocr"))
    sd = model.state_dict()
    expected = {
        "model.embed_tokens.weight": (129280, 1280),
        "lm_head.weight": (129280, 1280),
        "model.norm.weight": (1280,),
        "model.image_newline": (1280,),
        "model.view_seperator": (1280,),
        "model.projector.layers.weight": (1280, 2048),
        "model.sam_model.net_2.weight": (512, 256, 3, 3),
        "model.sam_model.net_3.weight": (1024, 512, 3, 3),
        "model.sam_model.neck.0.weight": (256, 768, 1, 1),
        "model.sam_model.blocks.2.attn.rel_pos_h": (127, 64),
        "model.vision_model.embeddings.position_embedding.weight": (257, 1024),
        "model.vision_model.embeddings.patch_embedding.weight": (1024, 3, 14, 14),
        "model.vision_model.transformer.layers.23.self_attn.qkv_proj.weight": (3072, 1024),
        "model.vision_model.pre_layrnorm.weight": (1024,),
        "model.layers.0.mlp.gate_proj.weight": (6848, 1280),
        "model.layers.1.mlp.gate.weight": (64, 1280),
        "model.layers.11.mlp.experts.63.down_proj.weight": (1280, 896),
        "model.layers.11.mlp.shared_experts.up_proj.weight": (1792, 1280),
        "model.layers.5.self_attn.k_proj.weight": (1280, 1280),
    }
    for key, shape in expected.items():
        assert tuple(sd[key].shape) == shape, key
    assert not any("post_layernorm" in k or "rotary" in k for k in sd)


def test_bundled_cpu_geometry_gives_157_tokens():
    """One 384x384 view, patch 8, compress factor 4: a 12x12 grid, 12 newlines and the separator."""
    vision = VisionConfig(
        patch_size=8, sam_image_size=384, sam_width=32, sam_depth=1, sam_heads=1, sam_window_size=8,
        sam_global_attn_indexes=(), sam_out_channels=16, compressor_channels=(16, 32), clip_width=32,
        clip_depth=1, clip_heads=1, clip_ffn=64, clip_image_size=24, clip_patch_size=2, projector_dim=128,
        base_size=384, tile_size=384, crop_mode=False,
    )  # fmt: skip
    config = dataclasses.replace(tiny(), vision=vision).validate()
    model = OCRModel(config).init_weights(seed=1).eval()
    with torch.no_grad():
        (emb,) = model.encode_images([page(config)])
    assert emb.shape == (157, 128) == (config.image_token_count(), config.decoder.hidden_size)


def test_unshared_mtp_head_has_its_own_embedding_norm_and_head(tmp_path):
    config = tiny()
    mtp = dataclasses.replace(config.mtp, share_embedding=False, share_norm=False, share_lm_head=False)
    model = OCRModel(dataclasses.replace(config, mtp=mtp)).init_weights(seed=2).eval()
    keys = {k for k in model.state_dict() if k.startswith("mtp_module.heads.0.")}
    assert {"mtp_module.heads.0.embed_tokens.weight", "mtp_module.heads.0.shared_head.norm.weight",
            "mtp_module.heads.0.shared_head.head.weight"} <= keys  # fmt: skip
    ids = prompt(config, 0, 6, seed=3)[None]
    pos = torch.arange(ids.shape[1])[None]
    with torch.no_grad():
        out = model(ids)
        step = model.mtp_step(out.hidden_states[:, :-1], ids[:, 1:], pos[:, :-1])
        head = model.mtp_module.heads[0]
        expected = head.shared_head.head(head.shared_head.norm(step.hidden_states)).float()
    assert torch.allclose(step.logits, expected, atol=1e-6)
    model.save_pretrained(tmp_path)
    assert OCRModel.from_pretrained(tmp_path).config.mtp == mtp
