"""The evaluator registry: the built-ins, `register()`, and third-party evaluators from entry points.

A package ships an evaluator by declaring it in its `pyproject.toml` (use the evaluator's `name` as
the entry-point name)::

    [project.entry-points."tracevals.evaluators"]
    reply_language = "my_package.checks:ReplyLanguage"

Entry points are loaded the first time a name is looked up that is not registered yet, or a task file
is validated (a plugin may add task-file fields). A plugin that fails to load is logged and skipped,
never fatal; asking for it by name says why it is missing.

An evaluator declares what it may find (`findings`, `FindingKind`s with their meaning for release) and
the task-file fields it reads (`options`, `CaseOption`s with their JSON Schema); `register` checks both:
a kind declared differently by two evaluators, or a field another evaluator (or the core) owns, is an
error naming both.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points
from typing import Any, TypeVar

from tracevals.evaluators.evaluator import Evaluator
from tracevals.evaluators.failure_handling.evaluator import FailureHandling
from tracevals.evaluators.injection.evaluator import Injection
from tracevals.evaluators.options import declared_options
from tracevals.evaluators.retry_discipline.evaluator import RetryDiscipline
from tracevals.evaluators.session_completeness.evaluator import SessionCompleteness
from tracevals.evaluators.step_budget.evaluator import StepBudget
from tracevals.evaluators.task_success.evaluator import TaskSuccess
from tracevals.evaluators.tool_policy.evaluator import ToolPolicy
from tracevals.evaluators.trajectory_match.evaluator import TrajectoryMatch
from tracevals.model.errors import UserError
from tracevals.model.findings import EVALUATOR_ERROR, EVALUATOR_FAILED, FindingKind
from tracevals.model.options import add_discovery, register_options
from tracevals.model.tasks import shipped_schema

ENTRY_POINT_GROUP = "tracevals.evaluators"
DEFAULT_EVALUATORS: tuple[type[Evaluator], ...] = (
    TrajectoryMatch,
    ToolPolicy,
    RetryDiscipline,
    TaskSuccess,
    StepBudget,
    Injection,
    SessionCompleteness,
    FailureHandling,
)

logger = logging.getLogger(__name__)
EvaluatorClass = TypeVar("EvaluatorClass", bound=type[Any])

_registry: dict[str, type[Evaluator]] = {}
_installed: list[type[Evaluator]] = []  # the evaluators of installed packages (entry points), in load order
_kinds: dict[str, tuple[str, FindingKind]] = {k.name: ("tracevals", k) for k in (EVALUATOR_FAILED, EVALUATOR_ERROR)}
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
    if existing is None:
        kinds = declared_kinds(evaluator_cls)
        options = declared_options(evaluator_cls)
        if evaluator_cls not in DEFAULT_EVALUATORS:  # the built-ins' are the shipped schema (a test keeps it so)
            register_options(name, options, shipped_schema()["properties"])
        for kind in kinds:
            _kinds.setdefault(kind.name, (name, kind))
    _registry[name] = evaluator_cls
    return evaluator_cls


def declared_kinds(evaluator_cls: Any) -> tuple[FindingKind, ...]:
    """The finding kinds an evaluator class declares; TypeError when malformed, ValueError when one is
    declared differently by an evaluator registered before."""
    name = getattr(evaluator_cls, "name", evaluator_cls)
    kinds = getattr(evaluator_cls, "findings", ())
    if not isinstance(kinds, (tuple, list)) or not all(isinstance(k, FindingKind) for k in kinds):
        raise TypeError(f"evaluator {name!r}: `findings` must be a tuple of FindingKind")
    for kind in kinds:
        held = _kinds.get(kind.name)
        if held is not None and held[1] != kind:
            raise ValueError(f"evaluator {name!r}: finding kind {kind.name!r} is declared differently by {held[0]}")
    return tuple(kinds)


def finding_kinds() -> dict[str, FindingKind]:
    """Every declared finding kind (plugins included), by name."""
    load_plugins()
    return {name: kind for name, (_, kind) in sorted(_kinds.items())}


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
    """Fresh instances of the evaluators a scoring run uses when none are named: the built-ins, then every
    evaluator an installed package provides (installing one is opting in; `--evaluators` narrows the set).
    A plugin returns None where it has nothing to check, like the built-ins."""
    load_plugins()
    return [cls() for cls in (*DEFAULT_EVALUATORS, *_installed)]


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
            if cls not in DEFAULT_EVALUATORS and cls not in _installed:
                _installed.append(cls)
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
add_discovery(load_plugins)  # a task file may use a plugin's fields: load the plugins before validating one
