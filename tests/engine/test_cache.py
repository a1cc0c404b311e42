"""KV cache: protocol semantics, rollback by length, and no growth during a long generation."""

from __future__ import annotations

import torch

from jocr.engine import Engine, EngineConfig, GenerationRequest, GuardConfig, KVCache


def test_update_writes_slots_and_masks_by_position():
    cache = KVCache(rows=3, max_len=16)
    view = cache.view(1, 3)  # rows 1 and 2
    k = torch.randn(2, 2, 3, 4)  # (B, H, T, D)
    v = torch.randn(2, 2, 3, 4)
    pos = torch.tensor([[0, 1, 2], [5, 6, 7]])
    k_all, v_all, mask = view.update(0, k, v, pos)
    assert k_all.shape == (2, 2, 8, 4) and mask.shape == (2, 1, 3, 8)
    assert torch.equal(cache.k[0][1, :, 0:3], k[0]) and torch.equal(cache.v[0][2, :, 5:8], v[1])
    assert torch.equal(cache.k[0][0], torch.zeros(2, 16, 4))  # row 0 untouched
    want = torch.arange(8)[None, None, None, :] <= pos[:, None, :, None]
    assert torch.equal(mask, want)
    # Rollback = overwrite: a later write at a rejected position replaces the stale entry.
    k2 = torch.randn(2, 2, 1, 4)
    view2 = cache.view(1, 3)
    view2.update(0, k2, k2, torch.tensor([[1], [6]]))
    assert torch.equal(cache.k[0][1, :, 1], k2[0, :, 0]) and torch.equal(cache.k[0][1, :, 2], k[0, :, 2])


def test_prompt_from_slot_zero_is_written_as_position_by_position():
    """A prompt's write (positions 0 .. T-1 in every row: a plain copy) leaves the cache and returns the k/v
    that writing each position on its own does, a transposed (non-contiguous) k/v included."""
    g = torch.Generator().manual_seed(0)
    k = torch.randn(2, 5, 3, 4, generator=g).transpose(1, 2)  # (B, H, T, D), strided like the model's
    v = torch.randn(2, 5, 3, 4, generator=g).transpose(1, 2)
    whole, steps = KVCache(rows=3, max_len=16), KVCache(rows=3, max_len=16)
    pos = torch.arange(5)[None].expand(2, 5)
    k_all, v_all, mask = whole.view(1, 3).update(0, k, v, pos)
    assert mask is None and k_all.shape == (2, 3, 5, 4)
    for t in range(5):
        steps.view(1, 3).update(0, k[:, :, t : t + 1], v[:, :, t : t + 1], pos[:, t : t + 1])
    assert torch.equal(whole.k[0], steps.k[0]) and torch.equal(whole.v[0], steps.v[0])
    assert torch.equal(k_all, k) and torch.equal(v_all, v)


def test_positions_past_preallocation_are_refused():
    cache = KVCache(rows=1, max_len=4)
    view = cache.view(0, 1)
    try:
        view.update(0, torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2), torch.tensor([[4]]))
    except ValueError as exc:
        assert "outside the preallocated cache" in str(exc)
    else:
        raise AssertionError("expected a ValueError")


def test_cache_never_grows_during_long_generation(random_model, monkeypatch):
    guard = GuardConfig(loop_detection=False)
    engine = Engine(random_model, EngineConfig(drafter="mtp", num_draft_tokens=3, guard=guard))
    seen = []
    from jocr.engine import batch as batch_mod

    original = batch_mod.DecodeBatch.step

    def spy(self):
        out = original(self)
        c = self.cache
        seen.append((id(c), c.allocations, c.max_len, c.k[0].data_ptr(), c.k[0].shape, c.nbytes()))
        return out

    monkeypatch.setattr(batch_mod.DecodeBatch, "step", spy)
    req = GenerationRequest(prompt_ids=[20, 21, 22, 23], max_tokens=300, stop_token_ids=())
    res = engine.generate([req])[0]
    assert res.finish_reason == "length" and len(res.token_ids) == 300
    assert len(seen) > 75
    assert len(set(seen)) == 1, "the cache was reallocated or resized while decoding"
    cache_len = seen[0][2]
    assert cache_len < 4 + 300 + 64 + 64  # preallocated from the request, not a global maximum
