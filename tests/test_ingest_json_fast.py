"""`tracevals ingest`'s fast path for OTLP/JSON (`conversion.json_columnar`) against the validating one
(`otlp_json.parse_json_traces` / `parse_json_logs`, then `columnar.spans_table` / `rows.logs_table`, which
`ingest._read` is): on every document the fast path takes, the same span and log rows, value for value, and
in the lake the same rows read back by DuckDB; every document it does not take goes to the validating path,
so a bad file ends in the same one-line error, with nothing written.

Documents: the ADK recordings of the shared corpus (when present), the dialect fixtures, hand-made ones with
every attribute value type, arrays, maps, bytes, events, links, status, enum names, string int64s, missing
optional fields, unicode and ADK's tool spans, keys in lowerCamelCase and snake_case, and generated ones.
"""

from __future__ import annotations

import base64
import copy
import json
import math
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from click.testing import CliRunner
from fixtures.json_docs import INSIDE, rewritten
from fixtures.otlp_lakes import CORPUS, DIALECTS, fixture_doc
from fixtures.plain import comparable
from fixtures.requirements import needing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tracevals.cli import ingest as ingest_cli
from tracevals.cli import main
from tracevals.collector.conversion import columnar, json_columnar
from tracevals.collector.conversion import rows as python_path
from tracevals.collector.otlp_json import OTLPDecodeError, parse_json_traces
from tracevals.spans.rows import MAX_VALUE_BYTES

T1, T2 = "5b8efff798038103d269b633813fc60c", "0af7651916cd43dd8448eb211c80319c"
S1, S2, S3 = "eee19b7ec3c1b174", "b7ad6b7169203331", "00f067aa0ba902b7"


def _slow(body: bytes, tmp_path: Path) -> tuple[pa.Table, pa.Table] | str:
    """The validating path's tables of a document, or its error message."""
    path = tmp_path / "slow.json"
    path.write_bytes(body)
    try:
        spans, logs, _ = ingest_cli._read(path)
    except OTLPDecodeError as exc:
        return str(exc)
    return spans, logs


def _same(body: bytes, tmp_path: Path, taken: bool | None = True) -> None:
    """The fast path's tables of `body` equal the validating path's (when it takes it; `taken` says whether
    it must, None: either way)."""
    (fast,) = json_columnar.tables([body], MAX_VALUE_BYTES)  # the limit `tracevals ingest` reads with
    if taken is not None:
        assert (fast is not None) == taken, "the fast path did not take it" if taken else "it took it"
    if fast is None:
        return
    slow = _slow(body, tmp_path)
    assert not isinstance(slow, str), f"the fast path took a document the validating one refuses: {slow}"
    for got, expected in zip(fast, slow, strict=True):
        assert got.schema == expected.schema
        assert comparable(got) == comparable(expected)


def _encoded(doc: dict[str, Any], indent: int | None = None) -> bytes:
    return json.dumps(doc, indent=indent, ensure_ascii=False).encode()


_INT64_KEYS = ("intValue", "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "observedTimeUnixNano")


def _int64s(node: Any, as_string: bool) -> Any:
    """The document with every int64 written as a string (protobuf's JSON mapping) or as a number (a JS
    exporter): one document mixing the two is left to the validating path (Arrow infers one type a key)."""

    def rule(key: str, value: Any) -> Any:
        if key not in _INT64_KEYS or not isinstance(value, (int, str)) or isinstance(value, bool):
            return INSIDE
        try:
            number = int(value)
        except ValueError:
            return value
        return str(number) if as_string else number

    return rewritten(node, rule)


def _both_ways(doc: dict[str, Any], tmp_path: Path) -> None:
    """`doc` as written (either path), then with its int64s as strings and as numbers, each on one line and
    pretty-printed: the fast path takes those, with the same rows."""
    _same(_encoded(doc), tmp_path, taken=None)
    for as_string in (True, False):
        for indent in (None, 1):
            _same(_encoded(_int64s(doc, as_string), indent), tmp_path)


# ---------------------------------------------------------------- real recordings and fixtures

_RECORDINGS = sorted(p for p in CORPUS.rglob("*.json") if not p.name.endswith(".truth.json")) if CORPUS.is_dir() else []


@pytest.mark.needs("corpus")
@pytest.mark.parametrize("path", needing("corpus", _RECORDINGS, lambda p: str(p.relative_to(CORPUS))))
def test_every_corpus_recording_takes_the_fast_path_with_the_same_rows(path: Path, tmp_path: Path) -> None:
    body = path.read_bytes()  # pretty-printed, as recorded
    _same(body, tmp_path)
    _same(_encoded(json.loads(body)), tmp_path)  # and on one line, as the newline-free documents go


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_dialect_fixtures_give_the_same_rows(dialect: str, tmp_path: Path) -> None:
    _same(_encoded(fixture_doc(dialect)), tmp_path, taken=None)
    _same(_encoded(fixture_doc(dialect), indent=2), tmp_path, taken=None)


@pytest.mark.needs("corpus")
def test_adk_spans_take_the_columnar_path_from_protobuf_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The conversion's columnar path now does Google ADK's framework rule and array, map and bytes values
    under keys the normalizer does not read: ADK spans without events never reach the per-span Python code,
    from OTLP/JSON as from protobuf, and the rows equal the Python path's (`rows.spans_table`)."""
    calls: list[int] = []
    real = columnar.span_row
    monkeypatch.setattr(columnar, "span_row", lambda *a, **k: calls.append(1) or real(*a, **k))
    for path in _RECORDINGS:
        request = parse_json_traces(path.read_bytes())
        events = sum(bool(s.events) for r in request.resource_spans for sc in r.scope_spans for s in sc.spans)
        for limit in (None, 64, 100_000):
            calls.clear()
            payload = request.SerializeToString()
            got = columnar.spans_table_columnar([columnar.decode([payload])], [payload], limit)
            assert comparable(got) == comparable(python_path.spans_table(request, limit)), (path, limit)
            if limit is None:
                assert len(calls) == events, path


# ---------------------------------------------------------------- hand-made documents


def _kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": value}


def _span(trace: str, span: str, name: str, attributes: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    out = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": "1790607510974516740",
        "endTimeUnixNano": "1790607510975130682",
        "attributes": attributes,
    }
    out.update(more)
    return out


def _doc(spans: list[dict[str, Any]], records: list[dict[str, Any]] | None = None, **resource: Any) -> dict[str, Any]:
    attrs = [_kv("service.name", {"stringValue": "shop-agent"}), *resource.get("extra", [])]
    doc: dict[str, Any] = {
        "resourceSpans": [
            {
                "resource": {"attributes": attrs},
                "scopeSpans": [{"scope": {"name": "my.lib", "version": "1.2"}, "spans": spans}],
            }
        ]
    }
    if records is not None:
        doc["resourceLogs"] = [
            {"resource": {"attributes": attrs}, "scopeLogs": [{"scope": {"name": "my.lib"}, "logRecords": records}]}
        ]
    return doc


EVERY_VALUE = [
    _kv("s", {"stringValue": "plain"}),
    _kv("s.empty", {"stringValue": ""}),
    _kv("s.escaped", {"stringValue": 'quote " backslash \\ tab \t newline \n nul \u0000 del \x7f'}),
    _kv("s.unicode", {"stringValue": "café ✓ 😀 \u2028 𝄞"}),
    _kv("s.date", {"stringValue": "2026-12-01T10:00:00Z"}),
    _kv("b.true", {"boolValue": True}),
    _kv("b.false", {"boolValue": False}),
    _kv("i.number", {"intValue": 7}),
    _kv("i.string", {"intValue": "-9223372036854775808"}),
    _kv("i.max", {"intValue": 9223372036854775807}),
    _kv("i.leading.zero", {"intValue": "007"}),
    _kv("d", {"doubleValue": 0.1}),
    _kv("d.int", {"doubleValue": 3}),
    _kv("d.neg.zero", {"doubleValue": -0.0}),
    _kv("d.exp", {"doubleValue": 1.5e300}),
    _kv("d.tiny", {"doubleValue": 5e-324}),
    _kv("bytes", {"bytesValue": base64.b64encode(b"\x00\xffhi").decode()}),
    _kv("bytes.urlsafe.unpadded", {"bytesValue": "_-8"}),
    _kv("array", {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}, {"doubleValue": 2.5}]}}),
    _kv("array.empty", {"arrayValue": {}}),
    _kv("array.nested", {"arrayValue": {"values": [{"arrayValue": {"values": [{"boolValue": True}, {}]}}]}}),
    _kv(
        "map",
        {
            "kvlistValue": {
                "values": [
                    _kv("k", {"stringValue": "v"}),
                    _kv("n", {"kvlistValue": {"values": [_kv("deep", {"arrayValue": {"values": []}})]}}),
                    {"key": "no value"},
                    _kv("bytes", {"bytesValue": "AAE="}),
                ]
            }
        },
    ),
    _kv("map.empty", {"kvlistValue": {"values": []}}),
    _kv("unset", {}),
    _kv("null", None),
    {"key": "no value at all"},
    {"value": {"stringValue": "no key"}},
    _kv('a "quoted" key ✓', {"stringValue": "x"}),
]


def test_every_value_type_reads_the_same(tmp_path: Path) -> None:
    doc = _doc([_span(T1, S1, "chat", EVERY_VALUE)], [{"traceId": T1, "attributes": EVERY_VALUE}])
    _both_ways(doc, tmp_path)


def test_events_links_status_enum_names_and_missing_fields(tmp_path: Path) -> None:
    spans = [
        _span(
            T1,
            S1,
            "execute_tool refund",
            [
                _kv("gen_ai.operation.name", {"stringValue": "execute_tool"}),
                _kv("gen_ai.tool.name", {"stringValue": "r"}),
            ],
            kind=2,
            parentSpanId=S2,
            status={"code": 2, "message": "boom"},
            events=[
                {
                    "name": "exception",
                    "timeUnixNano": "1790607510975000000",
                    "attributes": [_kv("exception.type", {"stringValue": "ValueError"})],
                }
            ],
            links=[{"traceId": T2, "spanId": S3, "attributes": [_kv("l", {"intValue": 1})]}],
            droppedAttributesCount=2,
            flags=256,
            traceState="k=v",
        ),
        {"traceId": T1, "spanId": S2},  # nothing else: no name, times, kind, attributes
        _span(T2.upper(), S3.upper(), "upper-case hex", [], status={"code": 1}, parentSpanId=""),
        _span(T2, S1, "times as numbers", [], startTimeUnixNano=1790607510974516740, endTimeUnixNano=0, kind=9),
        _span(T2, S2, "null fields", [_kv("a", None)], status=None, events=None, parentSpanId=None),
    ]
    records = [
        {
            "timeUnixNano": "1790607510975000000",
            "observedTimeUnixNano": 1790607510975000001,
            "severityNumber": 13,
            "severityText": "WARN",
            "eventName": "gen_ai.choice",
            "body": {"kvlistValue": {"values": [_kv("message", {"stringValue": "hi"})]}},
            "traceId": T1,
            "spanId": S1,
            "flags": 1,
        },
        {"observedTimeUnixNano": "1790607510975000002", "body": {"stringValue": "observed only"}},
        {"body": {}},
        {"body": {"arrayValue": {"values": [{"intValue": 1}]}}, "severityNumber": 9, "spanId": ""},
        {},
    ]
    doc = _doc(
        spans, records, extra=[_kv("deployment", {"kvlistValue": {"values": [_kv("env", {"stringValue": "p"})]}})]
    )
    _both_ways(doc, tmp_path)
    names = {"kind": "SPAN_KIND_CLIENT", "status": {"code": "STATUS_CODE_ERROR", "message": "boom"}}
    spans = [{**span, **names} for span in spans]
    records = [{**record, "severityNumber": "SEVERITY_NUMBER_WARN"} for record in records]
    _both_ways(_doc(spans, records), tmp_path)  # enums by name throughout


def test_adk_tool_spans_and_their_placeholders(tmp_path: Path) -> None:
    """The framework rule, in the columnar path: session, arguments and response filled, placeholders
    dropped, a merged tools span no call."""

    def tool(span: str, name: str, call_id: str, args: Any, response: Any) -> dict[str, Any]:
        attrs = [
            _kv("gen_ai.operation.name", {"stringValue": "execute_tool"}),
            _kv("gen_ai.tool.name", {"stringValue": name}),
            _kv("gen_ai.tool.call.id", {"stringValue": call_id}),
            _kv("gcp.vertex.agent.session_id", {"stringValue": "sess-1"}),
            _kv("gcp.vertex.agent.tool_call_args", args),
        ]
        if response is not ...:
            attrs.append(_kv("gcp.vertex.agent.tool_response", response))
        return _span(T1, span, f"execute_tool {name}", attrs)

    spans = [
        tool(S1, "get_weather", "c1", {"stringValue": '{"city": "Paris"}'}, {"stringValue": '{"result": "sunny"}'}),
        tool(
            S2, "get_time", "<not specified>", {"stringValue": "N/A"}, {"stringValue": '{"result": "<not specified>"}'}
        ),
        tool(S3, "(merged tools)", "<not specified>", {"stringValue": "{}"}, {"stringValue": '{"a": [1, 2]}'}),
        tool("0000000000000004", "t", "c4", {"intValue": "5"}, {"stringValue": "not json"}),
        tool("0000000000000005", "t", "c5", {"stringValue": ""}, {"doubleValue": 1.5}),
        tool("0000000000000006", "t", "c6", {}, ...),
        tool("0000000000000007", "t", "c7", {"boolValue": True}, {}),
        tool("0000000000000008", "t", "c8", {"stringValue": '{"b": 1, "a": "é"}'}, {"stringValue": '{"z": 1, "a": 2}'}),
        _span(
            T1,
            "0000000000000009",
            "call_llm",
            [
                _kv("gcp.vertex.agent.session_id", {"intValue": "12"}),
                _kv("gcp.vertex.agent.llm_request", {"stringValue": '{"contents": []}'}),
                _kv("gen_ai.response.finish_reasons", {"arrayValue": {"values": [{"stringValue": "stop"}]}}),
            ],
        ),
    ]
    _both_ways(_doc(spans), tmp_path)


@pytest.mark.parametrize(
    ("label", "body"),
    [
        ("snake_case keys", json.dumps({"resource_spans": [{"scope_spans": [{"spans": [{"trace_id": T1}]}]}]})),
        ("pre-1.0 keys", json.dumps({"resourceSpans": [{"instrumentationLibrarySpans": [{"spans": []}]}]})),
        ("an unknown key", json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": T1, "x": 1}]}]}]})),
        ("base64 ids", json.dumps(_doc([_span("W47/95gDgQPSabYzgT/GDA==", "7uGbfsPBsXQ=", "b64", [])]))),
        (
            "a link's id in base64",
            json.dumps(_doc([_span(T1, S1, "l", [], links=[{"traceId": "W47/95gDgQPSabYzgT/GDA==", "spanId": S2}])])),
        ),
        ("NaN", json.dumps(_doc([_span(T1, S1, "n", [_kv("d", {"doubleValue": float("nan")})])]))),
        (
            "an AnyValue with two values",
            json.dumps(_doc([_span(T1, S1, "n", [_kv("d", {"intValue": 1, "stringValue": "1"})])])),
        ),
        ("int64 as a float", json.dumps(_doc([_span(T1, S1, "n", [_kv("d", {"intValue": 1.0})])]))),
        ("int64 with a sign", json.dumps(_doc([_span(T1, S1, "n", [_kv("d", {"intValue": "+1"})])]))),
        ("hex int64", json.dumps(_doc([_span(T1, S1, "n", [_kv("d", {"intValue": "0x10"})])]))),
        (
            "a key twice in a map",
            json.dumps(
                _doc(
                    [
                        _span(
                            T1,
                            S1,
                            "n",
                            [_kv("m", {"kvlistValue": {"values": [_kv("a", {}), _kv("a", {"intValue": 1})]}})],
                        )
                    ]
                )
            ),
        ),
        ("Tempo's batches", json.dumps({"batches": [{"scopeSpans": []}]})),
        ("Tempo's trace", json.dumps({"trace": {"resourceSpans": []}})),
    ],
)
def test_what_the_fast_path_leaves_to_the_validating_one_still_reads_the_same(label: str, body: str) -> None:
    (fast,) = json_columnar.tables([body.encode()])
    assert fast is None, label


def test_a_key_given_twice_in_a_span_takes_the_python_path_in_place(tmp_path: Path) -> None:
    attrs = [_kv("a", {"stringValue": "first"}), _kv("b", {"intValue": 1}), _kv("a", {"stringValue": "second"})]
    spans = [_span(T1, S1, "before", []), _span(T1, S2, "twice", attrs), _span(T1, S3, "after", [])]
    _same(_encoded(_doc(spans)), tmp_path)


# ---------------------------------------------------------------- bad input: the same one-line errors

_GOOD = _doc([_span(T1, S1, "chat", [_kv("gen_ai.operation.name", {"stringValue": "chat"})])])


def _bad(patch: dict[str, Any]) -> str:
    doc = copy.deepcopy(_GOOD)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(patch)
    return json.dumps(doc)


BAD = [
    ("not JSON", "{"),
    ("not UTF-8", b'{"resourceSpans": [], "x": "\xff"}'),
    ("two objects", '{"resourceSpans": []}{"resourceSpans": []}'),
    ("an array", "[1, 2]"),
    ("a key twice", '{"resourceSpans": [], "resourceSpans": []}'),
    ("a key twice deep", _bad({}).replace('"name": "chat"', '"name": "chat", "name": "chat"')),
    ("a bad time", _bad({"startTimeUnixNano": "soon"})),
    ("a negative time", _bad({"endTimeUnixNano": -1})),
    ("a bad kind", _bad({"kind": "SPAN_KIND_SIDEWAYS"})),
    ("a kind out of range", _bad({"kind": 2**40})),
    ("attributes not an array", _bad({"attributes": {"a": 1}})),
    ("a null attribute", _bad({"attributes": [None]})),
    ("a float int", _bad({"attributes": [_kv("a", {"intValue": 1.5})]})),
    ("a number key", _bad({"attributes": [{"key": 7, "value": {}}]})),
    ("a number name", _bad({"name": 3})),
    ("a short trace id", _bad({"traceId": "abcd"})),
    ("a missing span id", _bad({"spanId": ""})),
    ("a bad parent id", _bad({"parentSpanId": "xyz"})),
    ("Inf", _bad({"attributes": [_kv("d", {"doubleValue": 1})]}).replace('"doubleValue": 1', '"doubleValue": Inf')),
    ("a bad bytes value", _bad({"attributes": [_kv("b", {"bytesValue": "not base64!"})]})),
    ("a bad log id", json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "ab"}]}]}]})),
    ("not OTLP", json.dumps({"hello": "world"})),
]


@pytest.mark.parametrize(("label", "body"), BAD, ids=[label for label, _ in BAD])
def test_bad_input_ends_in_the_same_one_line_error_and_nothing_is_written(
    label: str, body: str | bytes, tmp_path: Path
) -> None:
    raw = body.encode() if isinstance(body, str) else body
    assert json_columnar.tables([raw]) == [None], "the fast path took a bad document"
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_bytes(_encoded(_GOOD))
    bad.write_bytes(raw)
    outputs = []
    for fast in ("1", "0"):
        lake = tmp_path / f"lake{fast}"
        result = CliRunner().invoke(
            main, ["ingest", "--lake", str(lake), str(good), str(bad)], env={"TRACEVALS_INGEST_FAST": fast}
        )
        assert result.exit_code == 1, result.output
        assert not lake.exists() or not any(p.suffix == ".parquet" for p in lake.rglob("*"))
        outputs.append(result.output)
    assert outputs[0] == outputs[1]
    (line,) = outputs[0].strip().splitlines()
    assert line.startswith(f"Error: {bad}: ")


def test_a_refused_document_among_others_leaves_them_on_the_fast_path(tmp_path: Path) -> None:
    good = _encoded(_GOOD)
    twice = _encoded(_doc([_span(T1, S1, "n", [_kv("d", {"intValue": 1, "stringValue": "1"})])]))
    out = json_columnar.tables([good, twice, good, b"{", _encoded(_GOOD, indent=2)])
    assert [o is not None for o in out] == [True, False, True, False, True]


# ---------------------------------------------------------------- the lake, read back


def _lake_rows(lake: Path, table: str) -> list[tuple[Any, ...]]:
    files = sorted(str(p) for p in (lake / table).rglob("*.parquet"))
    if not files:
        return []
    rows = duckdb.sql(f"SELECT * FROM read_parquet({files!r}) ORDER BY ALL").fetchall()
    return [tuple(("nan",) if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows]


def test_the_lake_holds_the_same_rows_either_way(tmp_path: Path) -> None:
    docs = [_encoded(fixture_doc(d)) for d in DIALECTS]
    every = _doc([_span(T1, S1, "chat", EVERY_VALUE)], [{"traceId": T1, "attributes": EVERY_VALUE}])
    docs += [_encoded(_int64s(every, True)), _encoded(_int64s(every, False), indent=1), _encoded(every)]
    docs += [p.read_bytes() for p in _RECORDINGS[:12]]
    files = []
    for i, body in enumerate(docs):
        files.append(tmp_path / f"doc{i}.json")
        files[-1].write_bytes(body)
    lakes = {}
    for fast in ("1", "0"):
        lakes[fast] = tmp_path / f"lake{fast}"
        result = CliRunner().invoke(
            main, ["ingest", "--lake", str(lakes[fast]), *map(str, files)], env={"TRACEVALS_INGEST_FAST": fast}
        )
        assert result.exit_code == 0, result.output
    for table in ("spans", "logs"):
        fast_rows, slow_rows = _lake_rows(lakes["1"], table), _lake_rows(lakes["0"], table)
        assert fast_rows == slow_rows
        assert fast_rows or table == "logs"


# ---------------------------------------------------------------- generated documents

_hex8 = st.binary(min_size=8, max_size=8).map(bytes.hex)
_int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_uint64 = st.integers(min_value=0, max_value=2**63 - 1)
_text = st.text(max_size=8) | st.sampled_from(["chat", "execute_tool", "", "<not specified>", '{"result": 1}'])
_keys = st.sampled_from(
    ["gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.conversation.id", "gen_ai.usage.input_tokens",
     "gen_ai.request.model", "gcp.vertex.agent.session_id", "gcp.vertex.agent.tool_call_args",
     "gcp.vertex.agent.tool_response", "tracevals.retryable", "http.response.status_code", "service.name",
     "error.type", "gen_ai.response.finish_reasons", "x", ""]
) | st.text(max_size=5)  # fmt: skip


def _either(value: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    return value | value.map(str)


def _any_value(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        _text.map(lambda v: {"stringValue": v}),
        st.booleans().map(lambda v: {"boolValue": v}),
        _either(_int64).map(lambda v: {"intValue": v}),
        st.floats(allow_nan=False, allow_infinity=False).map(lambda v: {"doubleValue": v}),
        st.binary(max_size=4).map(lambda v: {"bytesValue": base64.b64encode(v).decode()}),
        st.lists(children, max_size=3).map(lambda vs: {"arrayValue": {"values": vs}}),
        st.lists(st.tuples(st.text(max_size=3), children), max_size=3, unique_by=lambda kv: kv[0]).map(
            lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}}
        ),
        st.just({}),
    )


_value = st.recursive(_text.map(lambda v: {"stringValue": v}), _any_value, max_leaves=5)
_attrs = st.lists(st.tuples(_keys, _value | st.none()), max_size=5).map(
    lambda kvs: [{"key": k, "value": v} for k, v in kvs]
)


@st.composite
def _generated_span(draw: st.DrawFn) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": draw(_hex8) * 2,
        "spanId": draw(_hex8),
        "name": draw(st.sampled_from(["chat", "execute_tool t", "x", ""])),
        "kind": draw(st.integers(0, 6) | st.sampled_from(["SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"])),
        "startTimeUnixNano": draw(_either(_uint64)),
        "attributes": draw(_attrs),
    }
    if draw(st.booleans()):
        span["endTimeUnixNano"] = draw(_either(_uint64))
    if draw(st.booleans()):
        span["parentSpanId"] = draw(_hex8 | st.just(""))
    if draw(st.booleans()):
        span["status"] = {"code": draw(st.sampled_from([0, 1, 2, 5, "STATUS_CODE_ERROR"])), "message": draw(_text)}
    if draw(st.integers(0, 4)) == 0:
        span["events"] = [{"name": "exception", "timeUnixNano": draw(_either(_uint64)), "attributes": draw(_attrs)}]
    if draw(st.integers(0, 6)) == 0:
        span["links"] = [{"traceId": draw(_hex8) * 2, "spanId": draw(_hex8), "attributes": draw(_attrs)}]
    return span


@st.composite
def _generated(draw: st.DrawFn) -> dict[str, Any]:
    records = [
        {
            "timeUnixNano": draw(_either(_uint64)),
            "severityNumber": draw(st.integers(0, 24) | st.just("SEVERITY_NUMBER_INFO")),
            "body": draw(_value | st.none()),
            "attributes": draw(_attrs),
            "traceId": draw(_hex8 | st.just("")) * 2,
            "eventName": draw(_text),
        }
        for _ in range(draw(st.integers(0, 2)))
    ]
    resources = []
    for _ in range(draw(st.integers(1, 2))):
        attrs = draw(_attrs)
        if len({kv["key"] for kv in attrs}) != len(attrs):
            attrs = attrs[:1]
        resources.append(
            {
                "resource": {"attributes": attrs},
                "scopeSpans": [
                    {
                        "scope": {"name": draw(_text), "version": "1"},
                        "spans": draw(st.lists(_generated_span(), max_size=4)),
                    }
                ],
            }
        )
    doc: dict[str, Any] = {"resourceSpans": resources}
    if records:
        doc["resourceLogs"] = [
            {"resource": {"attributes": []}, "scopeLogs": [{"scope": {"name": "s"}, "logRecords": records}]}
        ]
    # mostly one writer's style (its int64s all strings or all numbers, enums all numbers or all names): the
    # fast path takes those; a mixed document goes to the validating path
    style = draw(st.sampled_from(["strings", "numbers", "strings", "numbers", "mixed"]))
    if style != "mixed":
        doc = _int64s(doc, style == "strings")
        doc = _enums(doc, draw(st.booleans()))
    return doc


_ENUMS = {
    "kind": {i: n for n, i in Span.SpanKind.items()},
    "code": {i: n for n, i in Status.StatusCode.items()},
    "severityNumber": {i: n for n, i in SeverityNumber.items()},
}


def _enums(node: Any, names: bool) -> Any:
    """The document with every enum as its number, or as its name."""

    def rule(key: str, value: Any) -> Any:
        numbers = _ENUMS.get(key)
        if numbers is None or not isinstance(value, (int, str)):
            return INSIDE
        number = value if isinstance(value, int) else {n: i for i, n in numbers.items()}[value]
        return numbers.get(number, number) if names else number

    return rewritten(node, rule)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(doc=_generated(), indent=st.sampled_from([None, 1]))
def test_generated_documents_read_the_same(doc: dict[str, Any], indent: int | None, tmp_path: Path) -> None:
    _same(_encoded(doc, indent), tmp_path, taken=None)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(docs=st.lists(_generated(), min_size=2, max_size=4))
def test_documents_converted_together_equal_each_alone(docs: list[dict[str, Any]], tmp_path: Path) -> None:
    bodies = [_encoded(d) for d in docs]
    together = json_columnar.tables(bodies)
    for body, got in zip(bodies, together, strict=True):
        (alone,) = json_columnar.tables([body])
        assert (got is None) == (alone is None)
        if got is not None and alone is not None:
            for a, b in zip(got, alone, strict=True):
                assert comparable(a) == comparable(b)


def test_protobuf_requests_made_from_json_still_convert_alike() -> None:
    """The same document through protobuf: `columnar.spans_table` equals the fast path's spans."""
    doc = _int64s(_doc([_span(T1, S1, "chat", EVERY_VALUE)]), as_string=True)
    request = parse_json_traces(_encoded(doc))
    assert isinstance(request, ExportTraceServiceRequest)
    (fast,) = json_columnar.tables([_encoded(doc)])
    assert fast is not None
    assert comparable(fast[0]) == comparable(columnar.spans_table(request))
