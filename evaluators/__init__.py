"""Evaluators: small, named, versioned checks from a trajectory (and its task case) to a `Score`.

>>> from tracevals.evaluators import evaluate_all, attempt_passed, default_evaluators
>>> from tracevals.evaluators import score_batch   # the same verdicts for a whole batch, set-at-a-time
"""

from tracevals.evaluators.args_match import ARGS_MODES, ArgsComparator, ArgsRule, args_rule
from tracevals.evaluators.batch_scoring import score_batch, scores_of
from tracevals.evaluators.config import ConfigError, ScoringConfig, config_from_dict, load_config
from tracevals.evaluators.evaluator import Evaluator, make_score
from tracevals.evaluators.frames import Scope
from tracevals.evaluators.injection import Injection
from tracevals.evaluators.matching import lcs_alignment, maximum_matching
from tracevals.evaluators.registry import (
    ENTRY_POINT_GROUP,
    UnknownEvaluatorError,
    default_evaluators,
    get,
    instances,
    load_plugins,
    names,
    register,
)
from tracevals.evaluators.retry_discipline import RetryDiscipline
from tracevals.evaluators.scoring import attempt_passed, evaluate_all
from tracevals.evaluators.session_completeness import SessionCompleteness
from tracevals.evaluators.step_budget import StepBudget
from tracevals.evaluators.task_success import TaskSuccess
from tracevals.evaluators.tool_policy import ToolPolicy
from tracevals.evaluators.trajectory_match import MATCH_MODES, TrajectoryMatch
from tracevals.model.batch import Batch
from tracevals.model.calls import RISKY_EFFECTS, operation_key
from tracevals.model.case import Case, ExpectedCall
from tracevals.model.score import Score
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
    "ConfigError",
    "Evaluator",
    "ExpectedCall",
    "Handoff",
    "Injection",
    "RetryDiscipline",
    "Scope",
    "Score",
    "ScoringConfig",
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
    "config_from_dict",
    "default_evaluators",
    "evaluate_all",
    "get",
    "instances",
    "lcs_alignment",
    "load_config",
    "load_plugins",
    "make_score",
    "maximum_matching",
    "names",
    "operation_key",
    "register",
    "score_batch",
    "scores_of",
]
