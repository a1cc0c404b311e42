"""The generation engine (batched prefill + decode with optional speculation) and the naive greedy oracle.

`Engine(model, EngineConfig(...), tokenizer=None).generate(requests)` runs a list of requests with continuous
batching: up to `max_batch_size` rows decode together, a finished row frees its slot and the next waiting
request joins. The `Scheduler` (scheduler.py) drives the same `DecodeBatch` from a background thread for the
server. `naive_generate` is the reference the tests hold the engine to: no cache, no batching, no drafts,
the full sequence re-run for every token.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections import deque
from collections.abc import Callable

import torch

from jocr.engine.adaptive import KController
from jocr.engine.batch import DecodeBatch
from jocr.engine.drafters import make_drafter
from jocr.engine.guard import GuardConfig, GuardState
from jocr.engine.requests import EngineConfig, GenerationRequest, GenerationResult
from jocr.engine.stats import EngineStats, RequestStats


def _model_eos(model) -> int:
    config = getattr(model, "config", None)
    eos = getattr(config, "eos_token_id", None)
    return 1 if eos is None else int(eos)


def _model_image_id(model) -> int | None:
    image_id = getattr(getattr(model, "config", None), "image_token_id", None)
    return None if image_id is None else int(image_id)


def _model_positions(model) -> int | None:
    decoder = getattr(getattr(model, "config", None), "decoder", None)
    positions = getattr(decoder, "max_position_embeddings", None)
    return int(positions) if positions else None


def _token_limit(req: GenerationRequest, positions: int | None) -> int:
    """`req.max_tokens`, cut where prompt + output would pass the model's trained positions (None: no cut)."""
    if positions is None:
        return req.max_tokens
    return min(req.max_tokens, positions - len(req.prompt_ids))


class Engine:
    """Owns the drafter, the adaptive-k controller and aggregate statistics for one model."""

    def __init__(self, model, config: EngineConfig | None = None, tokenizer=None):
        self.model = model
        self.config = (config or EngineConfig()).validate()
        self.tokenizer = tokenizer
        td_ids = tuple(getattr(tokenizer, "td_ids", ()) or ())
        if td_ids and not self.config.guard.whitelist_ids:
            # DeepSeek-OCR exempts `<td>` / `</td>` from the n-gram ban (table rows legitimately repeat).
            self.config = dataclasses.replace(
                self.config, guard=dataclasses.replace(self.config.guard, whitelist_ids=td_ids)
            )
        param = next(model.parameters(), None)
        self.device = param.device if param is not None else torch.device("cpu")
        self.dtype = param.dtype if param is not None else torch.float32
        self.eos_id = self.config.eos_token_id if self.config.eos_token_id is not None else _model_eos(model)
        self.positions = _model_positions(model)
        self.image_id = _model_image_id(model)
        skip = (self.image_id,) if self.image_id is not None else ()
        self.drafter = make_drafter(
            self.config.drafter,
            model,
            self.config.ngram_max,
            self.config.ngram_min,
            skip_ids=skip,
            tokenizer=tokenizer,
        )
        k = self.config.num_draft_tokens
        fixed = None if k == "auto" else int(k)
        if self.drafter is None:
            fixed = 0
        self.max_k = fixed if fixed is not None else self.config.max_draft_tokens
        self.controller = KController(max_k=self.max_k, fixed_k=fixed)
        self.stats = EngineStats()
        # Prefill asks for last-position logits only when the model supports it (jocr's OCRModel does).
        self.last_logits_kwargs = {}
        try:
            params = inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            params = {}
        if "num_logits_to_keep" in params and hasattr(model, "lm_head"):
            self.last_logits_kwargs = {"num_logits_to_keep": 1}
        # Pages shared by requests prefilled apart are encoded once when the model takes embeddings.
        self.image_embeds_kwarg = "image_embeds" in params and hasattr(model, "encode_images")
        model.eval()

    def token_limit(self, req: GenerationRequest) -> int:
        """The tokens a request may generate: its max_tokens, cut where prompt + output would pass the
        positions the model was trained for (beyond them RoPE attention degrades into loops); a request cut
        short this way finishes with "length" like any other."""
        return _token_limit(req, self.positions)

    def check(self, req: GenerationRequest) -> GenerationRequest:
        """Validate a request against the engine (one-line ValueError for bad input)."""
        req.validate()
        if self.positions is not None and len(req.prompt_ids) >= self.positions:
            raise ValueError(
                f"prompt ({len(req.prompt_ids)} tokens) fills the model's {self.positions} positions"
            )
        if len(req.prompt_ids) + req.max_tokens > self.config.max_seq_len:
            raise ValueError(
                f"prompt ({len(req.prompt_ids)} tokens) + max_tokens ({req.max_tokens}) exceeds "
                f"max_seq_len {self.config.max_seq_len}"
            )
        if (req.stop_strings or req.stop_when is not None) and self.tokenizer is None:
            raise ValueError("stop strings and stop rules need an engine created with a tokenizer")
        config = getattr(self.model, "config", None)
        if self.image_id is not None and hasattr(config, "image_token_count"):
            # Checked here so one bad request is refused alone instead of failing a whole prefill batch.
            want = sum(config.image_token_count(v.grid, v.num_tiles > 0) for v in req.images or [])
            have = sum(1 for t in req.prompt_ids if t == self.image_id)
            if want != have:
                raise ValueError(f"prompt has {have} <image> placeholders but its images need {want}")
        vocab = getattr(getattr(getattr(self.model, "config", None), "decoder", None), "vocab_size", None)
        if vocab is not None and any(not 0 <= t < vocab for t in req.prompt_ids):
            raise ValueError(f"prompt has token ids outside the vocabulary of {vocab}")
        return req

    def new_batch(self) -> DecodeBatch:
        return DecodeBatch(self)

    def generate(
        self,
        requests: list[GenerationRequest],
        on_token: Callable[[int, list[int]], None] | None = None,
    ) -> list[GenerationResult]:
        """Run requests to completion with continuous batching; results in input order.

        on_token(i, new_token_ids) is called as request i's tokens are committed.
        """
        for r in requests:
            self.check(r)
        if not requests:
            return []
        batch = self.new_batch()
        # One preallocation for the whole call: the cache never grows while these requests decode.
        batch.reserve(min(len(requests), self.config.max_batch_size), max(map(batch.slots_needed, requests)))
        waiting = deque(enumerate(requests))
        results: list[GenerationResult | None] = [None] * len(requests)
        while waiting or batch.rows:
            free = self.config.max_batch_size - len(batch.rows)
            if waiting and free:
                joining = [waiting.popleft() for _ in range(min(free, len(waiting)))]
                events = batch.admit(joining)
            else:
                events = batch.step()
            if on_token is not None:
                for row, tokens in events:
                    if tokens:
                        on_token(row.index, tokens)
            for row in batch.pop_finished():
                results[row.index] = row.result()
        return results  # type: ignore[return-value]


@torch.inference_mode()
def naive_generate(
    model,
    req: GenerationRequest,
    eos_id: int = 1,
    guard: GuardConfig | None = None,
    tokenizer=None,
) -> GenerationResult:
    """Greedy decoding by re-running the whole sequence for every token: the oracle for the engine's tests.

    Applies the same stop rules (stop ids, stop strings, the stop rule, max tokens), the same bans (the
    repetition guard, the first token's `first_banned_ids`) and log-probabilities as the engine, one token at
    a time.
    """
    stop_ids = set(req.stop_token_ids if req.stop_token_ids is not None else (eos_id,))
    state = GuardState(req.guard or guard or GuardConfig())
    images = [req.images] if req.images else None
    device = next(model.parameters()).device
    image_id = _model_image_id(model)  # never generated: a placeholder needs an image (as in the engine)
    limit = _token_limit(req, _model_positions(model))
    out: list[int] = []
    scores: list[float] | None = [] if req.logprobs else None
    finish, stop_string = "length", None
    while len(out) < limit:
        ids = torch.tensor([req.prompt_ids + out], dtype=torch.long, device=device)  # (1, T)
        logits = model(ids, images=images).logits[0, -1].clone()  # (V,)
        banned = state.banned()
        if banned:
            logits[list(banned)] = float("-inf")
        if image_id is not None:
            logits[image_id] = float("-inf")
        if not out and req.first_banned_ids:
            logits[sorted(req.first_banned_ids)] = float("-inf")
        token = int(logits.argmax())
        if scores is not None:
            scores.append(float(torch.log_softmax(logits.float(), dim=-1)[token]))
        if token in stop_ids:
            finish = "stop"
            break
        out.append(token)
        looped = state.push(token)
        if req.stop_strings:
            text = tokenizer.decode(out)
            hit = next((s for s in req.stop_strings if s in text), None)
            if hit is not None:
                finish, stop_string = "stop", hit
                break
        if req.stop_when is not None and req.stop_when(tokenizer.decode(out)):
            finish = "stop"
            break
        if looped:
            finish = "repetition"
            break
    stats = RequestStats(prompt_tokens=len(req.prompt_ids), output_tokens=len(out))
    return GenerationResult(out, finish, stats, req.request_id, stop_string, logprobs=scores)
