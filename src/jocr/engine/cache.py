"""The engine's KV cache: preallocated slots, per-row lengths, rollback by resetting a length.

Layout (stated once, see docs/architecture.md "Cache protocol"): for every attention layer l (decoder layers
0..L-1 and the FastMTP block at index L) the cache holds `k[l]`, `v[l]` of shape (R, H_kv, S, D): R row slots
(requests decoding together), S preallocated positions. A token at absolute position p of row r lives in slot
`[r, :, p]`. `update()` writes the new k/v at their positions and returns the buffers plus the visibility mask
`mask[b, 0, t, s] = s <= positions[b, t]`; slots past a row's committed length are therefore never visible
to a query that could not see them in a plain causal pass, which is why rejecting draft tokens costs nothing:
the engine just does not advance that row's length and later writes overwrite the stale slots.

Beside the k/v buffers the cache keeps, per row, the token ids by position (`tokens`, (R, S)) and the
verifier's feedback state by position (`hidden`, (R, S, D_model)) that the FastMTP head consumes; both are
written like k/v, so the head can catch up on any number of committed positions in one call.

Layer buffers are allocated on first use from the shapes of the first k/v written (so the cache needs no
knowledge of the model's config), always with the full (R, S) extent decided up front: the cache never grows
during a generation. Rows are kept contiguous (active rows are [0, n)), so the views handed to the model are
plain slices, never copies; `move_row` compacts after a row finishes.
"""

from __future__ import annotations

import torch


class KVCache:
    """Preallocated KV storage for `rows` x `max_len` positions (see the module docstring for the layout)."""

    def __init__(self, rows: int, max_len: int, device: torch.device | str = "cpu", dtype=torch.float32):
        if rows < 1 or max_len < 1:
            raise ValueError("KVCache needs rows >= 1 and max_len >= 1")
        self.rows = rows
        self.max_len = max_len
        self.device = torch.device(device)
        self.dtype = dtype
        self.k: dict[int, torch.Tensor] = {}  # layer -> (R, H_kv, S, D)
        self.v: dict[int, torch.Tensor] = {}
        self.tokens = torch.zeros(rows, max_len, dtype=torch.long, device=self.device)  # (R, S)
        self.hidden: torch.Tensor | None = None  # (R, S, D_model), allocated on first write
        self.lengths = torch.zeros(rows, dtype=torch.long)  # committed positions per row (engine-advanced)
        self.allocations = 0  # number of buffer allocations (the tests check it stays fixed while decoding)

    # Views -------------------------------------------------------------------------------------------------
    def view(self, start: int, stop: int) -> CacheView:
        """The rows [start, stop) as a cache object the model can call `update` on (no copy)."""
        if not 0 <= start < stop <= self.rows:
            raise ValueError(f"row range [{start}, {stop}) outside the cache's {self.rows} rows")
        return CacheView(self, start, stop)

    def nbytes(self) -> int:
        total = self.tokens.numel() * self.tokens.element_size()
        for buf in list(self.k.values()) + list(self.v.values()):
            total += buf.numel() * buf.element_size()
        if self.hidden is not None:
            total += self.hidden.numel() * self.hidden.element_size()
        return total

    # Storage -----------------------------------------------------------------------------------------------
    def _layer(self, layer_idx: int, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        buf = self.k.get(layer_idx)
        if buf is None:
            _, h, _, d = k.shape  # (B, H_kv, T, D)
            shape = (self.rows, h, self.max_len, d)
            self.k[layer_idx] = torch.zeros(shape, dtype=self.dtype, device=self.device)
            self.v[layer_idx] = torch.zeros(shape, dtype=self.dtype, device=self.device)
            self.allocations += 1
        return self.k[layer_idx], self.v[layer_idx]

    def write_hidden(self, start: int, positions: torch.Tensor, states: torch.Tensor) -> None:
        """Store feedback states (B, T, D) at `positions` (B, T) of rows [start, start + B)."""
        if self.hidden is None:
            self.hidden = torch.zeros(
                self.rows, self.max_len, states.shape[-1], dtype=states.dtype, device=self.device
            )
            self.allocations += 1
        b = positions.shape[0]
        rows = torch.arange(start, start + b, device=self.device)[:, None]  # (B, 1)
        self.hidden[rows, positions] = states.to(self.hidden.dtype)

    def write_tokens(self, start: int, positions: torch.Tensor, ids: torch.Tensor) -> None:
        """Store token ids (B, T) at `positions` (B, T) of rows [start, start + B)."""
        b = positions.shape[0]
        rows = torch.arange(start, start + b, device=self.device)[:, None]  # (B, 1)
        self.tokens[rows, positions] = ids

    def move_row(self, src: int, dst: int) -> None:
        """Copy row `src` into slot `dst` (all layers, tokens, states, length): compaction after a finish."""
        if src == dst:
            return
        for buf in list(self.k.values()) + list(self.v.values()):
            buf[dst] = buf[src]
        self.tokens[dst] = self.tokens[src]
        if self.hidden is not None:
            self.hidden[dst] = self.hidden[src]
        self.lengths[dst] = self.lengths[src]


class CacheView:
    """Rows [start, stop) of a `KVCache`; implements the model's cache protocol.

    The visibility mask depends only on the positions, so it is computed once per forward (the model passes
    the same positions tensor to every layer) and shared. The returned k/v are trimmed to the first
    `max(positions) + 1` slots: every slot past that is masked for every query anyway, and attending over
    the whole preallocation would make each step cost O(max_len) instead of O(current length).
    """

    # A query at position p sees exactly the slots 0 .. p of its row (the mask `update` returns), so the
    # model may attend without the mask (model/decoder.py's row-invariant kernel path).
    prefix_visible = True

    def __init__(self, cache: KVCache, start: int, stop: int):
        self.cache = cache
        self.start = start
        self.stop = stop
        self._mask_key: torch.Tensor | None = None
        self._mask: torch.Tensor | None = None
        self._width = 0
        self._rows: torch.Tensor | None = None
        self._prompt = False  # positions are 0 .. T-1 in every row (a prompt written from slot 0)

    @property
    def batch(self) -> int:
        return self.stop - self.start

    def _prepare(self, positions: torch.Tensor) -> None:
        if positions is self._mask_key:
            return
        if positions.shape[0] != self.batch:
            raise ValueError(f"positions has {positions.shape[0]} rows, the cache view {self.batch}")
        width = int(positions.max()) + 1
        if width > self.cache.max_len or int(positions.min()) < 0:
            raise ValueError(f"position {width - 1} outside the preallocated cache of {self.cache.max_len}")
        slots = torch.arange(width, device=positions.device)
        # A prompt written from slot 0 in every row (right padding sits past each row's length): plain causal,
        # which the model computes without a mask (decoder module docstring).
        prompt = width == positions.shape[1] > 1 and bool((positions == slots).all())
        self._mask = None
        if not prompt:
            self._mask = slots[None, None, None, :] <= positions[:, None, :, None]  # (B, 1, T, S')
        self._width = width
        self._prompt = prompt
        self._mask_key = positions
        self._rows = torch.arange(self.batch, device=positions.device)[:, None]  # (B, 1)

    def update(
        self, layer_idx: int, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        # k, v: (B, H_kv, T, D) after RoPE; positions: (B, T)
        self._prepare(positions)
        k_buf, v_buf = self.cache._layer(layer_idx, k)
        k_rows = k_buf[self.start : self.stop]  # (B, H_kv, S, D) view
        v_rows = v_buf[self.start : self.stop]
        w = self._width
        if self._prompt:  # slots 0 .. T-1 of every row: a plain copy (an index_put of T positions costs more)
            k_rows[:, :, :w] = k
            v_rows[:, :, :w] = v
        else:
            # Advanced indices around a slice put the indexed dims first: the value is (B, T, H_kv, D).
            k_rows[self._rows, :, positions] = k.transpose(1, 2).to(k_buf.dtype)
            v_rows[self._rows, :, positions] = v.transpose(1, 2).to(v_buf.dtype)
        return k_rows[:, :, :w], v_rows[:, :, :w], self._mask
