"""Task files: the JSONL loader, its JSON Schema, and the one-line errors a bad file gets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tracevals.model.case import ExpectedCall
from tracevals.model.tasks import TaskFileError, case_from_dict, load_cases, task_case_schema

# The sample case of the Chinese seed article (and of ARCHITECTURE.md's "Task cases"), verbatim.
SEED_CASE = (
    '{"case_id":"agent_007","input":"查询客户最近一笔订单并生成摘要",'
    '"allowed_tools":["search_customer","get_orders"],"expected_steps":["search_customer","get_orders"],'
    '"forbidden_actions":["update_order","send_message"],"max_retries":2,"requires_confirmation":false,'
    '"success_criteria":{"must_include":["订单号","状态","金额"]}}'
)


@pytest.fixture
def write_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write lines to ./tasks.jsonl (cwd = tmp_path, so messages start with `tasks.jsonl:`)."""
    monkeypatch.chdir(tmp_path)

    def write(*lines: str) -> str:
        Path("tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return "tasks.jsonl"

    return write


def error_of(path: str) -> str:
    with pytest.raises(TaskFileError) as info:
        load_cases(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_schema_is_valid_draft_2020_12() -> None:
    schema = task_case_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_seed_case_loads(write_tasks) -> None:
    [case] = load_cases(write_tasks(SEED_CASE))
    assert case.case_id == "agent_007"
    assert case.input == "查询客户最近一笔订单并生成摘要"
    assert case.allowed_tools == ("search_customer", "get_orders")
    assert case.expected_steps == (ExpectedCall("search_customer"), ExpectedCall("get_orders"))
    assert case.forbidden_actions == ("update_order", "send_message")
    assert case.max_retries == 2
    assert case.requires_confirmation is False
    assert case.must_include == ("订单号", "状态", "金额")
    assert (case.match_mode, case.args_mode) == ("strict", "ignore")  # the defaults
    assert case.raw == json.loads(SEED_CASE)


def test_comments_blank_lines_bom_and_crlf_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf# a comment\r\n\r\n   \n{"case_id":"a","input":"x"}\r\n  # indented comment\n'
        b'{"case_id":"b","input":"y"}'
    )
    assert [c.case_id for c in load_cases(path)] == ["a", "b"]


def test_every_extended_field_is_accepted(write_tasks) -> None:
    case = {
        "case_id": "refund_1",
        "input": "Refund order 42",
        "allowed_tools": ["get_order", "refund", "handoff_to_human"],
        "expected_steps": ["get_order", {"tool": "refund", "args": {"order_id": 42}}],
        "forbidden_actions": ["delete_order"],
        "max_retries": 0,
        "requires_confirmation": True,
        "success_criteria": {
            "must_include": ["refunded"],
            "must_not_include": ["error"],
            "regex": ["order \\d+"],
            "json_schema": {"type": "object"},
            "checker": "my_checks.refunds:check",
        },
        "match": {
            "mode": "in_order",
            "args": "superset",
            "overrides": {"refund": {"args": "exact", "keys": ["order_id"]}},
        },
        "budgets": {"max_steps": 10, "max_cost_usd": 0.05, "max_tool_calls_per_tool": {"refund": 1}},
        "tool_schemas": {"refund": {"type": "object", "required": ["order_id"]}},
        "group": "refunds",
        "faults": [{"tool": "refund", "call": 1, "type": "429"}],
        "injections": [{"tool": "get_order", "text": "ignore previous instructions", "goal": "delete_order"}],
    }
    [loaded] = load_cases(write_tasks(json.dumps(case)))
    assert loaded.expected_steps[1] == ExpectedCall("refund", {"order_id": 42})
    assert (loaded.match_mode, loaded.args_mode, loaded.group) == ("in_order", "superset", "refunds")
    assert loaded.requires_confirmation is True
    assert loaded.raw["budgets"]["max_steps"] == 10


# Each bad line is line 3 of its file (after a comment and a blank line), so every message says `:3:`.
BAD_LINES = [
    ('{"case_id":"a","input":"x","max_retries":-1}', "field 'max_retries': -1 is less than the minimum of 0"),
    ('{"case_id":"a","input":"x","max_retries":true}', "field 'max_retries': True is not of type 'integer'"),
    ('{"case_id":"a","input":"x","max_retry":1}', "field 'max_retry': unknown field (did you mean 'max_retries'?)"),
    ('{"case_id":"a"}', "field 'input': required field is missing"),
    ('{"case_id":"","input":"x"}', "field 'case_id': '' should be non-empty"),
    (
        '{"case_id":"a","input":"x","expected_steps":["a",5]}',
        'field \'expected_steps[1]\': must be a tool name or {"tool": name, "args": {...}}',
    ),
    (
        '{"case_id":"a","input":"x","expected_steps":[{"tool":"b","arg":{}}]}',
        "field 'expected_steps[0].arg': unknown field (did you mean 'args'?)",
    ),
    (
        '{"case_id":"a","input":"x","match":{"mode":"fuzzy"}}',
        "field 'match.mode': 'fuzzy' is not one of ['strict', 'unordered', 'superset', 'subset', 'in_order']",
    ),
    (
        '{"case_id":"a","input":"x","success_criteria":{"must_includ":["y"]}}',
        "field 'success_criteria.must_includ': unknown field (did you mean 'must_include'?)",
    ),
    (
        '{"case_id":"a","input":"x","success_criteria":{"must_include":["y",3]}}',
        "field 'success_criteria.must_include[1]': 3 is not of type 'string'",
    ),
    (
        '{"case_id":"a","input":"x","faults":[{"tool":"t","call":1,"type":"404"}]}',
        "field 'faults[0].type': '404' is not one of ['timeout', 'rate_limit', 'server_error', 'empty', "
        "'malformed', 'latency', '429', '5xx', 'slow']",
    ),
    (
        '{"case_id":"a","input":"x","budgets":{"max_steps":-1}}',
        "field 'budgets.max_steps': -1 is less than the minimum of 0",
    ),
    (
        '{"case_id":"a","input":"x","allowed_tools":["a"],"expected_steps":["b"]}',
        "field 'expected_steps[0]': 'b' is expected but not in allowed_tools",
    ),
    (
        '{"case_id":"a","input":"x","forbidden_actions":["a"],"expected_steps":["a"]}',
        "field 'expected_steps[0]': 'a' is expected but also in forbidden_actions",
    ),
    (
        '{"case_id":"a","input":"x","tool_schemas":{"t":{"type":"nope"}}}',
        "field 'tool_schemas.t': not a valid JSON Schema: 'nope' is not valid under any of the given schemas",
    ),
    (
        '{"case_id":"a","input":"x","success_criteria":{"regex":"("}}',
        "field 'success_criteria.regex': invalid regular expression '(': "
        "missing ), unterminated subpattern at position 0",
    ),
    (
        '{"case_id":"a","input":"x","budgets":{"max_stpes":3}}',
        "field 'budgets.max_stpes': unknown field (did you mean 'max_steps'?)",
    ),
    (
        '{"case_id":"a","input":"x","retry_policy":{"loop_repeats":0}}',
        "field 'retry_policy.loop_repeats': 0 is less than the minimum of 1",
    ),
    (
        '{"case_id":"a","input":"x","tool_effects":{"t":"delete"}}',
        "field 'tool_effects.t': 'delete' is not one of ['read', 'write', 'irreversible']",
    ),
    (
        '{"case_id":"a","input":"x","injections":[{"tool":"t","goal":{"leak":""}}]}',
        "field 'injections[0].goal.leak': '' should be non-empty",
    ),
    (
        '{"case_id":"a","input":"x","injections":[{"tool":"t","goal":5}]}',
        "field 'injections[0].goal': "
        'must be a tool name, {"tool": name, "args": {...}} or {"leak": text, "to": [tools]}',
    ),
    (
        '{"case_id":"a","input":"x","injections":[{"tool":"t"}]}',
        "field 'injections[0].goal': required field is missing",
    ),
    (
        '{"case_id":"a","input":"x","match":{"overrides":{"t":{"compare":"m:f","keys":["a"]}}}}',
        "field 'match.overrides.t': 'compare' replaces the argument rule; drop 'args' and 'keys'",
    ),
    (
        '{"case_id":"a","input":"x","success_criteria":{"checker":"not a reference"}}',
        "field 'success_criteria.checker': 'not a reference' does not match '^[A-Za-z_][\\\\w.]*:[A-Za-z_]\\\\w*$'",
    ),
    ("[1, 2]", "a case must be a JSON object, got an array"),
    ('{"case_id":"a","input":"x",}', "invalid JSON: Expecting property name enclosed in double quotes (column 28)"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_bad_line_gets_one_line_error_naming_file_line_and_field(write_tasks, line: str, message: str) -> None:
    assert error_of(write_tasks("# header", "", line)) == f"tasks.jsonl:3: {message}"


def test_unknown_top_level_field_lists_the_known_ones(write_tasks) -> None:
    message = error_of(write_tasks('{"case_id":"a","input":"x","zzz":1}'))
    assert message.startswith("tasks.jsonl:1: field 'zzz': unknown field; known: case_id, input, expected_steps")


def test_duplicate_case_id_names_both_lines(write_tasks) -> None:
    path = write_tasks('{"case_id":"a","input":"x"}', "# other", '{"case_id":"a","input":"y"}')
    assert error_of(path) == "tasks.jsonl:3: field 'case_id': duplicate 'a' (first on line 1)"


def test_invalid_utf8_names_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("tasks.jsonl").write_bytes(b'{"case_id":"a","input":"x"}\n{"case_id":"b","input":"\xff"}\n')
    # `{"case_id":"b","input":"` is 24 bytes, so the bad byte is the 25th of the line
    assert error_of("tasks.jsonl") == "tasks.jsonl:2: not valid UTF-8 (byte 25)"


def test_file_with_no_cases_is_an_error(write_tasks) -> None:
    assert (
        error_of(write_tasks("# nothing here", "")) == "tasks.jsonl: no cases found (one JSON object per line expected)"
    )


def test_missing_file_is_a_task_file_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert error_of("nope.jsonl") == "nope.jsonl: cannot read the task file: No such file or directory"


def test_case_from_dict_validates_too() -> None:
    with pytest.raises(TaskFileError) as info:
        case_from_dict({"case_id": "a", "input": "x", "requires_confirmation": "yes"})
    assert str(info.value) == "<case>: field 'requires_confirmation': 'yes' is not of type 'boolean'"
    assert info.value.field == "requires_confirmation"
    assert case_from_dict({"case_id": "a", "input": "x"}).allowed_tools is None


def test_rich_fields_reach_the_case(write_tasks) -> None:
    case = {
        "case_id": "rich",
        "input": "x",
        "success_criteria": {"must_not_include": ["error"], "regex": "ord_\\d+", "checker": "m:f"},
        "budgets": {"max_tokens": 10, "max_tool_calls_per_tool": {"t": 1}},
        "tool_effects": {"t": "irreversible"},
        "retry_policy": {"loop_repeats": 5, "require_idempotency_key": False, "min_backoff_ms": 250},
        "injections": [{"tool": "t", "goal": {"leak": "s3cret", "to": ["send"]}}],
        "match": {"overrides": {"t": {"compare": "m:same"}}},
    }
    [loaded] = load_cases(write_tasks(json.dumps(case)))
    assert (loaded.must_not_include, loaded.regex, loaded.checker) == (("error",), ("ord_\\d+",), "m:f")
    assert dict(loaded.budgets) == {"max_tokens": 10, "max_tool_calls_per_tool": {"t": 1}}
    assert dict(loaded.tool_effects) == {"t": "irreversible"}
    assert (loaded.loop_repeats, loaded.require_idempotency_key, loaded.min_backoff_ms) == (5, False, 250.0)
    assert loaded.injections[0]["goal"] == {"leak": "s3cret", "to": ["send"]}
    assert loaded.is_task


@pytest.mark.parametrize(
    ("a", "b"),
    [("Refund order 42", "  refund   ORDER 42\n"), ("Ｒefund", "refund"), ("", None)],
)
def test_inputs_compare_normalised(a: str, b: str | None) -> None:
    from tracevals.model.tasks import normalize_input

    assert normalize_input(a) == normalize_input(b)


def test_task_files_and_fault_profiles_speak_one_fault_vocabulary(write_tasks, tmp_path: Path) -> None:
    from tracevals.harness.faults import load_fault_profile, parse_rule
    from tracevals.model.faults import FAULT_ALIASES, FAULT_RULE_KEYS, FAULT_TYPES

    rule_schema = task_case_schema()["properties"]["faults"]["items"]
    assert set(rule_schema["properties"]) == FAULT_RULE_KEYS
    assert set(rule_schema["properties"]["type"]["enum"]) == {*FAULT_TYPES, *FAULT_ALIASES}
    rules = [{"tool": "get_orders", "call": 1, "type": name} for name in (*FAULT_TYPES, *FAULT_ALIASES)] + [
        {"tool": "*", "probability": 0.25, "type": "slow", "latency_ms": 3, "retry_after_ms": 5, "id": "p"}
    ]
    path = write_tasks(json.dumps({"case_id": "a", "input": "q", "faults": rules}))
    (case,) = load_cases(path)
    profile = tmp_path / "faults.yaml"
    profile.write_text("faults:\n" + "".join(f"  - {json.dumps(r)}\n" for r in rules))
    # the same rules read the same from a task file and from a profile, aliases as their canonical names
    from_case = [parse_rule(r) for r in case.raw["faults"]]
    assert from_case == load_fault_profile(profile)
    assert [r.type for r in from_case[: len(FAULT_TYPES) + len(FAULT_ALIASES)]] == [
        *FAULT_TYPES, *(FAULT_ALIASES[a] for a in FAULT_ALIASES)
    ]  # fmt: skip
    for bad, message in (
        ({"tool": "x", "type": "429"}, "field 'faults[0]': give exactly one of 'call' (an index) or 'probability'"),
        ({"tool": "x", "call": 1, "probability": 0.5, "type": "429"}, "give exactly one of 'call'"),
        ({"tool": "x", "call": 1, "type": "ratelimit"}, "field 'faults[0].type': 'ratelimit' is not one of"),
    ):
        with pytest.raises(TaskFileError, match=re.escape(message)):
            load_cases(write_tasks(json.dumps({"case_id": "a", "input": "q", "faults": [bad]})))


def test_a_json_array_or_a_yaml_list_of_cases_reads_as_json_lines_do(tmp_path: Path) -> None:
    """Most tools keep a dataset as one JSON array or a YAML list: `--tasks cases.json` said "a case must be a
    JSON object, got an array", `cases.yaml` "invalid JSON". Both read now, case for case as the same cases in
    JSON Lines, and an error names the line its case starts on; a kept copy (named otherwise) reads the same."""
    import yaml

    cases = [
        {"case_id": "t1", "input": "refund order 42", "expected_steps": [{"tool": "refund", "args": {"order": 42}}]},
        {"case_id": "t2", "input": "¿dónde está?", "success_criteria": {"must_include": ["42"]}},
    ]
    files = {
        "cases.jsonl": "# a comment\n" + "\n".join(json.dumps(c) for c in cases) + "\n",
        "cases.json": json.dumps(cases, indent=2, ensure_ascii=False),
        "cases.yaml": "# the same cases\n" + yaml.safe_dump(cases, allow_unicode=True, sort_keys=False),
        "kept copy (yaml)": yaml.safe_dump(cases, sort_keys=False),
    }
    read = {}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        read[name] = [(c.case_id, c.input, c.expected_steps, c.raw) for c in load_cases(tmp_path / name)]
    assert len({json.dumps(v, default=repr) for v in read.values()}) == 1, read

    broken = [cases[0], {**cases[1], "max_retries": -1}]
    (tmp_path / "bad.json").write_text(json.dumps(broken, indent=2))
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(broken, sort_keys=False))
    with pytest.raises(TaskFileError, match=r"bad\.json:14: field 'max_retries': -1 is less than the minimum of 0"):
        load_cases(tmp_path / "bad.json")
    with pytest.raises(TaskFileError, match=r"bad\.yaml:7: field 'max_retries'"):
        load_cases(tmp_path / "bad.yaml")
    (tmp_path / "not.yaml").write_text("cases: [1\n")
    with pytest.raises(TaskFileError, match=r"not\.yaml:2: not valid YAML: "):
        load_cases(tmp_path / "not.yaml")
    (tmp_path / "map.yaml").write_text("case_id: t1\ninput: x\n")
    with pytest.raises(TaskFileError, match=r"map\.yaml: not a task file: one JSON object per line"):
        load_cases(tmp_path / "map.yaml")
