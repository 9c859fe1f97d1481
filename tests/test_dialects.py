"""The conformance test every dialect declaration runs (tracevals/spans/dialects/): a new declaration is
checked here with no test of its own to write.

For each declaration: it is well formed (known columns and kinds, patterns that compile, a module docstring);
a span with its keys is labelled with it; each kind clause gives its kind; each column key fills its column,
placeholders never do; both writers' paths (the collector's columnar path and the reference conversion) read
every one of those spans alike; each message attribute it declares yields the message through the views; and the
views' generated SQL holds its part shapes and placeholders."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fixtures.recording import TRACE, doc, span

from tracevals.collector.conversion import columnar
from tracevals.collector.conversion import rows as python_path
from tracevals.collector.otlp_json import parse_json_traces
from tracevals.queries import open_lake
from tracevals.queries.catalog import query_sql, view_sql
from tracevals.spans import reading
from tracevals.spans.declare import NAME, By, Dialect, Key, key_of
from tracevals.spans.dialects import DIALECTS
from tracevals.spans.normalize import CANONICAL, NORMALIZER_VERSION, _int, normalize

KINDS = {"llm", "tool", "agent", "chain", "handoff", "session_end", "other"}
NAMED = [pytest.param(d, id=d.name) for d in DIALECTS]
TOOL = {"gen_ai.operation.name": "execute_tool"}


@pytest.mark.parametrize("dialect", NAMED)
def test_a_declaration_is_well_formed(dialect: Dialect) -> None:
    assert [d.name for d in DIALECTS].count(dialect.name) == 1 and dialect.about
    assert set(dialect.columns) | set(dialect.tool_columns) <= set(CANONICAL)
    for clause in dialect.kind:
        assert {clause.kind, *(clause.values or {}).values()} <= KINDS and clause.otherwise in (*KINDS, None)
    for key in (key_of(k) for ks in (*dialect.columns.values(), *dialect.tool_columns.values()) for k in ks):
        for pattern in (key.pattern, key.regex):
            if pattern is not None:
                re.compile(pattern)
    for pattern in dialect.agent_span_names:
        assert re.compile(pattern).groups >= 1
    for source in dialect.messages:
        assert source.direction in ("input", "output") and all(p.startswith("$") for p in source.paths)
    for rule in dialect.unwrap:
        assert rule.take and (rule.empty is None or rule.empty in rule.keys)
    assert dialect.since <= NORMALIZER_VERSION
    if dialect.name in {m.name for m in _framework_modules()}:
        assert importlib.import_module(f"tracevals.spans.dialects.{dialect.name}").__doc__, "a docstring says what"


def _framework_modules() -> list[Dialect]:
    return [d for d in DIALECTS if Path(importlib.import_module("tracevals.spans.dialects").__file__ or "")
            .with_name(f"{d.name}.py").is_file()]  # fmt: skip


def _recognising(dialect: Dialect, avoid: set[str]) -> dict[str, Any]:
    """Attributes that make a span of this dialect, avoiding keys a clause under test reads."""
    keys = [k for k in dialect.recognise_keys if k not in avoid] or list(dialect.recognise_keys[-1:])
    if keys:
        return {keys[0]: "x"}
    return {f"{dialect.recognise_prefixes[0]}recognised": "x"} if dialect.recognise_prefixes else {}


@pytest.mark.parametrize("dialect", [pytest.param(d, id=d.name) for d in reading.RECOGNISERS])
def test_a_span_with_its_keys_is_of_the_dialect(dialect: Dialect) -> None:
    assert normalize(_recognising(dialect, set()))["dialect"] == dialect.name


def _clause_case(dialect: Dialect, clause: By) -> tuple[dict[str, Any], str, str]:
    """(attributes, span name, kind) a clause decides."""
    value, kind = next(iter((clause.values or {"present": clause.kind}).items()))
    if clause.fold == "json":
        value = json.loads(value)
    earlier = {c.key for c in dialect.kind[: dialect.kind.index(clause)]}
    attrs = {} if dialect.recognises([clause.key]) else _recognising(dialect, earlier | {clause.key})
    name = "span"
    if clause.key == NAME:
        name = value
    else:
        attrs[clause.key] = value
    return attrs, name, kind


def _sample(column: str, key: Key) -> tuple[str, Any, Any]:
    """(attribute key, value as recorded, the column's value) for one candidate key."""
    value: Any = 7 if CANONICAL[column] is _int else f"{column}-value"
    name = key.name + ("sessionId" if key.pattern else "")
    recorded: Any = value
    for step in reversed(key.path):
        recorded = [recorded] if isinstance(step, int) else {step: recorded}
    if key.path:
        recorded = json.dumps(recorded)
    return name, recorded, value


def _cases() -> list[Any]:
    cases = []
    for dialect in DIALECTS:
        for i, clause in enumerate(dialect.kind):
            attrs, name, kind = _clause_case(dialect, clause)
            cases.append(pytest.param(attrs, name, {"kind": kind}, id=f"{dialect.name}-kind-{i}"))
        for tool, columns in ((False, dialect.columns), (True, dialect.tool_columns)):
            for column, keys in columns.items():
                for key in (key_of(k) for k in keys):
                    if key.regex is not None:
                        continue  # a regular expression's example is the recording's (tests/corpus)
                    name, recorded, value = _sample(column, key)  # a column reads its keys on a span of any dialect
                    attrs = {**(TOOL if tool else {}), name: recorded}
                    expected = {column: value, "tool_name": "t"} if tool and column != "tool_name" else {column: value}
                    attrs = {**attrs, **({"gen_ai.tool.name": "t"} if tool and column != "tool_name" else {})}
                    span_name = "span"
                    if key.on_names is not None:  # read on the names it matches (its text is one), on no other
                        span_name = key.on_names
                        assert re.match(key.on_names, span_name), f"{dialect.name}: name an example of {key.on_names}"
                        unread = {**expected, column: "span" if column == "tool_name" else None}  # else its name
                        cases.append(
                            pytest.param(attrs, "span", unread, id=f"{dialect.name}-{column}-{name}-elsewhere")
                        )
                    cases.append(pytest.param(attrs, span_name, expected, id=f"{dialect.name}-{column}-{name}"))
    for placeholder in (*sorted(reading.PLACEHOLDERS), *(p + "x" for p in reading.PLACEHOLDER_PREFIXES)):
        attrs = {"session.id": placeholder, **TOOL, "gen_ai.tool.name": "t", "gen_ai.tool.call.id": placeholder,
                 "gen_ai.tool.call.arguments": placeholder, "gen_ai.tool.call.result": placeholder}  # fmt: skip
        expected = {"session_id": None, "tool_call_id": None, "tool_args": None, "tool_result": None}
        cases.append(pytest.param(attrs, "span", expected, id=f"placeholder-{placeholder}"))
    return cases


CASES = _cases()


@pytest.mark.parametrize(("attrs", "name", "expected"), CASES)
def test_every_clause_and_key_is_read(attrs: dict[str, Any], name: str, expected: dict[str, Any]) -> None:
    columns = normalize(attrs, name)
    assert {k: columns[k] for k in expected} == expected


def test_both_paths_read_every_declared_clause_and_key_alike() -> None:
    spans = [span(f"{i + 1:016x}", None, p.values[1], p.values[0], 1000 + i) for i, p in enumerate(CASES)]
    request = parse_json_traces(doc(spans))
    expected = python_path.spans_table(request)
    assert columnar.spans_table(request).equals(expected)
    assert expected.num_rows == len(CASES) and set(expected["normalizer_version"].to_pylist()) == {NORMALIZER_VERSION}


def _at(path: str, value: Any) -> Any:
    """`value` placed at a JSON path like `$`, `$.messages`, `$.choices[0].message`."""
    steps = re.findall(r"\.(\w+)|\[(\d+)\]", path)
    for field, index in reversed(steps):
        value = [value] if index else {field: value}
    return value


def test_every_declared_message_attribute_is_read_by_the_views(tmp_path: Path) -> None:
    spans, wanted = [], {}
    for i, source in enumerate(reading.MESSAGES):
        text = f"message {i}"
        role = "user" if source.direction == "input" else "assistant"
        message = {"role": role, "content": text}
        value = _at(source.paths[0], message if source.paths[0] != "$" or source.on == "agent" else [message])
        if source.tool_calls is not None:  # the answer's text, beside the calls it asked for
            value = text
        trace = f"{i + 1:032x}"
        chat = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 1}
        if source.on == "llm":
            spans.append(span("1" * 16, None, "chat", {**chat, source.key: value}, 1000, trace=trace))
        else:
            agent = {"gen_ai.operation.name": "invoke_agent", source.key: value}
            spans.append(span("2" * 16, None, "invoke_agent a", agent, 900, trace=trace))
            spans.append(span("1" * 16, "2" * 16, "chat", chat, 1000, trace=trace))
        wanted[trace] = (source.direction, text)
    lake = tmp_path / "lake"
    from fixtures.otlp_lakes import ingest_doc

    ingest_doc(lake, doc(spans))
    read = (
        open_lake(lake)
        .sql("SELECT trace_id, direction, content FROM message_parts WHERE part_type = 'text'")
        .fetchall()
    )
    assert {t: (d, c) for t, d, c in read} == wanted
    assert TRACE  # the helpers' default trace is not used here: each source has its own


def test_the_views_hold_every_declared_shape_and_placeholder() -> None:
    rendered = "\n".join(sql for _, sql in view_sql())
    assert "/*@" not in rendered
    for dialect in DIALECTS:
        parts = dialect.parts
        for literal in (*parts.call_types, *parts.result_types, *parts.args, *parts.results, *parts.ids, *parts.names):
            assert f"'{literal}'" in rendered, (dialect.name, literal)
        for key in (*parts.call_objects, *parts.result_objects, *parts.call_keys):
            assert f"'$.{key}'" in rendered, (dialect.name, key)
        for source in dialect.messages:
            assert f'$."{source.key}"' in rendered, (dialect.name, source.key)
        if dialect.error_results:  # the turns view reads its failed tools' messages
            assert f"'{dialect.name}'" in rendered, dialect.name
        for key in (*dialect.agent_inputs, *dialect.agent_outputs):  # a turn's texts where no model call has them
            assert f'$."{key}"' in rendered and f'$."{key}"' in query_sql("batch_traces"), (dialect.name, key)
    for placeholder in (*reading.PLACEHOLDERS, *reading.PLACEHOLDER_PREFIXES):
        assert "'" + placeholder.replace("'", "''") + "'" in rendered


REPRS = [
    str({"city": "Paris", "time": "14:00", "dst": True, "rain": None, "wind": [1, -2.5, 3e20], "ok": False}),
    str([{"a": {}}, [], {"b": [None]}]),
    "{'True': 'None of it, False', 'n': 0}",  # a word inside a string stays the string's
    "{'a': 1,}",  # a trailing comma (JSON parsers differ on it): as it is
    "[NaN]",
    "[1, Infinity]",
    "{'a': 'it\\'s'}",
    """{"a": "it's"}""",
    "{'a': (1, 2)}",
    "{1, 2}",
    "{'a': b'x'}",
    "{'a': 'line\none'}",  # a control character inside a string: as it is
    "{'a':\n  1}",
    "{'a': datetime.date(2020, 1, 1)}",
    "{'a': 1",
    "['unbalanced]",
    "{'a': 01}",
    "{'é': 'ü', 'x': éTrue}",
    "['a' 'b']",
    "[True]x",
    "Paris",
    "",
    '{"already": "json"}',
    "[1, 2]",
    "[" * 100_000 + "]" * 100_000,  # nested past what Python's parser recurses into: as it is
]


def test_a_python_repr_is_read_alike_by_the_rule_and_the_views() -> None:
    """`rules.python_literal` and its SQL (`/*@ python_literal(expr) @*/`, read by the turns view) give the same
    value for every text, a repr or not: a dict or list's value, else the text as it is."""
    import duckdb

    from tracevals.spans.rules import python_literal, unwrap
    from tracevals.spans.views import python_literal as python_literal_sql

    read = duckdb.connect().execute(
        f"SELECT i, {python_literal_sql('r')} FROM unnest(?) WITH ORDINALITY AS t(r, i) ORDER BY i", [REPRS]
    )
    by_sql = [text for _, text in read.fetchall()]
    by_python = [python_literal(r) for r in REPRS]
    # the same text where the rule declines, the same value where it reads one
    assert [s if isinstance(r, str) else json.loads(s) for r, s in zip(by_python, by_sql, strict=True)] == by_python
    assert by_python[0] == {"city": "Paris", "time": "14:00", "dst": True, "rain": None, "wind": [1, -2.5, 3e20],
                            "ok": False}  # fmt: skip
    assert by_python[2] == {"True": "None of it, False", "n": 0} and by_python[12] == {"a": 1}
    assert [i for i, r in enumerate(by_python) if not isinstance(r, str)] == [0, 1, 2, 12, 23]
    assert unwrap(REPRS[-1]) == REPRS[-1]  # a tool's value so nested is kept as recorded, not a crash


ANSWERS = [
    ("Error: ValueError: unknown city: Atlantis", True),  # a hand-written loop's
    ("Error executing tool get_weather", True),  # MCP's
    ("error: timed out", True),
    ("ERROR", True),
    ("Exception: boom", True),
    ("ValueError: unknown city", True),  # an exception class at the start
    ("requests.exceptions.ConnectionError: refused", True),
    ("<class 'TimeoutError'>", True),
    ('{"error": "rate limited"}', True),
    ('{"error": {"code": 429}}', True),
    ('{"error": null}', False),  # no error in it
    ('{"error": "x", "partial": [1]}', False),  # a result that carries an error among other things
    ("Errors found: 0", False),  # a word that only starts like it
    ("ErrorBudget: 2", False),
    ("No error: all good", False),
    ('{"city": "Paris", "temp_c": 21}', False),
    ("sunny, 21 C", False),
    ("", False),
]


def test_a_failed_answer_is_read_alike_by_the_rule_and_the_views() -> None:
    """`rules.answer_failed` and its SQL (`/*@ answer_failed(expr) @*/`, read by the steps view) agree on whether a
    tool message says its call failed; `answer_error_type` names the class the text starts with, else `_OTHER`."""
    import duckdb

    from tracevals.spans.rules import answer_failed
    from tracevals.spans.views import answer_error_type
    from tracevals.spans.views import answer_failed as answer_failed_sql

    texts = [t for t, _ in ANSWERS]
    read = duckdb.connect().execute(
        f"SELECT i, {answer_failed_sql('r')}, {answer_error_type('r')} FROM unnest(?) WITH ORDINALITY AS t(r, i) "
        "ORDER BY i",
        [texts],
    )
    rows = read.fetchall()
    assert [bool(failed) for _, failed, _ in rows] == [answer_failed(t) for t in texts] == [f for _, f in ANSWERS]
    types = {t: kind for (t, f), (_, _, kind) in zip(ANSWERS, rows, strict=True) if f}
    assert types["ValueError: unknown city"] == "ValueError" and types["<class 'TimeoutError'>"] == "TimeoutError"
    assert types["requests.exceptions.ConnectionError: refused"] == "ConnectionError"
    assert types["Error: ValueError: unknown city: Atlantis"] == "_OTHER" == types['{"error": "rate limited"}']
