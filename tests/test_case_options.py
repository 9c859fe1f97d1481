"""Options belong to their evaluator: the task-file schema is assembled from the evaluators' declarations,
and a plugin adds fields (to task files, and as policy to scoring configs) without touching tracevals."""

from __future__ import annotations

import json

import pytest

from tracevals.evaluators import CaseOption, FindingKind, registry
from tracevals.evaluators.options import case_schema
from tracevals.model import options
from tracevals.model.tasks import SCHEMA_PATH, TaskFileError, case_from_dict
from tracevals.scoring.config import CONFIG_SCHEMA_PATH, ConfigError, config_from_dict


def test_the_shipped_schema_is_the_evaluators_declarations() -> None:
    # a declaration changed without `python -m tracevals.evaluators.options`: this fails, naming the fix
    shipped = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert shipped == case_schema(registry.DEFAULT_EVALUATORS), "run: python -m tracevals.evaluators.options"
    owners = {name: p.get("x-evaluator") for name, p in shipped["properties"].items()}
    assert owners["budgets"] == "step_budget" and owners["retry_policy"] == "retry_discipline"
    assert owners["faults"] == "injection" and owners["case_id"] is None  # a core field


def test_the_scoring_config_takes_exactly_the_policy_options() -> None:
    shipped = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["properties"]
    policy = {name for name, p in shipped.items() if p.get("x-policy")}
    config = set(json.loads(CONFIG_SCHEMA_PATH.read_text(encoding="utf-8"))["properties"])
    assert config - {"evaluators", "tool_effects", "prices"} == policy


class Escalation:
    name = "escalation_speed"
    version = 1
    options = (CaseOption("max_turns_to_handoff", {"type": "integer", "minimum": 1}, "How soon.", policy=True),)
    findings = (FindingKind("slow_handoff", "warning", "Handed off late.", release="needs_confirmation"),)

    def evaluate(self, trajectory, case):  # type: ignore[no-untyped-def]
        return None


class Squatter:
    name = "squatter"
    version = 1
    options = (CaseOption("budgets", {"type": "string"}),)

    def evaluate(self, trajectory, case):  # type: ignore[no-untyped-def]
        return None


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    monkeypatch.setattr(registry, "_kinds", dict(registry._kinds))
    monkeypatch.setattr(options, "_extra", dict(options._extra))


def test_a_plugin_option_is_a_task_file_field_and_a_policy(clean: None) -> None:
    line = {"case_id": "a", "input": "x", "max_turns_to_handoff": 2}
    with pytest.raises(TaskFileError, match="field 'max_turns_to_handoff': unknown field"):
        case_from_dict(line)
    registry.register(Escalation)
    assert case_from_dict(line).raw["max_turns_to_handoff"] == 2
    with pytest.raises(TaskFileError, match="field 'max_turns_to_handoff': 0 is less than the minimum of 1"):
        case_from_dict({**line, "max_turns_to_handoff": 0})
    assert config_from_dict({"max_turns_to_handoff": 3}).policy == {"max_turns_to_handoff": 3}
    with pytest.raises(ConfigError, match="max_turns_to_handoff"):
        config_from_dict({"max_turns_to_handoff": "soon"})
    assert registry.finding_kinds()["slow_handoff"].release == "needs_confirmation"


def test_a_field_another_evaluator_owns_is_refused(clean: None) -> None:
    with pytest.raises(options.OptionConflict, match="task-file field 'budgets' is already step_budget's"):
        registry.register(Squatter)
    assert "squatter" not in registry._registry
