"""Task cases: load a task file (JSON Lines; or one JSON array of cases, or a YAML list) into `Case` objects,
validated by the JSON Schema that ships with tracevals (`tracevals/schemas/task_case.schema.json`, assembled
from the evaluators' declared options by `tracevals.evaluators.options`) plus the options of evaluator plugins
(`tracevals.model.options`).

One case a line; blank lines and lines starting with `#` are skipped (a JSON array or a YAML list: each item a
case, its line the one it starts on). A bad file raises `TaskFileError`
whose message is one line naming the file, the line, the field and what is wrong::

    tasks.jsonl:7: field 'max_retries': -1 is less than the minimum of 0

Example::

    cases = load_cases("tasks.jsonl")
    cases[0].expected_steps  # (ExpectedCall(tool='search_customer', args=None), ...)
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracevals.model.case import Case, ExpectedCall
from tracevals.model.errors import UserError
from tracevals.model.json_text import TooDeep
from tracevals.model.json_text import loads as json_loads
from tracevals.model.options import extra_options, options_version
from tracevals.model.trajectory import HANDOFF_TOOL

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

SCHEMA_PATH = Path(__file__).parent.parent / "schemas" / "task_case.schema.json"
_MAX_MESSAGE = 160


class TaskFileError(UserError, ValueError):
    """A task file (or one case in it) is not valid; `str()` is one line: `file:line: field 'x': what`."""

    def __init__(self, source: str, line: int | None, message: str, field: str | None = None) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        what = self.message if self.field is None else f"field '{self.field}': {self.message}"
        return f"{where}: {what}"


@cache
def shipped_schema() -> dict[str, Any]:
    """The schema file that ships: the core fields and the built-in evaluators' options."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def task_case_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one task case: the shipped one plus the plugins' options."""
    return _assembled(*_registry_state())


def _registry_state() -> tuple[int, tuple[str, ...]]:
    """The options registry's state, which keys every cache of the schema (assembled, digest, validator)."""
    extra = extra_options()  # first: discovers the plugins, which may register options
    return options_version(), tuple(sorted(extra))


@cache
def _assembled(_version: int, _names: tuple[str, ...]) -> dict[str, Any]:
    """The schema at one state of the options registry (the arguments key the cache)."""
    schema: dict[str, Any] = json.loads(json.dumps(shipped_schema()))  # a deep copy: the shipped one stays
    for name, (owner, option) in extra_options().items():
        schema["properties"][name] = option.property_schema(owner)
    return schema


def schema_digest() -> str:
    """The sha256 of the schema cases are validated against now (the plugins' options included): a kept
    task file stamped with it was valid under this very schema (`lake.run_cases`)."""
    return _digest_at(*_registry_state())


@cache
def _digest_at(version: int, names: tuple[str, ...]) -> str:
    text = json.dumps(_assembled(version, names), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _validator() -> Draft202012Validator:
    return _validator_at(*_registry_state())


@cache
def _validator_at(version: int, names: tuple[str, ...]) -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # imported when a task file is read, not by every command

    return Draft202012Validator(_assembled(version, names))


def load_cases(path: str | os.PathLike[str]) -> list[Case]:
    """Read a JSONL task file; raises `TaskFileError` (one line: file, line, field, problem)."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TaskFileError(source, None, f"cannot read the task file: {exc.strerror or exc}") from None
    return cases_from_bytes(data, source)


def cases_from_bytes(data: bytes, source: str, *, schema_checked: bool = False) -> list[Case]:
    """The cases of a task file's content (JSONL), validated as `load_cases` does; `source` names it in errors.

    schema_checked: these very bytes passed the schema `schema_digest` names (a kept task file whose stamp
    says so): the JSON Schema is not run again (its import and compilation are a visible part of a small
    `report`); every other check is."""
    cases: list[Case] = []
    first_seen: dict[str, int] = {}
    for lineno, obj in _items(data, source):
        case = case_from_dict(obj, source=source, line=lineno, schema_checked=schema_checked)
        if case.case_id in first_seen:
            raise TaskFileError(
                source,
                lineno,
                f"duplicate {case.case_id!r} (first on line {first_seen[case.case_id]})",
                field="case_id",
            )
        first_seen[case.case_id] = lineno
        cases.append(case)
    if not cases:
        raise TaskFileError(source, None, "no cases found (one JSON object per line expected)")
    return cases


def _items(data: bytes, source: str) -> Iterable[tuple[int, Any]]:
    """(line, parsed case) of each case of a task file: JSON Lines, or one JSON array of cases (a `.json` file
    as most tools write a dataset), or a YAML list of cases. Told apart by the name (`.jsonl`, `.yaml`,
    `.yml`), else by the content: `[` first is an array, `{` first JSON Lines, anything else YAML."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark left by Windows editors
    except UnicodeDecodeError as exc:
        line, start = data.count(b"\n", 0, exc.start) + 1, data.rfind(b"\n", 0, exc.start) + 1
        raise TaskFileError(source, line, f"not valid UTF-8 (byte {exc.start - start + 1})") from None
    name = source.lower()
    lines = (line.strip().removeprefix("\ufeff") for line in text.splitlines())
    first = next((line[:1] for line in lines if line and not line.startswith("#")), "")
    if name.endswith(".jsonl") or (first == "{" and not name.endswith((".yaml", ".yml"))) or not first:
        return _json_lines(text, source)
    if first == "[" and not name.endswith((".yaml", ".yml")):
        return _json_array_items(text, source)
    return _yaml_items(text, source)


def _json_lines(text: str, source: str) -> Iterable[tuple[int, Any]]:
    for lineno, raw_line in enumerate(text.split("\n"), start=1):
        line = raw_line.strip().removeprefix("\ufeff")  # files joined together: each may start with one
        if not line or line.startswith("#"):
            continue
        try:
            yield lineno, json_loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFileError(source, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        except TooDeep as exc:
            raise TaskFileError(source, lineno, f"invalid JSON: {exc}") from None


def _json_array_items(text: str, source: str) -> list[tuple[int, Any]]:
    """The items of one JSON array, each with the line it starts on."""
    try:
        items = json_loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(source, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except TooDeep as exc:
        raise TaskFileError(source, None, f"invalid JSON: {exc}") from None
    if not isinstance(items, list):  # `[...] {...}` and the like: JSON Lines after all
        raise TaskFileError(source, None, "a task file is one JSON object per line, or one JSON array of them")
    decoder, lines, at = json.JSONDecoder(), [], text.index("[") + 1
    for _ in items:  # where each item starts: the array parsed once more, item by item (it is valid JSON)
        while text[at] in " \t\r\n,":
            at += 1
        lines.append(text.count("\n", 0, at) + 1)
        at = decoder.raw_decode(text, at)[1]
    return list(zip(lines, items, strict=True))


def _yaml_items(text: str, source: str) -> list[tuple[int, Any]]:
    """The items of a YAML list of cases, each with the line it starts on."""
    import yaml  # a dependency; imported for a YAML task file only

    from tracevals.model.documents import YamlProblem, load_yaml

    try:
        items = load_yaml(text)
    except YamlProblem as exc:
        raise TaskFileError(source, exc.line, f"not valid YAML: {exc}") from None
    node = yaml.compose(text, Loader=yaml.SafeLoader)  # read already: where each item starts
    if not isinstance(items, list) or not isinstance(node, yaml.SequenceNode):
        raise TaskFileError(
            source, None, "not a task file: one JSON object per line, a JSON array of them, or a YAML list of cases"
        )
    return [(item.start_mark.line + 1, value) for item, value in zip(node.value, items, strict=True)]


def case_from_dict(obj: Any, source: str = "<case>", line: int | None = None, *, schema_checked: bool = False) -> Case:
    """Validate one case (already parsed from JSON) and build its `Case`; the dict is kept in `Case.raw`.
    schema_checked: as `cases_from_bytes`'s."""
    if not isinstance(obj, dict):
        raise TaskFileError(source, line, f"a case must be a JSON object, got {_json_type(obj)}")
    problem = (None if schema_checked else _schema_problem(obj)) or _consistency_problem(obj)
    if problem is not None:
        field, message = problem
        raise TaskFileError(source, line, message, field=field)
    return build_case(obj)


def build_case(obj: Mapping[str, Any], source: str = "task") -> Case:
    """The `Case` of an already validated case (or scoring-config) dict; the dict is kept in `Case.raw`."""
    match = obj.get("match", {})
    allowed = obj.get("allowed_tools")
    criteria = obj.get("success_criteria", {})
    regex = criteria.get("regex", [])
    retry = obj.get("retry_policy", {})
    prices = obj.get("prices", {})
    return Case(
        case_id=obj.get("case_id", ""),
        input=obj.get("input", ""),
        allowed_tools=None if allowed is None else tuple(allowed),
        expected_steps=tuple(_expected_call(step) for step in obj.get("expected_steps", [])),
        forbidden_actions=tuple(obj.get("forbidden_actions", [])),
        max_retries=obj.get("max_retries"),
        requires_confirmation=obj.get("requires_confirmation", False),
        must_include=tuple(criteria.get("must_include", [])),
        match_mode=match.get("mode", "strict"),
        args_mode=match.get("args", "ignore"),
        group=obj.get("group"),
        raw=dict(obj),
        must_not_include=tuple(criteria.get("must_not_include", [])),
        regex=(regex,) if isinstance(regex, str) else tuple(regex),
        json_schema=criteria.get("json_schema"),
        checker=criteria.get("checker"),
        budgets=dict(obj.get("budgets", {})),
        tool_schemas=dict(obj.get("tool_schemas", {})),
        tool_effects=dict(obj.get("tool_effects", {})),
        loop_repeats=retry.get("loop_repeats", 3),
        require_idempotency_key=retry.get("require_idempotency_key"),
        min_backoff_ms=float(retry.get("min_backoff_ms", 0)),
        faults=tuple(obj.get("faults", [])),
        injections=tuple(obj.get("injections", [])),
        prices={m: (float(p["input"]), float(p["output"])) for m, p in prices.items()},
        source=source,
        steps_given="expected_steps" in obj,
    )


def normalize_input(text: str | None) -> str:
    """The form inputs are compared in when a trace carries no task id: Unicode NFKC, case-folded,
    runs of white space as one space, trimmed (so a trailing newline or a capital does not matter)."""
    if not text:
        return ""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _expected_call(step: str | Mapping[str, Any]) -> ExpectedCall:
    if isinstance(step, str):
        return ExpectedCall(tool=step)
    return ExpectedCall(tool=step["tool"], args=step.get("args"))


def _schema_problem(obj: dict[str, Any]) -> tuple[str | None, str] | None:
    return schema_problem(_validator(), obj)


def schema_problem(validator: Draft202012Validator, obj: Any) -> tuple[str | None, str] | None:
    """The most relevant error of `obj` under `validator`, as (dotted field path, one-line message)."""
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(obj))
    if error is None:
        return None
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in known)
        if unknown:
            hint = difflib.get_close_matches(unknown[0], known, n=1)
            message = "unknown field" + (f" (did you mean '{hint[0]}'?)" if hint else "")
            if known and not hint:
                message += f"; known: {', '.join(known)}"
            return _field_path([*path, unknown[0]]), message
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        return _field_path([*path, missing[0]]), "required field is missing"
    if error.validator == "oneOf" and path and path[0] == "expected_steps":
        return _field_path(path), 'must be a tool name or {"tool": name, "args": {...}}'
    if error.validator == "oneOf" and len(path) == 2 and path[0] == "faults":  # as a --faults profile says it
        return _field_path(path), "give exactly one of 'call' (an index) or 'probability'"
    if error.validator == "oneOf" and path and path[-1] == "goal":
        return _field_path(path), 'must be a tool name, {"tool": name, "args": {...}} or {"leak": text, "to": [tools]}'
    return _field_path(path), _shorten(error.message)


def _consistency_problem(obj: dict[str, Any]) -> tuple[str | None, str] | None:
    """What the schema cannot say: steps that contradict the tool lists, schemas and patterns that don't compile."""
    allowed = obj.get("allowed_tools")
    forbidden = set(obj.get("forbidden_actions", []))
    for i, step in enumerate(obj.get("expected_steps", [])):
        tool = step if isinstance(step, str) else step["tool"]
        if tool in forbidden:
            return f"expected_steps[{i}]", f"{tool!r} is expected but also in forbidden_actions"
        if allowed is not None and tool not in allowed and tool != HANDOFF_TOOL:
            return f"expected_steps[{i}]", f"{tool!r} is expected but not in allowed_tools"
    schemas = {f"tool_schemas.{tool}": s for tool, s in obj.get("tool_schemas", {}).items()}
    criteria = obj.get("success_criteria", {})
    if "json_schema" in criteria:
        schemas["success_criteria.json_schema"] = criteria["json_schema"]
    if schemas:  # imported for a case that has some (jsonschema's import is a visible part of a small report)
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError
    for field, schema in schemas.items():
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            return field, f"not a valid JSON Schema: {_shorten(exc.message)}"
    for tool, override in obj.get("match", {}).get("overrides", {}).items():
        if isinstance(override, dict) and "compare" in override and ("args" in override or "keys" in override):
            return f"match.overrides.{tool}", "'compare' replaces the argument rule; drop 'args' and 'keys'"
    patterns = criteria.get("regex", [])
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            return "success_criteria.regex", f"invalid regular expression {pattern!r}: {exc}"
    return None


def _field_path(path: Iterable[str | int]) -> str | None:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or None


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _shorten(message: str) -> str:
    message = " ".join(message.split())
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."
