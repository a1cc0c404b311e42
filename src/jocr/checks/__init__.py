"""Verifiable checks: olmOCR-Bench unit tests, OmniDocBench metrics, TEDS, KaTeX math, GRPO rewards.

The same code scores benchmarks and grades GRPO rollouts: every unit test is a dataclass with
`run(markdown) -> CheckResult(passed, score, reason)`.
"""

__all__ = [
    "TEST_TYPES",
    "BaseTest",
    "BaselineTest",
    "CheckResult",
    "FootnoteTest",
    "FormatTest",
    "MathTest",
    "TableTest",
    "TextOrderTest",
    "TextPresenceTest",
    "ValidationError",
    "load_test",
    "load_tests",
    "run_tests",
]


def __getattr__(name: str):
    """The unit-test names load `jocr.checks.unittests` (and its HTML parser) on first use, so that a module
    that needs one small check (`jocr.checks.qa` for `jocr ask`) does not pay for all of them."""
    if name in __all__:
        from jocr.checks import unittests

        return getattr(unittests, name)
    raise AttributeError(f"module 'jocr.checks' has no attribute {name!r}")
