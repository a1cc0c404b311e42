"""Verifiable checks: olmOCR-Bench unit tests, OmniDocBench metrics, TEDS, KaTeX math, GRPO rewards.

The same code scores benchmarks and grades GRPO rollouts: every unit test is a dataclass with
`run(markdown) -> CheckResult(passed, score, reason)`.
"""

from jocr.checks.unittests import (
    TEST_TYPES,
    BaselineTest,
    BaseTest,
    CheckResult,
    FootnoteTest,
    FormatTest,
    MathTest,
    TableTest,
    TextOrderTest,
    TextPresenceTest,
    ValidationError,
    load_test,
    load_tests,
    run_tests,
)

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
