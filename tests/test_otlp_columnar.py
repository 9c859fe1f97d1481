"""The collector's columnar path (`conversion.columnar.spans_table_columnar`) equals the Python path
(`conversion.rows.spans_table`) row for row and value for value, on generated OTLP requests of any shape:
every key the normalizer reads (and others), values of every OTLP type (edge values included: "", " 12 ",
"1_000", NaN, -0.0, 2**63-1, arrays, maps, bytes, an unset value), keys given twice, keys with quotes
and control characters, spans with events and links, malformed ids, out-of-range kinds and status codes,
truncation limits and session sampling."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from fixtures.plain import comparable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tracevals.collector.conversion import columnar as otlp_columnar
from tracevals.collector.conversion import scopes
from tracevals.collector.conversion.rows import TRUNCATED, spans_table
from tracevals.lake.sampling import SessionSampler
from tracevals.model import attributes as tv
from tracevals.spans import normalize as norm
from tracevals.spans import reading

# every key a rule of the normalizer reads (every dialect's declared keys), and a few it does not
_RULE_KEYS = sorted(
    {k.name + ("sessionId" if k.pattern else "") for keys in reading.COLUMNS.values() for k in keys}
    | {k.name + ("sessionId" if k.pattern else "") for keys in reading.TOOL_COLUMNS.values() for k in keys}
    | {k for keys, _ in norm.FACTS.values() for k in keys}
    | set(reading.KIND_VALUE_KEYS)
    | set(reading.DEEP_KEYS)
    | {tv.HANDOFF_REASON, "llm.request.type", "gen_ai.system", "traceloop.entity.name", "gen_ai.input.messages"}
    | {"gcp.vertex.agent.session_id", "gcp.vertex.agent.tool_call_args"}
)
KEYS = st.one_of(
    st.sampled_from(_RULE_KEYS),
    st.sampled_from(["service.name", "server.address", "", 'a "quoted" key', "tab\tkey", "nul\x00key", "ключ"]),
    st.sampled_from([TRUNCATED, "service.version"]),
    st.text(max_size=12),
)
STRINGS = st.one_of(
    st.sampled_from(["", " 12 ", "12", "-7", "1_000", "0x1F", "3.5", "1e3", "nan", "yes", "No", "true", "[1,2]"]),
    st.sampled_from(["chat", "execute_tool", "invoke_agent", "LLM", "TOOL", "AGENT", "tool", "workflow", "embeddings"]),
    st.sampled_from(["<not specified>", "(merged tools)", "execute_tool lookup", '{"result": 3}', "x" * 70]),
    st.sampled_from(["ai.toolCall", "ai.generateText.doGenerate", "generation", '"LLM"', "[Scrubbed due to 'x']"]),
    st.sampled_from(['{"kwargs": {"a": 1}}', '{"args": [], "kwargs": {"a": 1}}', "ValueError: x", "<class 'E'>"]),
    st.text(max_size=20),
)
DOUBLES = st.one_of(
    st.sampled_from([0.0, -0.0, 0.1, 0.2, 1.5, 100.0, 1e20, 1e-7, 12.0, -3.5]),
    st.floats(allow_nan=True, allow_infinity=True),
)
INTS = st.one_of(st.sampled_from([0, 1, -1, 12, 2**53 + 1, 2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))


def _value(draw: Any, depth: int = 0) -> AnyValue:
    which = draw(st.sampled_from(["s", "s", "s", "i", "i", "d", "b", "unset", "array", "kvlist", "bytes"]))
    value = AnyValue()
    if which == "s":
        value.string_value = draw(STRINGS)
    elif which == "i":
        value.int_value = draw(INTS)
    elif which == "d":
        value.double_value = draw(DOUBLES)
    elif which == "b":
        value.bool_value = draw(st.booleans())
    elif which == "bytes":
        value.bytes_value = draw(st.binary(max_size=4))
    elif which == "array" and depth < 2:
        value.array_value.values.extend(_value(draw, depth + 1) for _ in range(draw(st.integers(0, 2))))
    elif which == "kvlist" and depth < 2:
        value.kvlist_value.values.extend(
            KeyValue(key=draw(KEYS), value=_value(draw, depth + 1)) for _ in range(draw(st.integers(0, 2)))
        )
    return value


def _attributes(draw: Any, size: int) -> list[KeyValue]:
    out = []
    for _ in range(draw(st.integers(0, size))):
        kv = KeyValue(key=draw(KEYS))
        if draw(st.integers(0, 9)):  # sometimes no value at all
            kv.value.CopyFrom(_value(draw))
        out.append(kv)
    if out and draw(st.integers(0, 6)) == 0:
        out.append(KeyValue(key=out[0].key, value=_value(draw)))  # a key given twice
    return out


@st.composite
def requests(draw: Any) -> list[ExportTraceServiceRequest]:
    batch = []
    shared = [draw(st.binary(min_size=16, max_size=16)) for _ in range(2)]
    for _ in range(draw(st.integers(1, 3))):
        request = ExportTraceServiceRequest()
        for _ in range(draw(st.integers(0, 2))):
            resource = request.resource_spans.add()
            resource.resource.attributes.extend(_attributes(draw, 3))
            for _ in range(draw(st.integers(0, 2))):
                scope = resource.scope_spans.add()
                scope.scope.name = draw(st.sampled_from(["", "tracevals", "openinference.instrumentation"]))
                scope.scope.version = draw(st.sampled_from(["", "1.2"]))
                for _ in range(draw(st.integers(0, 5))):
                    span = scope.spans.add()
                    span.trace_id = draw(st.one_of(st.sampled_from(shared), st.binary(min_size=15, max_size=16)))
                    span.span_id = draw(st.binary(min_size=7, max_size=8))
                    span.parent_span_id = draw(st.sampled_from([b"", b"\x01" * 8, b"\x02" * 3]))
                    span.name = draw(
                        st.sampled_from(
                            ["chat gpt", "execute_tool lookup_order", "execute_tool ", "x", "haystack.agent.step.tool"]
                        )
                    )
                    span.kind = draw(st.integers(0, 7))
                    span.start_time_unix_nano = draw(st.integers(0, 2**62))
                    span.end_time_unix_nano = draw(st.one_of(st.just(0), st.integers(0, 2**62)))
                    if draw(st.booleans()):
                        span.status.code = draw(st.integers(0, 4))
                        span.status.message = draw(st.sampled_from(["", "boom", "ValueError: boom", "<class 'X'>"]))
                    span.attributes.extend(_attributes(draw, 8))
                    if draw(st.integers(0, 5)) == 0:
                        event = span.events.add()
                        event.name = draw(st.sampled_from(["exception", "gen_ai.choice"]))
                        event.attributes.extend(_attributes(draw, 2))
                    if draw(st.integers(0, 8)) == 0:
                        link = span.links.add()
                        link.trace_id, link.span_id = b"\x03" * 16, b"\x04" * 8
        batch.append(request)
    return batch


def _decoded(payloads: list[bytes], split: int) -> list[pa.RecordBatch]:
    """The requests decoded to Arrow, as one batch or as two (the exporter concatenates batches)."""
    if 0 < split < len(payloads):
        return [otlp_columnar.decode(payloads[:split]), otlp_columnar.decode(payloads[split:])]
    return [otlp_columnar.decode(payloads)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(requests(), st.sampled_from([None, 8, 24, 4096]), st.booleans(), st.integers(0, 3), st.booleans())
def test_columnar_equals_the_python_path(
    batch: list[ExportTraceServiceRequest], limit: int | None, sample: bool, split: int, kernels: bool
) -> None:
    with mock.patch.object(scopes, "SMALL_VALUES", -1 if kernels else scopes.SMALL_VALUES):
        _check_columnar_equals_the_python_path(batch, limit, sample, split)


def _check_columnar_equals_the_python_path(
    batch: list[ExportTraceServiceRequest], limit: int | None, sample: bool, split: int
) -> None:
    keep = SessionSampler(50.0, 7).keep if sample else None
    payloads = [r.SerializeToString() for r in batch]
    # Never raises: the collector acknowledged these requests, and one it cannot convert would be dropped.
    expected = pa.concat_tables([spans_table(request, limit, keep) for request in batch])
    keep = SessionSampler(50.0, 7).keep if sample else None  # a fresh one: it remembers traces
    got = otlp_columnar.spans_table_columnar(_decoded(payloads, split), payloads, limit, keep)
    assert got.schema == expected.schema
    assert comparable(got) == comparable(expected)


@pytest.mark.parametrize(
    "value", [AnyValue(int_value=0), AnyValue(bool_value=False), AnyValue(double_value=1.5), AnyValue(string_value="x")]
)
def test_a_key_read_only_on_some_names_is_no_value_elsewhere_whatever_its_type(value: AnyValue) -> None:
    """Logfire's `name` is an agent's name only on its `Agent run: ...` spans (`Key(on_names=...)`). On any other span
    the columnar path masked the key's value by its tag alone, which a string's code obeys and a number's or a
    boolean's did not: a `name` of 0 on a `chat gpt` span became its agent, `'0'` (found by this module's property
    test, at random). Both paths now read it as no value there, and as the agent on the span it names."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for n, (name, attribute) in enumerate([("chat gpt", value), ("Agent run: 'a'", AnyValue(string_value="a"))]):
        span = spans.add(trace_id=bytes([1] * 16), span_id=bytes([n + 1] * 8), name=name, start_time_unix_nano=1)
        span.attributes.append(KeyValue(key="name", value=attribute))
    _check_columnar_equals_the_python_path([request], None, False, 0)
    agents = otlp_columnar.spans_table_columnar(_decoded([request.SerializeToString()], 0),
                                                [request.SerializeToString()], None, None)["agent_name"]  # fmt: skip
    assert agents.to_pylist() == [None, "a"]


def test_a_typical_batch_takes_the_columnar_path_for_every_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """GenAI-shaped spans of every dialect's keys with scalar values never reach the per-span Python code
    (the point of the path); the rows still equal the Python path's."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for i in range(200):
        span = scope.spans.add()
        span.trace_id, span.span_id = bytes([i % 7 + 1]) * 16, i.to_bytes(8, "big")
        span.name = "chat gpt" if i % 2 else "execute_tool lookup_order"
        span.start_time_unix_nano, span.end_time_unix_nano = 10**18 + i, 10**18 + i + 5_000
        attributes = {
            "gen_ai.operation.name": "chat" if i % 2 else "execute_tool",
            "gen_ai.conversation.id": f"sess-{i // 10}",
            "gen_ai.usage.input_tokens": i,
            "gen_ai.request.temperature": 0.2,
            "gen_ai.tool.name" if i % 2 == 0 else "gen_ai.request.model": "lookup_order" if i % 2 == 0 else "gpt",
            "tracevals.retry.attempt": "2" if i % 5 == 0 else 1,
            "http.response.status_code": 429,
            "tracevals.retryable": True,
            "gen_ai.tool.call.arguments": '{"order_id": "ord_1"}',
        }
        for key, value in attributes.items():
            kv = span.attributes.add(key=key)
            if isinstance(value, bool):
                kv.value.bool_value = value
            elif isinstance(value, int):
                kv.value.int_value = value
            elif isinstance(value, float):
                kv.value.double_value = value
            else:
                kv.value.string_value = value
    calls: list[int] = []
    real = otlp_columnar.span_row

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(otlp_columnar, "span_row", counted)
    payload = request.SerializeToString()
    got = otlp_columnar.spans_table_columnar([otlp_columnar.decode([payload])], [payload])
    assert calls == []
    assert comparable(got) == comparable(spans_table(request))
    assert got.num_rows == 200 and set(got["kind"].to_pylist()) == {"llm", "tool"}
