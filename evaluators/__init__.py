"""Evaluators: small, named, versioned checks from a trajectory (and its task case) to a `Score`.

>>> from tracevals.evaluators import evaluate_all, attempt_passed, default_evaluators
>>> from tracevals.evaluators import score_batch   # the same verdicts for a whole batch, set-at-a-time
"""

from tracevals.evaluators.apply import attempt_passed, evaluate_all, score_batch
from tracevals.evaluators.evaluator import Evaluator, make_score
from tracevals.evaluators.failure_handling.evaluator import FailureHandling
from tracevals.evaluators.injection.evaluator import Injection
from tracevals.evaluators.registry import (
    ENTRY_POINT_GROUP,
    UnknownEvaluatorError,
    default_evaluators,
    finding_kinds,
    get,
    instances,
    load_plugins,
    names,
    register,
)
from tracevals.evaluators.retry_discipline.evaluator import RetryDiscipline
from tracevals.evaluators.scope import Scope
from tracevals.evaluators.session_completeness.evaluator import SessionCompleteness
from tracevals.evaluators.step_budget.evaluator import StepBudget
from tracevals.evaluators.task_success.evaluator import TaskSuccess
from tracevals.evaluators.tool_policy.evaluator import ToolPolicy
from tracevals.evaluators.trajectory_match.evaluator import MATCH_MODES, TrajectoryMatch
from tracevals.evaluators.trajectory_match.matching import lcs_alignment, maximum_matching
from tracevals.model.args_match import ARGS_MODES, ArgsComparator, ArgsRule, args_rule
from tracevals.model.batch import Batch
from tracevals.model.calls import RISKY_EFFECTS, operation_key
from tracevals.model.case import Case, ExpectedCall
from tracevals.model.findings import Finding, FindingKind
from tracevals.model.options import CaseOption
from tracevals.model.score import Score, scores_of
from tracevals.model.trajectory import HANDOFF_TOOL, Handoff, SpanFacts, ToolCall, Trajectory

__all__ = [
    "ARGS_MODES",
    "ENTRY_POINT_GROUP",
    "HANDOFF_TOOL",
    "MATCH_MODES",
    "RISKY_EFFECTS",
    "ArgsComparator",
    "ArgsRule",
    "Batch",
    "Case",
    "CaseOption",
    "Evaluator",
    "ExpectedCall",
    "FailureHandling",
    "Finding",
    "FindingKind",
    "Handoff",
    "Injection",
    "RetryDiscipline",
    "Scope",
    "Score",
    "SessionCompleteness",
    "SpanFacts",
    "StepBudget",
    "TaskSuccess",
    "ToolCall",
    "ToolPolicy",
    "Trajectory",
    "TrajectoryMatch",
    "UnknownEvaluatorError",
    "args_rule",
    "attempt_passed",
    "default_evaluators",
    "evaluate_all",
    "finding_kinds",
    "get",
    "instances",
    "lcs_alignment",
    "load_plugins",
    "make_score",
    "maximum_matching",
    "names",
    "operation_key",
    "register",
    "score_batch",
    "scores_of",
]
