"""Generation engine: KV cache, batched prefill and decode, FastMTP / n-gram speculation, repetition guard,
statistics and the thread-safe scheduler (see docs/engine.md)."""

from jocr.engine.cache import CacheView, KVCache
from jocr.engine.generate import Engine, naive_generate
from jocr.engine.guard import GuardConfig, GuardState
from jocr.engine.requests import EngineConfig, GenerationRequest, GenerationResult
from jocr.engine.scheduler import Handle, QueueFull, Scheduler, SchedulerClosed
from jocr.engine.stats import EngineStats, RequestStats

__all__ = [
    "CacheView",
    "Engine",
    "EngineConfig",
    "EngineStats",
    "GenerationRequest",
    "GenerationResult",
    "GuardConfig",
    "GuardState",
    "Handle",
    "KVCache",
    "QueueFull",
    "RequestStats",
    "Scheduler",
    "SchedulerClosed",
    "naive_generate",
]
