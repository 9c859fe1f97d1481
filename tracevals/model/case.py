"""What a task case is: the expected steps, policy, success criteria and budgets of one task.

Loaded from a JSONL task file by `tracevals.model.tasks` (validated by its JSON Schema), or built from
a scoring config's policy (`source="config"`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ExpectedCall:
    """A step of a case's `expected_steps`: a tool name, optionally with the arguments expected."""

    tool: str
    args: dict[str, Any] | None = None  # None: any arguments match


@dataclass(frozen=True)
class Case:
    """One task case from a JSONL task file (see `tracevals/model/tasks.py` and its JSON Schema), or the
    policy of a scoring config (`source="config"`), which applies to traffic that matches no case."""

    case_id: str
    input: str
    allowed_tools: tuple[str, ...] | None = None  # None: no restriction
    expected_steps: tuple[ExpectedCall, ...] = ()
    forbidden_actions: tuple[str, ...] = ()
    max_retries: int | None = None
    requires_confirmation: bool = False
    must_include: tuple[str, ...] = ()
    match_mode: str = "strict"  # strict | unordered | superset | subset | in_order
    args_mode: str = "ignore"  # exact | ignore | superset | subset
    group: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    must_not_include: tuple[str, ...] = ()
    regex: tuple[str, ...] = ()
    json_schema: dict[str, Any] | None = None
    checker: str | None = None  # "module:function"
    budgets: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    tool_schemas: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    tool_effects: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    loop_repeats: int = 3  # the same call with the same outcome repeated this often is a loop
    require_idempotency_key: bool | None = None  # None: a missing key is a warning; True: a failure
    min_backoff_ms: float = 0.0  # the least wait before retrying a 429 / timeout that named no retry-after
    faults: tuple[dict[str, Any], ...] = ()
    injections: tuple[dict[str, Any], ...] = ()
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict, compare=False, hash=False)
    source: str = "task"  # task | config
    steps_given: bool = False  # `expected_steps` was given, perhaps empty (no tool call expected)

    @property
    def expects_steps(self) -> bool:
        """Whether the case says which tool calls to make: some steps, or `expected_steps: []` (none)."""
        return bool(self.expected_steps) or self.steps_given

    @property
    def is_task(self) -> bool:
        return self.source == "task"
