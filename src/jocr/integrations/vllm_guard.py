"""The jocr engine's no-repeat n-gram ban as a vLLM (V1) logits processor; imported only inside vLLM.

Requests turn it on through `SamplingParams.extra_args` (what `vllm_sampling_params` writes; over the OpenAI
server: `"vllm_xargs": {...}`): `no_repeat_ngram_size` (30), `no_repeat_window` (90) and
`no_repeat_whitelist` (the `<td>`, `</td>` ids). The ban itself is `jocr.engine.guard.GuardState.banned`, the
engine's code, over the generated tokens only, so vLLM and the engine ban the same tokens.

vLLM 0.32 refuses custom logits processors when speculative decoding is on
(`v1/sample/logits_processor/__init__.py`), so with a FastMTP draft the ban is not applied.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import AdapterLogitsProcessor

from jocr.engine.guard import GuardConfig, GuardState

KEY_NGRAM = "no_repeat_ngram_size"
KEY_WINDOW = "no_repeat_window"
KEY_WHITELIST = "no_repeat_whitelist"


def _settings(params: SamplingParams) -> GuardConfig | None:
    extra = params.extra_args or {}
    n = extra.get(KEY_NGRAM)
    if not n:
        return None
    window = extra.get(KEY_WINDOW, 90)
    whitelist = extra.get(KEY_WHITELIST) or ()
    if not isinstance(n, int) or not isinstance(window, int):
        raise ValueError(f"{KEY_NGRAM} and {KEY_WINDOW} must be integers")
    if not all(isinstance(i, int) for i in whitelist):
        raise ValueError(f"{KEY_WHITELIST} must be a list of token ids")
    return GuardConfig(
        ngram_size=n, window=window, whitelist_ids=tuple(whitelist), loop_detection=False
    ).validate()


class _RequestBan:
    """Per request: the engine's guard state, advanced with the tokens vLLM generated since the last call."""

    def __init__(self, config: GuardConfig) -> None:
        self.config = config
        self.state = GuardState(config)

    def __call__(self, output_ids: list[int], logits: torch.Tensor) -> torch.Tensor:
        # logits: (V,) for this request's next token
        if len(output_ids) < len(self.state.tokens):  # the request was preempted and recomputed
            self.state = GuardState(self.config)
        for token in output_ids[len(self.state.tokens) :]:
            self.state.push(int(token))
        banned = self.state.banned()
        if banned:
            logits[list(banned)] = float("-inf")
        return logits


class NoRepeatNGramLogitsProcessor(AdapterLogitsProcessor):
    """Load with `LLM(logits_processors=[...])` or `--logits-processors jocr.integrations.vllm_guard:...`."""

    @classmethod
    def validate_params(cls, params: SamplingParams) -> None:
        _settings(params)

    def is_argmax_invariant(self) -> bool:
        return False  # it changes the greedy choice

    def new_req_logits_processor(self, params: SamplingParams) -> Callable | None:
        config = _settings(params)
        return None if config is None else _RequestBan(config)
