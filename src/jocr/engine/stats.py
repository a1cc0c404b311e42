"""Decoding statistics: tau, per-position acceptance, c and tokens/s, per request and aggregated.

Definitions (FastMTP, arXiv 2509.18362; vLLM's spec-decode metrics):
- a speculative step drafts k tokens and commits the accepted prefix plus one bonus token;
- tau = tokens committed per speculative step, bonus included (vLLM's "mean acceptance length"
  = 1 + accepted / steps);
- acceptance at position i = steps whose draft i was accepted / steps that drafted a position i
  (unconditional, as vLLM reports it);
- c = the wall time of a speculative step in units of one plain (AR) step at the same batch size;
  the speedup of speculation over AR is then tau / c.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class _DecodeCounts:
    """What a request and the engine aggregate both count, and the statistics derived from it."""

    prompt_tokens: int = 0
    output_tokens: int = 0
    steps: int = 0  # decode steps (per request: steps it took part in; engine: batched steps run)
    spec_steps: int = 0
    spec_tokens: int = 0  # tokens committed by speculative steps (bonus included)
    drafted: list[int] = field(default_factory=list)  # per draft position: steps that drafted it
    accepted: list[int] = field(default_factory=list)  # per draft position: steps that accepted it
    prefill_s: float = 0.0
    decode_s: float = 0.0  # wall time of the decode steps

    def _cover_positions(self, k: int) -> None:
        while len(self.drafted) < k:
            self.drafted.append(0)
            self.accepted.append(0)

    @property
    def tau(self) -> float | None:
        return self.spec_tokens / self.spec_steps if self.spec_steps else None

    @property
    def acceptance(self) -> list[float]:
        return [a / d if d else 0.0 for a, d in zip(self.accepted, self.drafted)]

    @property
    def tokens_per_s(self) -> float | None:
        total = self.prefill_s + self.decode_s
        return self.output_tokens / total if total > 0 else None

    def counts_dict(self) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "steps": self.steps,
            "spec_steps": self.spec_steps,
            "tau": self.tau,
            "acceptance": self.acceptance,
            "tokens_per_s": self.tokens_per_s,
        }


@dataclass
class RequestStats(_DecodeCounts):
    spec_s: float = 0.0  # wall time of the speculative steps this request took part in
    ar_s: float = 0.0  # ... of its plain steps
    # For c: speculative step time and the engine's measured plain step time at the same batch size, summed
    # over the speculative steps for which such a plain-step measurement existed.
    spec_s_ref: float = 0.0
    ar_ref_s: float = 0.0

    def record_spec(self, k: int, accepted: int, committed: int) -> None:
        self._cover_positions(k)
        for i in range(k):
            self.drafted[i] += 1
            if i < accepted:
                self.accepted[i] += 1
        self.spec_steps += 1
        self.spec_tokens += committed

    @property
    def c(self) -> float | None:
        return self.spec_s_ref / self.ar_ref_s if self.ar_ref_s > 0 else None

    @classmethod
    def combined(cls, parts: list[RequestStats]) -> RequestStats | None:
        """One page's counts over its requests (an anchor read in windows); None without any."""
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        total = cls()
        for part in parts:
            for name in ("prompt_tokens", "output_tokens", "steps", "spec_steps", "spec_tokens"):
                setattr(total, name, getattr(total, name) + getattr(part, name))
            for name in ("prefill_s", "decode_s", "spec_s", "ar_s", "spec_s_ref", "ar_ref_s"):
                setattr(total, name, getattr(total, name) + getattr(part, name))
            total._cover_positions(len(part.drafted))
            for i, (d, a) in enumerate(zip(part.drafted, part.accepted)):
                total.drafted[i] += d
                total.accepted[i] += a
        return total

    def to_dict(self) -> dict:
        return {**self.counts_dict(), "c": self.c, "prefill_s": self.prefill_s, "decode_s": self.decode_s}


@dataclass
class EngineStats(_DecodeCounts):
    """Aggregate over every request an engine finished (what the server's metrics endpoint reports)."""

    requests: int = 0
    finish_reasons: dict[str, int] = field(default_factory=dict)

    def add_request(self, stats: RequestStats, finish_reason: str) -> None:
        self.requests += 1
        self.output_tokens += stats.output_tokens
        self.prompt_tokens += stats.prompt_tokens
        self.spec_steps += stats.spec_steps
        self.spec_tokens += stats.spec_tokens
        self._cover_positions(len(stats.drafted))
        for i, (d, a) in enumerate(zip(stats.drafted, stats.accepted)):
            self.drafted[i] += d
            self.accepted[i] += a
        self.finish_reasons[finish_reason] = self.finish_reasons.get(finish_reason, 0) + 1

    def to_dict(self) -> dict:
        return {"requests": self.requests, **self.counts_dict(), "finish_reasons": dict(self.finish_reasons)}
