"""Evaluators: small, named, versioned checks from a trajectory (and its task case) to a `Score`.

>>> from tracevals.evaluators import evaluate_all, attempt_passed, default_evaluators
"""

from tracevals.evaluators.args_match import ARGS_MODES, ArgsComparator, ArgsRule, args_rule
from tracevals.evaluators.evaluator import Evaluator, make_score
from tracevals.evaluators.matching import lcs_alignment, maximum_matching
from tracevals.evaluators.model import Case, ExpectedCall, Score, ToolCall, Trajectory
from tracevals.evaluators.registry import (
    ENTRY_POINT_GROUP,
    UnknownEvaluatorError,
    default_evaluators,
    get,
    load_plugins,
    names,
    register,
)
from tracevals.evaluators.retry_discipline import RetryDiscipline
from tracevals.evaluators.scoring import attempt_passed, evaluate_all
from tracevals.evaluators.task_success import TaskSuccess
from tracevals.evaluators.tool_policy import HANDOFF_TOOL, RISKY_EFFECTS, ToolPolicy
from tracevals.evaluators.trajectory_match import MATCH_MODES, TrajectoryMatch

__all__ = [
    "ARGS_MODES",
    "ENTRY_POINT_GROUP",
    "HANDOFF_TOOL",
    "MATCH_MODES",
    "RISKY_EFFECTS",
    "ArgsComparator",
    "ArgsRule",
    "Case",
    "Evaluator",
    "ExpectedCall",
    "RetryDiscipline",
    "Score",
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
    "get",
    "lcs_alignment",
    "load_plugins",
    "make_score",
    "maximum_matching",
    "names",
    "register",
]
