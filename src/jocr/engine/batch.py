"""A running batch: prefill of joining requests, plain and speculative decode steps, finishing and compaction.

Row state (per request): n = committed tokens (prompt + generated); the newest one, x_{n-1}, is "pending":
it has been chosen but not yet run through the verifier, so the verifier cache holds positions < n - 1
(`cache.lengths`). A step feeds [x_{n-1}, d_1 .. d_k] at positions n - 1 .. n - 1 + k.

Which drafts a step keeps is engine/verify.py (accepted drafts + one bonus token, equal to plain greedy
decoding). Stop conditions are checked token by token as a row commits, so a stop inside a committed run
truncates it at the same token plain decoding would stop at. Rows with different accepted lengths coexist:
each row's length advances by its own count and the k/v written for its rejected positions stay past its
length, invisible, until overwritten.

Prefill: a prompt of more than `kernels.QUERY_MAX` tokens is prefilled alone (short ones together, up to
`max_prefill_tokens`). Long passes take torch's GEMM and SDPA, whose per-row results depend on the padded
shape of the whole pass; alone, a prompt's cache depends on that request only, so its tokens do not depend
on which requests happened to join with it (which speculation changes, as rows finish at other steps). A
page shared by several requests (the windows of a long anchored page, n completions) is encoded once while
its PageViews object lives, whichever admissions its requests join (`image_embeds`; pages are not changed
after they are submitted).

Row isolation: an error raised by one row's own work (seeding its generator, choosing or committing its
tokens) finishes that row alone with finish reason "error" and the exception in `row.error`; the batch drops
the row and the other rows go on. Only an error in the shared forward pass fails the whole batch.
"""

from __future__ import annotations

import time
import weakref

import torch

from jocr.engine.cache import KVCache
from jocr.engine.guard import GuardConfig, GuardState
from jocr.engine.requests import GenerationRequest, GenerationResult
from jocr.engine.stats import RequestStats
from jocr.engine.verify import ban_repeats, sampling_distribution, verify
from jocr.model import kernels


def sample_token(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator) -> int:
    """Sample from softmax(logits / temperature) restricted to the top-p nucleus; logits: (V,)."""
    return int(torch.multinomial(sampling_distribution(logits, temperature, top_p), 1, generator=generator))


class Row:
    """One request decoding in the batch."""

    def __init__(
        self,
        index: int,
        req: GenerationRequest,
        guard: GuardConfig,
        eos_id: int,
        tokenizer,
        device,
        limit: int,
    ):
        self.index = index  # caller's handle (position in a generate() list, or a scheduler ticket)
        self.req = req
        self.limit = limit  # tokens it may generate (Engine.token_limit)
        self.prompt_len = len(req.prompt_ids)
        self.stop_ids = frozenset(req.stop_token_ids if req.stop_token_ids is not None else (eos_id,))
        self.guard = GuardState(req.guard or guard)
        self.ban_active = bool(self.guard.config.ngram_size)
        self.tokenizer = tokenizer
        self.stop_tail = max((len(s) for s in req.stop_strings), default=0) + 8
        self.out: list[int] = []
        self.logprobs: list[float] | None = [] if req.logprobs else None
        self.n = self.prompt_len
        self.mtp_len = 0
        self.last = req.prompt_ids[-1]
        self.finish_reason: str | None = None
        self.stop_string: str | None = None
        # Greedy rows speculate unless told not to; sampled rows only when asked (engine/verify.py: their
        # tokens then keep plain sampling's distribution, but a seed no longer gives plain sampling's tokens).
        self.spec_ok = req.spec is not False if req.greedy else req.spec is True
        self.stats = RequestStats(prompt_tokens=self.prompt_len)
        self.cancelled = False
        self.error: BaseException | None = None
        self.generator = None
        if not req.greedy:
            self.generator = torch.Generator(device=device)
            try:
                if req.seed is None:
                    self.generator.seed()
                else:
                    self.generator.manual_seed(req.seed)
            except (RuntimeError, ValueError, OverflowError) as exc:  # e.g. a seed out of range
                self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        """Finish this row alone because of its own error (see the module docstring)."""
        self.error = exc
        self.finish_reason = "error"

    def first_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """The first token's logits (V,) without the request's `first_banned_ids` (the guard's ban applied
        by the caller)."""
        if not self.req.first_banned_ids:
            return logits
        logits = logits.clone()
        logits[sorted(self.req.first_banned_ids)] = float("-inf")
        return logits

    def choose(self, logits: torch.Tensor) -> int:
        """Plain decoding's choice from one position's logits (V,), the ban already applied."""
        if self.generator is None:
            return int(logits.argmax())
        return sample_token(logits, self.req.temperature, self.req.top_p, self.generator)

    def push(self, token: int) -> bool:
        """Commit one generated token; returns True when the request is finished by it."""
        if token in self.stop_ids:
            self.finish_reason = "stop"
            return True
        self.out.append(token)
        looped = self.guard.push(token)
        if self.req.stop_strings:
            tail = self.tokenizer.decode(self.out[-self.stop_tail :])
            for s in self.req.stop_strings:
                if s in tail:
                    self.finish_reason, self.stop_string = "stop", s
                    return True
        if self.req.stop_when is not None and self.req.stop_when(self.tokenizer.decode(self.out)):
            self.finish_reason = "stop"
            return True
        if looped:
            self.finish_reason = "repetition"
            return True
        if len(self.out) >= self.limit:
            self.finish_reason = "length"
            return True
        return False

    def result(self) -> GenerationResult:
        self.stats.output_tokens = len(self.out)
        return GenerationResult(
            token_ids=list(self.out),
            finish_reason=self.finish_reason or "cancelled",
            stats=self.stats,
            request_id=self.req.request_id,
            stop_string=self.stop_string,
            error=self.error,
            logprobs=None if self.logprobs is None else list(self.logprobs),
        )


def chosen_logprobs(logits: torch.Tensor, tokens: list[int]) -> list[float]:
    """Log-probabilities of tokens[j] under softmax(logits[j]); logits (n >= len(tokens), V)."""
    if not tokens:
        return []
    logp = torch.log_softmax(logits[: len(tokens)].float(), dim=-1)  # (n, V)
    return logp[torch.arange(len(tokens)), torch.tensor(tokens)].tolist()


class DecodeBatch:
    """Rows decoding together. Active rows occupy cache rows [0, len(rows)) in order."""

    def __init__(self, engine):
        self.engine = engine
        self.model = engine.model
        self.config = engine.config
        self.drafter = engine.drafter
        self.controller = engine.controller
        self.rows: list[Row] = []
        self.cache: KVCache | None = None
        self.finished: list[Row] = []
        self._offset_cache: dict[int, torch.Tensor] = {}
        # id(page) -> (weak reference to the page, its embeddings): pages already encoded (module docstring)
        self._pages: dict[int, tuple[weakref.ref, torch.Tensor]] = {}

    # Capacity ----------------------------------------------------------------------------------------------
    def slots_needed(self, req: GenerationRequest) -> int:
        # Prompt + output + the k draft positions a step may write past the last committed token.
        return len(req.prompt_ids) + self.engine.token_limit(req) + self.engine.max_k + 2

    def reserve(self, rows: int, length: int) -> None:
        """Preallocate for `rows` rows of `length` positions; grows only between generations' steps."""
        rows = min(max(rows, 1), self.config.max_batch_size)
        length = max(length, self.config.min_cache_len)
        length = -(-length // 64) * 64
        old = self.cache
        if old is not None and old.rows >= rows and old.max_len >= length:
            return
        if old is not None:
            rows, length = max(rows, old.rows), max(length, old.max_len)
        new = KVCache(rows, length, device=self.engine.device, dtype=self.engine.dtype)
        if old is not None and self.rows:
            used = len(self.rows)
            for layer, buf in old.k.items():
                shape = (rows, buf.shape[1], length, buf.shape[3])
                new.k[layer] = torch.zeros(shape, dtype=buf.dtype, device=buf.device)
                new.v[layer] = torch.zeros(shape, dtype=buf.dtype, device=buf.device)
                new.k[layer][:used, :, : old.max_len] = buf[:used]
                new.v[layer][:used, :, : old.max_len] = old.v[layer][:used]
            new.tokens[:used, : old.max_len] = old.tokens[:used]
            if old.hidden is not None:
                new.hidden = torch.zeros(
                    rows, length, old.hidden.shape[-1], dtype=old.hidden.dtype, device=old.hidden.device
                )
                new.hidden[:used, : old.max_len] = old.hidden[:used]
            new.lengths[:used] = old.lengths[:used]
            new.allocations = old.allocations + 1
        self.cache = new

    def release(self) -> None:
        """Drop the cache (when idle) so its memory is returned."""
        if not self.rows:
            self.cache = None

    # Admission (prefill) -----------------------------------------------------------------------------------
    def admit(self, items: list[tuple[int, GenerationRequest]]) -> list[tuple[Row, list[int]]]:
        """Prefill new requests and commit their first token. Returns (row, new tokens) events."""
        if len(self.rows) + len(items) > self.config.max_batch_size:
            raise ValueError("admitting more rows than max_batch_size")
        self.reserve(len(self.rows) + len(items), max(self.slots_needed(r) for _, r in items))
        events = []
        encoded = self._encode_shared_images(items)
        group: list[tuple[int, GenerationRequest]] = []
        longest = 0
        for item in items:
            length = len(item[1].prompt_ids)
            if length > kernels.QUERY_MAX:  # alone (module docstring)
                events += self._prefill([item], encoded)
                continue
            longest2 = max(longest, length)
            if group and longest2 * (len(group) + 1) > self.config.max_prefill_tokens:
                events += self._prefill(group, encoded)
                group, longest2 = [], length
            group.append(item)
            longest = longest2
        if group:
            events += self._prefill(group, encoded)
        self._retire()
        return events

    @torch.inference_mode()
    def _encode_shared_images(self, items: list[tuple[int, GenerationRequest]]) -> dict[int, torch.Tensor]:
        """Embeddings, keyed by id, of the pages already encoded and of those that several of `items` share
        (by object; those not yet encoded are encoded here, in one call); {} when the model cannot take
        them precomputed."""
        if not self.engine.image_embeds_kwarg:
            return {}
        self._pages = {key: entry for key, entry in self._pages.items() if entry[0]() is not None}
        seen: dict[int, int] = {}
        pages = {}
        for _, r in items:
            for pv in r.images or ():
                seen[id(pv)] = seen.get(id(pv), 0) + 1
                pages[id(pv)] = pv
        known = {key: self._encoded(pv) for key, pv in pages.items()}
        encoded = {key: embeds for key, embeds in known.items() if embeds is not None}
        shared = [pages[key] for key, count in seen.items() if count > 1 and key not in encoded]
        return {**encoded, **self._encode(shared)}

    def _encoded(self, pv) -> torch.Tensor | None:
        """The embeddings of page `pv` if this batch has encoded that object, else None."""
        entry = self._pages.get(id(pv))
        return entry[1] if entry is not None and entry[0]() is pv else None

    def _encode(self, pages: list) -> dict[int, torch.Tensor]:
        """Encode `pages` in one call and remember each one's embeddings while the page object lives."""
        if not pages:
            return {}
        out = dict(zip(map(id, pages), self.model.encode_images(pages)))
        for pv in pages:
            try:
                self._pages[id(pv)] = (weakref.ref(pv), out[id(pv)])
            except TypeError:  # an object that takes no weak reference is not remembered
                pass
        return out

    @torch.inference_mode()
    def _prefill(
        self, group: list[tuple[int, GenerationRequest]], encoded: dict[int, torch.Tensor] | None = None
    ) -> list[tuple[Row, list[int]]]:
        t0 = time.perf_counter()
        eng = self.engine
        start = len(self.rows)
        rows = []
        for i, r in group:
            row = Row(i, r, self.config.guard, eng.eos_id, eng.tokenizer, eng.device, eng.token_limit(r))
            if row.error is None:
                rows.append(row)
            else:  # failed before its prefill (its seed): it never takes a cache row
                self.finished.append(row)
        if not rows:
            return []
        lens = [r.prompt_len for r in rows]
        width = max(lens)
        # Right padding at the following positions: pad k/v land past each row's length, never visible.
        ids = torch.full((len(rows), width), self.config.pad_token_id, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : lens[i]] = torch.tensor(r.req.prompt_ids, dtype=torch.long)
        ids = ids.to(eng.device)
        pos = torch.arange(width, device=eng.device)[None].expand(len(rows), width)  # (B, T)
        images = [r.req.images for r in rows]
        images = images if any(im for im in images) else None
        kwargs = dict(eng.last_logits_kwargs)  # only each row's last position needs logits
        if images is not None and eng.image_embeds_kwarg:
            # The pages not encoded yet, in one call, as the model's own `encode_rows` would encode them.
            encoded = dict(encoded or {})
            fresh = {id(pv): pv for row in images if row for pv in row if id(pv) not in encoded}
            encoded.update(self._encode(list(fresh.values())))
            kwargs["image_embeds"] = [[encoded[id(pv)] for pv in row] if row else None for row in images]
        else:
            kwargs["images"] = images
        view = self.cache.view(start, start + len(rows))
        out = self.model(ids, positions=pos, cache=view, **kwargs)
        if self.drafter is not None and self.drafter.needs_hidden:
            self.cache.write_hidden(start, pos, self.model.mtp_feedback(out))
        self.cache.write_tokens(start, pos, ids)
        last = torch.tensor(lens, device=eng.device) - 1
        if out.logits.shape[1] == width:
            logits = out.logits[torch.arange(len(rows), device=eng.device), last]  # (B, V)
        else:  # the model kept the last column only; rows shorter than the widest need their own
            logits = out.logits[:, -1].clone()
            short = [i for i, n in enumerate(lens) if n < width]
            if short:
                idx = torch.tensor(short, device=eng.device)
                states = out.normed_hidden_states[idx, last[idx]][:, None]  # (b, 1, D): one position each
                with kernels.positions_per_row(1):
                    logits[idx] = self.model.lm_head(states)[:, 0].float()
        if eng.image_id is not None:
            logits[:, eng.image_id] = float("-inf")
        events = []
        for i, r in enumerate(rows):
            self.rows.append(r)
            self.cache.lengths[start + i] = r.prompt_len
            scores = None
            try:
                first = r.first_logits(self._ban(r, logits[i], ()))
                tokens = [r.choose(first)]
                scores = chosen_logprobs(first[None], tokens) if r.logprobs is not None else None
            except Exception as exc:  # this row's own failure: it finishes alone (module docstring)
                r.fail(exc)
                tokens = []
            events.append((r, self._commit_isolated(start + i, r, tokens, scores=scores)))
        if self.drafter is not None and self.drafter.needs_hidden and eng.max_k > 0:
            n = torch.tensor([r.n for r in rows], dtype=torch.long)
            mtp_len = torch.zeros(len(rows), dtype=torch.long)
            self.drafter.propose(self.cache, n, mtp_len, 0, start=start)
            for r, m in zip(rows, mtp_len.tolist()):
                r.mtp_len = m
        elapsed = time.perf_counter() - t0
        for r in rows:
            r.stats.prefill_s = elapsed
        return events

    # Decoding ----------------------------------------------------------------------------------------------
    def _ban(self, row: Row, logits: torch.Tensor, extra) -> torch.Tensor:
        if row.ban_active:
            banned = row.guard.banned(extra)
            if banned:
                logits = logits.clone()
                logits[list(banned)] = float("-inf")
        return logits

    def _commit(
        self, slot: int, row: Row, tokens: list[int], write: bool = True, scores: list[float] | None = None
    ) -> list[int]:
        """Push tokens one by one (stops truncate) and advance the row. With write=False the caller writes
        the token buffer and lengths for the whole batch at once (see step()). `scores`: the tokens'
        log-probabilities, kept for a row that asked for them (a stop token's too)."""
        taken = []
        for j, t in enumerate(tokens):
            if scores is not None and row.logprobs is not None:
                row.logprobs.append(scores[j])
            finished = row.push(t)
            if row.finish_reason == "stop" and t in row.stop_ids:
                break
            taken.append(t)
            if finished:
                break
        if taken:
            if write:
                self.cache.tokens[slot, row.n : row.n + len(taken)] = torch.tensor(taken, dtype=torch.long)
                self.cache.lengths[slot] = row.n + len(taken) - 1
            row.n += len(taken)
            row.last = taken[-1]
        if row.finish_reason is not None:
            self.finished.append(row)
        return taken

    def _commit_isolated(
        self, slot: int, row: Row, tokens: list[int], write: bool = True, scores: list[float] | None = None
    ) -> list[int]:
        """`_commit` for one row whose own error (already failed by its choice, or raised committing) finishes
        that row alone: it commits nothing and moves to `finished` (module docstring)."""
        if row.error is None:
            try:
                return self._commit(slot, row, tokens, write, scores)
            except Exception as exc:
                row.fail(exc)
        if row not in self.finished:
            self.finished.append(row)
        return []

    @torch.inference_mode()
    def step(self) -> list[tuple[Row, list[int]]]:
        """One decode step for every active row; finished rows move to `self.finished`."""
        self._drop_cancelled()
        if not self.rows:
            return []
        t0 = time.perf_counter()
        eng = self.engine
        rows = self.rows
        b = len(rows)
        k = 0
        if self.drafter is not None and any(r.spec_ok for r in rows):
            k = self.controller.choose(b)
        n = torch.tensor([r.n for r in rows], dtype=torch.long)
        ids = torch.tensor([r.last for r in rows], dtype=torch.long, device=eng.device)[:, None]  # (B, 1)
        drafts_list: list[list[int]] = [[] for _ in rows]
        if k:
            mtp_len = torch.tensor([r.mtp_len for r in rows], dtype=torch.long)
            drafts = self.drafter.propose(self.cache, n, mtp_len, k)  # (B, k)
            for r, m in zip(rows, mtp_len.tolist()):
                r.mtp_len = m
            ids = torch.cat([ids, drafts], dim=1)  # (B, k + 1)
            drafts_list = drafts.tolist()
        pos = (n.to(eng.device) - 1)[:, None] + self._offsets(k + 1)  # (B, k + 1)
        out = self.model(ids, positions=pos, cache=self.cache.view(0, b))
        if self.drafter is not None and self.drafter.needs_hidden:
            self.cache.write_hidden(0, pos, self.model.mtp_feedback(out))
        logits = out.logits  # (B, k + 1, V)
        if eng.image_id is not None:  # a generated placeholder would have no image to fill it
            logits[:, :, eng.image_id] = float("-inf")
        ban_repeats(rows, logits, drafts_list, k)
        choices, accepted = verify(rows, logits, drafts_list, k)
        events = [
            (r, self._commit_isolated(i, r, choice, False, self._scores(r, logits[i], choice)))
            for i, (r, choice) in enumerate(zip(rows, choices))
        ]
        # One write for the whole batch: committed tokens at n_old .. (padded with the last one; the pads land
        # past each row's new length, where nothing reads them) and the new lengths.
        width = k + 1
        fill = [(taken + [taken[-1] if taken else r.last] * width)[:width] for r, taken in events]
        self.cache.write_tokens(0, n.to(eng.device)[:, None] + self._offsets(width), torch.tensor(fill))
        self.cache.lengths[:b] = torch.tensor([r.n - 1 for r in rows])
        elapsed = time.perf_counter() - t0
        self.controller.record_step(b, k, elapsed)
        ar_ref = self.controller.step_time(b, 0) if k else None
        for (r, _), a in zip(events, accepted):
            st = r.stats
            st.steps += 1
            st.decode_s += elapsed
            if a is not None:
                self.controller.record_acceptance(k, a)
                st.record_spec(k, a, a + 1)
                st.spec_s += elapsed
                if ar_ref:
                    st.spec_s_ref += elapsed
                    st.ar_ref_s += ar_ref
            else:
                st.ar_s += elapsed
        eng.stats.steps += 1
        eng.stats.decode_s += elapsed
        self._retire()
        return events

    @staticmethod
    def _scores(row: Row, logits: torch.Tensor, choice: list[int]) -> list[float] | None:
        """A step's chosen tokens' log-probabilities for a row that asked for them: choice[j] was chosen
        from position j's logits (engine/verify.py); logits (k + 1, V) after the bans."""
        if row.logprobs is None or row.error is not None:
            return None
        return chosen_logprobs(logits, choice)

    def _offsets(self, width: int) -> torch.Tensor:
        offsets = self._offset_cache.get(width)
        if offsets is None:
            offsets = self._offset_cache[width] = torch.arange(width, device=self.engine.device)[None]
        return offsets

    # Finishing ---------------------------------------------------------------------------------------------
    def cancel(self, index: int) -> None:
        for r in self.rows:
            if r.index == index:
                r.cancelled = True

    def _drop_cancelled(self) -> None:
        for r in self.rows:
            if r.cancelled and r.finish_reason is None:
                r.finish_reason = "cancelled"
                self.finished.append(r)
        self._retire()

    @torch.inference_mode()
    def _retire(self) -> None:
        """Remove finished rows, moving the last active row into each freed slot (rows stay contiguous).

        In inference mode: the cache's buffers are allocated lazily inside the prefill and step (inference
        mode), and rows that finish at prefill are retired from `admit`, outside it, where writing into
        such tensors raises."""
        if not any(r.finish_reason is not None for r in self.rows):
            return
        slot = 0
        while slot < len(self.rows):
            if self.rows[slot].finish_reason is None:
                slot += 1
                continue
            last = len(self.rows) - 1
            if slot != last:
                self.cache.move_row(last, slot)
                self.rows[slot] = self.rows[last]
            self.rows.pop()

    def pop_finished(self) -> list[Row]:
        done, self.finished = self.finished, []
        for r in done:
            self.engine.stats.add_request(r.stats, r.finish_reason)
            self.engine.stats.prefill_s += r.stats.prefill_s
        return done
