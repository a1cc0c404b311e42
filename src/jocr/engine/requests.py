"""Request, result and engine configuration dataclasses (the engine contract in docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from jocr.engine.guard import GuardConfig
from jocr.engine.stats import RequestStats
from jocr.types import PageViews

# Sampling ranges that are safe end to end: softmax(logits / temperature) stays finite (no NaN reaching
# torch.multinomial), the nucleus is never empty, a seed fits the generator's 64-bit state.
MIN_TEMPERATURE = 1e-3
MAX_TEMPERATURE = 100.0
MIN_TOP_P = 1e-6
MAX_SEED = 2**63 - 1


@dataclass
class GenerationRequest:
    """One generation. `prompt_ids` comes from `Tokenizer.build_prompt`, `images` are its pages' views.

    temperature 0 is greedy (and speculation applies); > 0 samples with top_p and a seed (reproducible for a
    given seed). stop_token_ids None means the model's EOS. spec None follows the engine's configuration for
    greedy requests and means plain decoding for sampled ones; False forces plain decoding; True lets a
    sampled request speculate (exact distribution by rejection sampling, engine/verify.py; a seed then
    reproduces its tokens only for a fixed k). guard None uses the engine's guard settings.

    Shaping an answer (docs/asking.md, "Decoding an answer"): `first_banned_ids` are never the first
    generated token; `stop_when(text)` is asked after each committed token with the decoded output so far
    and ends the generation ("stop") when it returns True; `logprobs` makes the result carry each chosen
    token's log-probability under the distribution it was chosen from (after the bans).
    """

    prompt_ids: list[int]
    images: list[PageViews] | None = None
    max_tokens: int = 4096
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop_token_ids: tuple[int, ...] | None = None
    stop_strings: tuple[str, ...] = ()
    spec: bool | None = None
    guard: GuardConfig | None = None
    request_id: str | None = None
    first_banned_ids: frozenset[int] = frozenset()
    stop_when: Callable[[str], bool] | None = None
    logprobs: bool = False

    def validate(self) -> GenerationRequest:
        if not self.prompt_ids:
            raise ValueError("request has an empty prompt")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, not {self.max_tokens}")
        if not (self.temperature == 0 or MIN_TEMPERATURE <= self.temperature <= MAX_TEMPERATURE):
            raise ValueError(
                f"temperature must be 0 or in [{MIN_TEMPERATURE}, {MAX_TEMPERATURE}], not {self.temperature}"
            )
        if not MIN_TOP_P <= self.top_p <= 1:
            raise ValueError(f"top_p must be in [{MIN_TOP_P}, 1], not {self.top_p}")
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be in [0, 2**63 - 1], not {self.seed}")
        if any(not s for s in self.stop_strings):
            raise ValueError("stop strings must be non-empty")
        return self

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass
class GenerationResult:
    token_ids: list[int]
    # stop | length | repetition (| cancelled for a request cancelled through a handle | error, see `error`)
    finish_reason: str
    stats: RequestStats
    request_id: str | None = None
    stop_string: str | None = None  # the stop string that ended the generation, if any
    error: BaseException | None = None  # set with finish_reason "error": this request's own failure
    # With `GenerationRequest.logprobs`: one per chosen token, i.e. token_ids' then the stop token's when a
    # stop id ended the generation (choosing to stop is part of the answer's score).
    logprobs: list[float] | None = None

    def mean_logprob(self) -> float | None:
        """The mean log-probability of the chosen tokens (None without logprobs or tokens)."""
        return sum(self.logprobs) / len(self.logprobs) if self.logprobs else None


DRAFTERS = ("mtp", "ngram", "mtp+ngram", "mtp+refs", "refs", "none")


@dataclass
class EngineConfig:
    max_batch_size: int = 32
    # mtp | ngram | mtp+ngram (prompts holding the text: drafters.MTPNGramDrafter) | mtp+refs (answers in run
    # references: drafters.ReferenceDrafter) | refs (the same lookup without the head) | none
    drafter: str = "mtp"
    num_draft_tokens: int | str = "auto"  # k, or "auto" (adaptive, see adaptive.py)
    max_draft_tokens: int = 3  # the largest k "auto" may pick
    ngram_max: int = 4
    ngram_min: int = 1
    guard: GuardConfig = field(default_factory=GuardConfig)
    eos_token_id: int | None = None  # None: the model config's eos_token_id
    pad_token_id: int = 0  # filler for right-padded prefill rows (never visible to real tokens)
    max_prefill_tokens: int = 32768  # batch x length cap of one prefill forward
    min_cache_len: int = 256  # smallest preallocation (rounded up from the requests' needs)
    max_seq_len: int = 65536  # refuse requests whose prompt + max_tokens exceed this

    def validate(self) -> EngineConfig:
        if self.max_batch_size < 1:
            raise ValueError("max_batch_size must be >= 1")
        if self.drafter not in DRAFTERS:
            raise ValueError(f"drafter must be one of {', '.join(DRAFTERS)}, not {self.drafter!r}")
        k = self.num_draft_tokens
        if k != "auto" and (not isinstance(k, int) or k < 0):
            raise ValueError(f"num_draft_tokens must be 'auto' or an int >= 0, not {k!r}")
        if self.max_draft_tokens < 0:
            raise ValueError("max_draft_tokens must be >= 0")
        self.guard.validate()
        return self
