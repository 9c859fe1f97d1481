"""The scoring config: the policy production traffic is scored against, in YAML or JSON.

Its fields are the policy fields of a task case (`allowed_tools`, `forbidden_actions`, `max_retries`,
`requires_confirmation`, `budgets`, `tool_schemas`, `tool_effects`, `retry_policy`) plus `prices` and
`evaluators`, and the policy options of evaluator plugins (`CaseOption(policy=True)`); validated by
`tracevals/schemas/scoring_config.schema.json`. Traffic that matches no task
case is scored against the config's policy; a task case overrides it field by field (object fields
such as `budgets` key by key). Example::

    evaluators: [step_budget, tool_policy, retry_discipline, injection, session_completeness]
    forbidden_actions: [drop_table]
    requires_confirmation: true
    budgets: {max_steps: 20, max_tokens: 40000, max_cost_usd: 0.25}
    prices: {gpt-4o-mini: {input: 0.15, output: 0.60}}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from tracevals.model.case import Case
from tracevals.model.documents import DocumentError, read_document
from tracevals.model.errors import UserError
from tracevals.model.options import extra_options, options_version
from tracevals.model.tasks import SCHEMA_PATH, build_case, schema_problem, task_case_schema

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

CONFIG_SCHEMA_PATH = SCHEMA_PATH.parent / "scoring_config.schema.json"
# Object-valued fields a case merges key by key into the config's (a case's budget for steps leaves
# the config's token budget in force).
_MERGED_BY_KEY = ("budgets", "tool_schemas", "tool_effects", "retry_policy", "prices")


class ConfigError(UserError, ValueError):
    """A scoring config that cannot be used; `str()` is one line: `file: field 'x': what`."""

    def __init__(self, source: str, message: str, field: str | None = None) -> None:
        self.source, self.message, self.field = source, message, field
        super().__init__(str(self))

    def __str__(self) -> str:
        what = self.message if self.field is None else f"field '{self.field}': {self.message}"
        return f"{self.source}: {what}"


@dataclass(frozen=True)
class ScoringConfig:
    """A loaded scoring config. `ScoringConfig()` is the empty one: no policy, every built-in evaluator."""

    policy: Mapping[str, Any] = field(default_factory=dict)
    evaluators: tuple[str, ...] | None = None
    source: str = "<config>"

    def default_case(self) -> Case:
        """The policy as a `Case` (`source="config"`): what traffic without a task case is scored against."""
        return build_case(dict(self.policy), source="config")

    def with_prices_beneath(self, prices: Mapping[str, tuple[float, float]]) -> ScoringConfig:
        """This config with `prices` (a lake's own) beneath its own: the config's and the cases' win."""
        if not prices:
            return self
        table = {m: {"input": p[0], "output": p[1]} for m, p in prices.items()}
        policy = {**self.policy, "prices": {**table, **self.policy.get("prices", {})}}
        return ScoringConfig(policy=policy, evaluators=self.evaluators, source=self.source)

    def apply(self, case: Case) -> Case:
        """`case` with the config's policy beneath it: the case's own fields win."""
        if not self.policy:
            return case
        merged: dict[str, Any] = {**self.policy, **case.raw}
        for key in _MERGED_BY_KEY:
            if key in self.policy and key in case.raw:
                merged[key] = {**self.policy[key], **case.raw[key]}
        return build_case(merged, source=case.source)


@cache
def config_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(CONFIG_SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def _validator() -> Draft202012Validator:
    """The config schema, plus the policy options of evaluator plugins (`x-policy` in the case schema)."""
    extra = extra_options()  # first: discovers the plugins, which may register options
    return _validator_at(options_version(), tuple(sorted(extra)))


@cache
def _validator_at(_version: int, _names: tuple[str, ...]) -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # imported when a config is read, not by every command
    from referencing import Registry, Resource

    case_schema = task_case_schema()
    schema = json.loads(json.dumps(config_schema()))
    for name, (_, option) in extra_options().items():
        if option.policy:
            schema["properties"][name] = {"$ref": f"task_case.schema.json#/properties/{name}"}
    registry: Registry[Any] = Registry().with_resource(case_schema["$id"], Resource.from_contents(case_schema))
    return Draft202012Validator(schema, registry=registry)


def config_from_dict(obj: Any, source: str = "<config>") -> ScoringConfig:
    """Validate a parsed config; raises `ConfigError` naming the field."""
    if obj is None:
        obj = {}
    if not isinstance(obj, dict):
        raise ConfigError(source, f"a scoring config must be a mapping, got {type(obj).__name__}")
    problem = schema_problem(_validator(), obj)
    if problem is not None:
        raise ConfigError(source, problem[1], field=problem[0])
    policy = {k: v for k, v in obj.items() if k != "evaluators"}
    names = obj.get("evaluators")
    return ScoringConfig(policy=policy, evaluators=None if names is None else tuple(names), source=source)


def load_config(path: str | os.PathLike[str]) -> ScoringConfig:
    """Read a YAML or JSON scoring config (YAML is a superset of JSON, so one parser reads both)."""
    source = str(path)
    try:
        obj = read_document(path, "scoring config")
    except DocumentError as exc:
        where, _, problem = str(exc).partition(": ")  # "file:line:column", the problem
        raise ConfigError(where, problem) from None
    return config_from_dict(obj, source)
