"""A tool's result recorded as the str() of a result object (a Pydantic model's `name=value` pairs), and a
failure that only its output says: found recording Agno under OpenLLMetry's instrumentation
(tests/corpus/agno/openllmetry*), whose tool spans say OK for a tool that raised and record the result as
`status='failure' result=None error='unknown city: Atlantis' updated_session_state=None ...`.

The generic rule reads such text as its fields (`rules.model_fields`) only where a declared wrapper then applies
to them (`Dialect.unwrap`); a declared output (`Dialect.error_outputs`) makes its span a failure. The collector's
columnar path and the reference conversion read both alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fixtures.recording import doc, span

from tracevals.collector.conversion import columnar
from tracevals.collector.conversion import rows as python_path
from tracevals.collector.otlp_json import parse_json_traces
from tracevals.spans import reading
from tracevals.spans.rules import model_fields, says_failed, unwrap

OK = "status='success' result={'city': 'Paris', 'temp_c': 21, 'dst': True} error=None updated_session_state=None"
PARIS = {"city": "Paris", "temp_c": 21, "dst": True}
GENERATOR = "<generator object f.<locals>.g at 0x7f>"
FAILED = "status='failure' result=None error='unknown city: Atlantis' updated_session_state=None images=None"


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        (OK, {"status": "success", "result": PARIS, "error": None, "updated_session_state": None}),
        ("a=1 b='x y=z' c=[1, 2]", {"a": 1, "b": "x y=z", "c": [1, 2]}),  # a space and `=` inside quotes
        ('a=-2.5e3 b="it\'s" c=False', {"a": -2500.0, "b": "it's", "c": False}),
        ("a='one\\'two' b=None", {"a": "one'two", "b": None}),  # an escaped quote
        (f"result={GENERATOR} error=None", {"result": GENERATOR, "error": None}),  # no literal: its text
        ("a={'k': 'v w=x'} b=1", {"a": {"k": "v w=x"}, "b": 1}),  # a space and `=` inside a dict
        ("a=Foo(x=1, y=2) b=2", {"a": "Foo(x=1, y=2)", "b": 2}),  # no literal: its text
        ("x=1", None),  # one field is no object
        ("Paris", None),
        ("sunny, 21 C", None),
        ("a=(1 b=2", None),  # an unbalanced bracket
        ("a='open b=2", None),  # an unbalanced quote
        ("a=1) b=2", None),  # a closing bracket with none open
        ("a=1 a=2", None),  # a field named twice
        (" a=1 b=2", None),  # text before the first field
    ],
)
def test_a_result_object_recorded_as_its_str_is_read_as_its_fields(text: str, fields: dict[str, Any] | None) -> None:
    assert model_fields(text) == fields


def test_a_declared_wrapper_takes_a_result_objects_value_and_other_objects_stay_as_recorded() -> None:
    assert unwrap(OK) == PARIS
    assert unwrap(FAILED) == "unknown city: Atlantis"  # the failure's message, as the model was handed it
    assert unwrap("status='success' result='It is 14:00.' error=None") == "It is 14:00."
    for text in ("a=1 b='x y=z' c=[1, 2]", "status='pending' result=1 error=None", "Paris"):
        assert unwrap(text) == text  # fields no declared wrapper takes: the value as recorded


def _tool(sid: str, output: Any, start: int) -> dict[str, Any]:
    attrs = {"traceloop.span.kind": "tool", "traceloop.entity.name": "get_weather", "traceloop.entity.input": "{}"}
    if output is not None:
        attrs["traceloop.entity.output"] = output
    return span(sid, None, "get_weather.tool", attrs, start)


def test_a_tool_whose_output_says_it_failed_fails_on_both_paths() -> None:
    assert reading.ERROR_OUTPUTS and all(says_failed(k, FAILED) for k in reading.ERROR_OUTPUTS)
    outputs = [FAILED, OK, "status='failure' is a word", 7, None, FAILED.replace("status", "state")]
    spans = [_tool(f"{i + 1:016x}", out, 1000 + i) for i, out in enumerate(outputs)]
    failing = span("f" * 16, None, "get_time.tool", {"traceloop.span.kind": "tool", "traceloop.entity.output": OK},
                   2000, status={"code": 2, "message": "TimeoutError: slow"})  # fmt: skip
    request = parse_json_traces(doc([*spans, failing]))
    expected = python_path.spans_table(request)
    assert columnar.spans_table(request).equals(expected)
    read = dict(zip(expected["span_id"].to_pylist(), expected["error_type"].to_pylist(), strict=True))
    assert [read[f"{i + 1:016x}"] for i in range(len(outputs))] == ["_OTHER", None, None, None, None, None]
    assert read["f" * 16] == "TimeoutError"  # a span whose status failed keeps its own type
    results = dict(zip(expected["span_id"].to_pylist(), expected["tool_result"].to_pylist(), strict=True))
    assert results["0000000000000001"] == "unknown city: Atlantis"
    assert json.loads(results["0000000000000002"]) == PARIS
