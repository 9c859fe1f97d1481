"""Reliability statistics: pass@1, pass^k, pass@k, Wilson intervals, worst task, paired comparison,
release categories and fault outcomes.

Pure functions over plain values, standard library only, so the same code scores a CI run, a nightly
sample or a distributed batch. One concept per module: ``estimators`` (the formulas), ``summary``
(per variant), ``compare`` (baseline against candidate), ``categories`` (release category per task),
``faults`` (what became of injected faults), ``release_gate`` (thresholds and a verdict).

>>> from tracevals.stats import Outcome, summarize
>>> s = summarize([Outcome("v", "t", i, passed=i < 3, first_pass=i < 3) for i in range(4)])["v"]
>>> s.pass_hat_k[2], s.worst_task.c
(0.5, 3)
"""

from tracevals.stats.categories import (
    AUTOMATIC,
    CANARY,
    CATEGORIES,
    CATEGORY_LABELS,
    DO_NOT_SHIP,
    DUPLICATE_SIDE_EFFECT,
    ENDLESS_LOOP,
    HAZARD_KINDS,
    HAZARD_LABELS,
    NEEDS_CONFIRMATION,
    SILENT_FAILURE,
    UNAUTHORISED_CALL,
    CategoryRules,
    Caution,
    Hazard,
    TaskCategory,
    categorize,
    hazard_label,
)
from tracevals.stats.compare import ALPHA, Comparison, TaskDelta, compare
from tracevals.stats.estimators import (
    Z95,
    confidence_level,
    pass_at_k,
    pass_hat_k,
    pass_k_series,
    percentile,
    sign_test,
    wilson,
)
from tracevals.stats.faults import (
    ESCALATED,
    FAILED,
    FAILED_SILENTLY,
    FAULT_OUTCOMES,
    RECOVERED,
    UNKNOWN,
    FaultTally,
    fault_outcomes,
    worst_fault_outcome,
)
from tracevals.stats.release_gate import GateCheck, GateResult, GateThresholds, run_gate
from tracevals.stats.summary import Outcome, TaskResult, VariantSummary, summarize

__all__ = [
    "ALPHA",
    "AUTOMATIC",
    "CANARY",
    "CATEGORIES",
    "CATEGORY_LABELS",
    "DO_NOT_SHIP",
    "DUPLICATE_SIDE_EFFECT",
    "ENDLESS_LOOP",
    "ESCALATED",
    "FAILED",
    "FAILED_SILENTLY",
    "FAULT_OUTCOMES",
    "HAZARD_KINDS",
    "HAZARD_LABELS",
    "NEEDS_CONFIRMATION",
    "RECOVERED",
    "SILENT_FAILURE",
    "UNAUTHORISED_CALL",
    "UNKNOWN",
    "Z95",
    "CategoryRules",
    "Caution",
    "Comparison",
    "FaultTally",
    "GateCheck",
    "GateResult",
    "GateThresholds",
    "Hazard",
    "Outcome",
    "TaskCategory",
    "TaskDelta",
    "TaskResult",
    "VariantSummary",
    "categorize",
    "compare",
    "confidence_level",
    "fault_outcomes",
    "hazard_label",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_series",
    "percentile",
    "run_gate",
    "sign_test",
    "summarize",
    "wilson",
    "worst_fault_outcome",
]
