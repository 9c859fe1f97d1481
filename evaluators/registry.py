"""The evaluator registry: the built-ins, `register()`, and third-party evaluators from entry points.

A package ships an evaluator by declaring it in its `pyproject.toml` (use the evaluator's `name` as
the entry-point name)::

    [project.entry-points."tracevals.evaluators"]
    reply_language = "my_package.checks:ReplyLanguage"

Entry points are loaded the first time a name is looked up that is not registered yet. A plugin that
fails to load is logged and skipped, never fatal; asking for it by name says why it is missing.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points
from typing import Any, TypeVar

from tracevals.evaluators.evaluator import Evaluator
from tracevals.evaluators.injection.evaluator import Injection
from tracevals.evaluators.retry_discipline.evaluator import RetryDiscipline
from tracevals.evaluators.session_completeness.evaluator import SessionCompleteness
from tracevals.evaluators.step_budget.evaluator import StepBudget
from tracevals.evaluators.task_success.evaluator import TaskSuccess
from tracevals.evaluators.tool_policy.evaluator import ToolPolicy
from tracevals.evaluators.trajectory_match.evaluator import TrajectoryMatch
from tracevals.model.errors import UserError

ENTRY_POINT_GROUP = "tracevals.evaluators"
DEFAULT_EVALUATORS: tuple[type[Evaluator], ...] = (
    TrajectoryMatch,
    ToolPolicy,
    RetryDiscipline,
    TaskSuccess,
    StepBudget,
    Injection,
    SessionCompleteness,
)

logger = logging.getLogger(__name__)
EvaluatorClass = TypeVar("EvaluatorClass", bound=type[Any])

_registry: dict[str, type[Evaluator]] = {}
_plugin_errors: dict[str, str] = {}
_plugins_loaded = False


class UnknownEvaluatorError(UserError, LookupError):
    """No evaluator has this name; the message lists the valid names (and plugins that failed to load)."""

    def __init__(self, name: str, valid: list[str], broken: dict[str, str]) -> None:
        self.name = name
        self.valid = valid
        message = f"unknown evaluator {name!r}; valid: {', '.join(valid) or 'none'}"
        if name in broken:
            message += f" (plugin {name!r} failed to load: {broken[name]})"
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


def register(evaluator_cls: EvaluatorClass) -> EvaluatorClass:
    """Register an evaluator class under its `name`; usable as a class decorator.

    >>> @register
    ... class ReplyLanguage:
    ...     name = "reply_language"
    ...     version = 1
    ...     def evaluate(self, trajectory, case): return None
    """
    name = getattr(evaluator_cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{evaluator_cls.__qualname__} needs a class attribute `name` (a non-empty str)")
    if not isinstance(getattr(evaluator_cls, "version", None), int):
        raise TypeError(f"evaluator {name!r} needs a class attribute `version` (an int)")
    if not callable(getattr(evaluator_cls, "evaluate", None)):
        raise TypeError(f"evaluator {name!r} needs a method `evaluate(trajectory, case)`")
    existing = _registry.get(name)
    if existing is not None and existing is not evaluator_cls:
        where = f"{existing.__module__}.{existing.__qualname__}"
        raise ValueError(f"evaluator name {name!r} is already registered by {where}")
    _registry[name] = evaluator_cls
    return evaluator_cls


def get(name: str) -> type[Evaluator]:
    """The evaluator class registered as `name`; raises `UnknownEvaluatorError` listing valid names."""
    if name not in _registry:
        load_plugins()
    try:
        return _registry[name]
    except KeyError:
        raise UnknownEvaluatorError(name, names(), _plugin_errors) from None


def names() -> list[str]:
    """Every registered evaluator name, plugins included, sorted."""
    load_plugins()
    return sorted(_registry)


def default_evaluators() -> list[Evaluator]:
    """Fresh instances of the built-in evaluators a scoring run uses when none are named."""
    return [cls() for cls in DEFAULT_EVALUATORS]


def instances(names_: list[str] | tuple[str, ...] | None) -> list[Evaluator]:
    """Fresh instances of the named evaluators (default: the built-ins); unknown names raise
    `UnknownEvaluatorError` before anything is scored."""
    if names_ is None:
        return default_evaluators()
    return [get(n)() for n in names_]


def load_plugins() -> None:
    """Register the evaluators of the `tracevals.evaluators` entry-point group (once per process)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = register(entry_point.load())
        except Exception as exc:  # a broken plugin must not stop scoring with the others
            _plugin_errors[entry_point.name] = f"{type(exc).__name__}: {exc}"
            logger.warning("tracevals: evaluator plugin %r not loaded: %s", entry_point.name, exc)
            continue
        if cls.name != entry_point.name:
            logger.warning(
                "tracevals: entry point %r registers evaluator %r; use the same name", entry_point.name, cls.name
            )


for _builtin in DEFAULT_EVALUATORS:
    register(_builtin)
