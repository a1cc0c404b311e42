"""Draft proposers for speculative decoding: the FastMTP head and n-gram (prompt/output) lookup.

A drafter fills `drafts` (B, k) for the active rows [0, B) of the batch. Drafts only affect speed: the
verifier (batch.py) commits exactly its own greedy choices whatever is proposed.

Positions (the convention the head is fitted with in train/mtp.py): the FastMTP pair (h_p, x_{p+1}) -- the
verifier's state at position p, which predicted x_{p+1}, and the embedding of x_{p+1} -- sits at position p
in the head's own cache layer and predicts x_{p+2}. A row with n committed tokens (the last one, x_{n-1},
not yet run through the verifier) has verifier states for positions < n - 1, so the head can be brought up
to date over positions [mtp_len, n - 2]; the output at n - 2 drafts x_n. Draft step i > 1 then feeds the
head's own state back (recursion, FastMTP) with the previous draft at position n - 3 + i.
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view

from jocr.engine.cache import KVCache
from jocr.engine.reference_lookup import ReferenceLookup


def row_history(tokens: np.ndarray, length: int, skip_ids: tuple[int, ...], tail: int | None = None):
    """A row's committed ids (`tokens`: its (S,) buffer; the first `length` count), at most the last `tail`
    of them, without `skip_ids` (image placeholders: nothing to look up in)."""
    history = tokens[:length] if tail is None else tokens[max(0, length - tail) : length]
    return history[~np.isin(history, skip_ids)] if skip_ids else history


class MTPDrafter:
    """FastMTP: one shared block applied recursively (model.mtp_step / model.mtp_feedback)."""

    name = "mtp"
    needs_hidden = True

    def __init__(self, model, never_ids: tuple[int, ...] = ()):
        self.model = model
        self.never = list(never_ids)  # ids never drafted (an `<image>` placeholder cannot be verified)

    def _pick(self, logits: torch.Tensor) -> torch.Tensor:
        # logits: (B, V) -> (B,)
        if self.never:  # in place: the model's fresh output tensor, read nowhere else
            logits[:, self.never] = float("-inf")
        return logits.argmax(-1)

    chunk = 256  # positions per catch-up call: bounds the (B, W, V) draft logits of a long prompt

    def propose(
        self, cache: KVCache, n: torch.Tensor, mtp_len: torch.Tensor, k: int, start: int = 0
    ) -> torch.Tensor | None:
        """Drafts (B, k) for rows [start, start + B); n, mtp_len: (B,) long; mtp_len is advanced in place.

        k = 0 only brings the head's cache up to date (done right after prefill, so that the first
        speculative step, whose time adaptive k measures, does not pay for the whole prompt)."""
        b = n.shape[0]
        device = cache.device
        n_d, m_d = n.to(device), mtp_len.to(device)
        # Positions to catch up on; at least one pass so draft 1 has logits even when every row is
        # already covered (recomputing the newest pair writes the same k/v).
        count = max(int((n - 1 - mtp_len).max()), 1)
        rows = torch.arange(start, start + b, device=device)[:, None]  # (B, 1)
        view = cache.view(start, start + b)
        offset = 0
        while offset < count:
            width = min(self.chunk, count - offset)
            steps = torch.arange(offset, offset + width, device=device)[None, :]  # (1, W)
            # Rows with fewer positions repeat their newest one (n - 2): identical inputs at the same slot
            # write identical k/v, and the last column is then every row's newest state.
            # (A row that stopped on its first token has nothing to catch up on: clamp it to slot 0.)
            pos = torch.minimum(m_d[:, None] + steps, (n_d - 2).clamp(min=0)[:, None])  # (B, W)
            prev = cache.hidden[rows, pos]  # (B, W, D)
            ids = cache.tokens[rows, pos + 1]  # (B, W)
            out = self.model.mtp_step(prev, ids, pos, view, num_logits_to_keep=1)  # only the newest drafts
            offset += width
        if k == 0:
            # Leave the newest pair uncovered: the next call recomputes it (same k/v) for draft 1's logits.
            mtp_len.copy_((n - 2).clamp(min=0))
            return None
        mtp_len.copy_(n - 1)
        drafts = torch.empty(b, k, dtype=torch.long, device=device)
        drafts[:, 0] = self._pick(out.logits[:, -1])
        state = self.model.mtp_feedback(out)[:, -1:]  # (B, 1, D)
        last_pos = (n_d - 2)[:, None]  # (B, 1)
        for i in range(1, k):
            out = self.model.mtp_step(state, drafts[:, i - 1 : i], last_pos + i, cache.view(start, start + b))
            drafts[:, i] = self._pick(out.logits[:, -1])
            state = self.model.mtp_feedback(out)[:, -1:]
        return drafts


class NGramDrafter:
    """Prompt/output lookup: continue the most recent earlier occurrence of the row's last n tokens.

    Tries n = max_n down to min_n; proposes up to k tokens that followed the match, padding with the last
    proposed (or current) token when fewer are available (a pad is simply rejected by the verifier).
    """

    name = "ngram"
    needs_hidden = False

    def __init__(self, max_n: int = 4, min_n: int = 1, skip_ids: tuple[int, ...] = ()):
        if not 1 <= min_n <= max_n:
            raise ValueError("n-gram drafter needs 1 <= min_n <= max_n")
        self.max_n = max_n
        self.min_n = min_n
        self.skip_ids = skip_ids

    def propose_row(self, history: np.ndarray, k: int) -> list[int]:
        length = len(history)
        for n in range(self.max_n, self.min_n - 1, -1):
            if length <= n:
                continue
            suffix = history[length - n :]
            windows = sliding_window_view(history[: length - 1], n)  # starts 0 .. length - 1 - n
            hits = np.flatnonzero((windows == suffix).all(axis=1))
            if len(hits):
                start = int(hits[-1]) + n
                return history[start : start + k].tolist()
        return []

    def propose(
        self, cache: KVCache, n: torch.Tensor, mtp_len: torch.Tensor, k: int, start: int = 0
    ) -> torch.Tensor | None:
        if k == 0:
            return None
        b = n.shape[0]
        tokens = cache.tokens[start : start + b].cpu().numpy()  # (B, S) zero-copy on CPU
        lengths = n.tolist()
        out = np.empty((b, k), dtype=np.int64)
        for r in range(b):
            proposal = self.propose_row(row_history(tokens[r], lengths[r], self.skip_ids), k)
            pad = proposal[-1] if proposal else int(tokens[r, lengths[r] - 1])
            out[r] = proposal + [pad] * (k - len(proposal))
        return torch.from_numpy(out).to(cache.device)


class MTPNGramDrafter:
    """FastMTP and prompt lookup together, for prompts that hold the page's text (an anchor: docs/parsing.md).

    Both propose for every row; a row takes the n-gram draft when the lookup matched at least `min_match`
    tokens and its first token agrees with the head's first draft (two independent predictors agreeing
    means the copied span is on track, and a copy runs on for many tokens where the head's recursion
    drifts), and the head's draft otherwise. The head drafts at most `mtp_max` tokens (its recursion gets
    costly and weak beyond its training depth); the rest of a head draft repeats its last token, which the
    verifier simply rejects. Drafts only affect speed: the verifier keeps the output greedy.
    """

    name = "mtp+ngram"
    needs_hidden = True

    def __init__(
        self, model, never_ids: tuple[int, ...] = (), max_n: int = 4, min_match: int = 2, mtp_max: int = 3
    ):
        self.mtp = MTPDrafter(model, never_ids)
        self.ngram = NGramDrafter(max_n, min(min_match, max_n), never_ids)
        self.min_match = min_match
        self.mtp_max = mtp_max

    def propose(
        self, cache: KVCache, n: torch.Tensor, mtp_len: torch.Tensor, k: int, start: int = 0
    ) -> torch.Tensor | None:
        head = self.mtp.propose(cache, n, mtp_len, min(k, self.mtp_max), start=start)
        if k == 0:
            return None
        b = n.shape[0]
        out = head.cpu().numpy()  # (B, min(k, mtp_max))
        if out.shape[1] < k:
            out = np.concatenate([out, np.repeat(out[:, -1:], k - out.shape[1], axis=1)], axis=1)  # (B, k)
        tokens = cache.tokens[start : start + b].cpu().numpy()  # (B, S)
        lengths = n.tolist()
        for r in range(b):
            copy = self.ngram.propose_row(row_history(tokens[r], lengths[r], self.ngram.skip_ids), k)
            if len(copy) and copy[0] == out[r, 0]:
                out[r, : len(copy)] = copy
                out[r, len(copy) :] = copy[-1]
        return torch.from_numpy(out).to(cache.device)


class ReferenceDrafter:
    """The reference-aware lookup (`jocr.engine.reference_lookup`), with FastMTP for the rest (`use_head`),
    for models that answer an anchor with run references (docs/parsing.md).

    A row takes the lookup's draft when it matched at least `min_match` symbols (a reference pattern such
    as `@7</td><td>@8` repeats exactly, so a match is trusted without the head's agreement), and the head's
    draft otherwise (at most `mtp_max` tokens, padded). The head runs only when some row needs it: its cache
    catches up over the positions it skipped the next time it runs (MTPDrafter.propose). Without a head, a
    row with no match gets a pad, which the verifier rejects.

    With `use_head` false (drafter "refs") the head is never run: no catch-up over each prompt at admission
    and no verifier states written for it. On anchored pages the head's drafts are rarely accepted (measured
    on the 8 reference PDFs of docs/results/2026-12-03-speed.md: 8 of 138 head-drafted tokens, against 1,931
    of 2,200 for the lookup) while its catch-up over a long prompt costs about one decoder layer's prefill.
    """

    def __init__(
        self,
        model,
        lookup: ReferenceLookup,
        never_ids: tuple[int, ...] = (),
        min_match: int = 2,
        mtp_max: int = 3,
        use_head: bool = True,
    ):
        has_head = use_head and getattr(model, "mtp_module", True) is not None and hasattr(model, "mtp_step")
        self.name = "mtp+refs" if use_head else "refs"
        self.mtp = MTPDrafter(model, never_ids) if has_head else None
        self.needs_hidden = has_head
        self.lookup = lookup
        self.skip_ids = never_ids
        self.min_match = min_match
        self.mtp_max = mtp_max

    def propose(
        self, cache: KVCache, n: torch.Tensor, mtp_len: torch.Tensor, k: int, start: int = 0
    ) -> torch.Tensor | None:
        if k == 0:
            if self.mtp is not None:
                self.mtp.propose(cache, n, mtp_len, 0, start=start)
            return None
        b = n.shape[0]
        tokens = cache.tokens[start : start + b].cpu().numpy()  # (B, S)
        lengths = n.tolist()
        copies: list[list[int]] = []
        for r in range(b):
            # at most twice the lookup's window: it reads only the last `window` ids once placeholders go
            history = row_history(tokens[r], lengths[r], self.skip_ids, tail=2 * self.lookup.window)
            draft, matched = self.lookup.propose(history.tolist(), k)
            copies.append(draft if matched >= self.min_match else [])
        out = np.empty((b, k), dtype=np.int64)
        if self.mtp is not None and not all(copies):
            head = self.mtp.propose(cache, n, mtp_len, min(k, self.mtp_max), start=start).cpu().numpy()
            out[:, : head.shape[1]] = head
            out[:, head.shape[1] :] = head[:, -1:]
        else:
            out[:] = tokens[np.arange(b), np.asarray(lengths) - 1][:, None]  # pads: the current token
        for r, copy in enumerate(copies):
            if copy:
                out[r, : len(copy)] = copy
                out[r, len(copy) :] = copy[-1]
        return torch.from_numpy(out).to(cache.device)


def make_drafter(
    name: str,
    model,
    ngram_max: int = 4,
    ngram_min: int = 1,
    skip_ids: tuple[int, ...] = (),
    tokenizer=None,
):
    if name == "mtp":
        if not hasattr(model, "mtp_step"):
            raise ValueError("drafter 'mtp' needs a model with a FastMTP head (mtp_step)")
        if getattr(model, "mtp_module", True) is None:
            # A checkpoint without the head (config.mtp.enabled false, e.g. a transformers-style export or a
            # GRPO policy) decodes plainly: the default drafter must not make such models unusable.
            return None
        return MTPDrafter(model, skip_ids)
    if name == "ngram":
        return NGramDrafter(ngram_max, ngram_min, skip_ids)
    if name == "mtp+ngram":
        if getattr(model, "mtp_module", True) is None or not hasattr(model, "mtp_step"):
            return NGramDrafter(ngram_max, ngram_min, skip_ids)  # no head: prompt lookup alone
        return MTPNGramDrafter(model, skip_ids, max_n=ngram_max, min_match=max(2, ngram_min))
    if name in ("mtp+refs", "refs"):
        lookup = ReferenceLookup.from_tokenizer(tokenizer)
        if lookup is None:
            raise ValueError(f"drafter {name!r} needs a tokenizer with single tokens for '@' and the digits")
        return ReferenceDrafter(model, lookup, skip_ids, use_head=name == "mtp+refs")
    if name == "none":
        return None
    raise ValueError(f"unknown drafter {name!r}; choose mtp, ngram, mtp+ngram, mtp+refs, refs or none")
