"""OTLP/JSON as curl or a JS SDK sends it: hex ids, int64 as strings, typed attribute values."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracevals.cli import main
from tracevals.collector.conversion.rows import rows_from_request
from tracevals.collector.otlp_json import OTLPDecodeError, parse_json_traces
from tracevals.queries import open_lake

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
PARENT_ID = "eee19b7ec3c1b173"

DOC = {
    "resourceSpans": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop-agent"}}]},
            "scopeSpans": [
                {
                    "scope": {"name": "my.instrumentation", "version": "1.2"},
                    "spans": [
                        {
                            "traceId": TRACE_ID,
                            "spanId": SPAN_ID,
                            "parentSpanId": PARENT_ID,
                            "name": "execute_tool refund_order",
                            "kind": 1,
                            "startTimeUnixNano": "1790607510974516740",
                            "endTimeUnixNano": 1790607510975130682,
                            "status": {"code": 2, "message": "boom"},
                            "attributes": [
                                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                                {"key": "gen_ai.tool.name", "value": {"stringValue": "refund_order"}},
                                {"key": "gen_ai.conversation.id", "value": {"stringValue": "conv-7"}},
                                {"key": "attempts", "value": {"intValue": "3"}},
                                {"key": "ratio", "value": {"doubleValue": 0.5}},
                                {"key": "ok", "value": {"boolValue": False}},
                                {
                                    "key": "tags",
                                    "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 2}]}},
                                },
                                {
                                    "key": "meta",
                                    "value": {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}},
                                },
                                {"key": "error.type", "value": {"stringValue": "Timeout"}},
                            ],
                            "events": [{"name": "exception", "timeUnixNano": "1790607510975000000", "attributes": []}],
                        }
                    ],
                }
            ],
        }
    ]
}


def test_hex_ids_times_and_typed_attributes_are_read_exactly() -> None:
    (row,) = rows_from_request(parse_json_traces(json.dumps(DOC)))
    assert (row["trace_id"], row["span_id"], row["parent_span_id"]) == (TRACE_ID, SPAN_ID, PARENT_ID)
    assert (row["start_time"], row["end_time"]) == (1790607510974516740, 1790607510975130682)
    attrs = json.loads(row["attributes"])
    assert attrs["attempts"] == 3 and attrs["ratio"] == 0.5 and attrs["ok"] is False
    assert attrs["tags"] == ["a", 2] and attrs["meta"] == {"k": "v"}
    assert (row["kind"], row["tool_name"], row["session_id"], row["error_type"]) == (
        "tool",
        "refund_order",
        "conv-7",
        "Timeout",
    )
    assert (row["status_code"], row["status_message"], row["scope_name"], row["service_name"]) == (
        "error",
        "boom",
        "my.instrumentation",
        "shop-agent",
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("traceId", "W47/95gDgQPSabYz", "is not hex"),  # base64 of 12 bytes: no trace id either way
        ("traceId", "0af7651916cd43dd8448eb21", "is 12 bytes, expected 16"),  # hex of the wrong size, not base64
        ("spanId", "eee19b7e", "is 4 bytes, expected 8"),
        ("traceId", 12, "expected a hex string"),
    ],
)
def test_bad_ids_are_rejected_with_where(field: str, value: object, message: str) -> None:
    doc = json.loads(json.dumps(DOC))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0][field] = value
    with pytest.raises(OTLPDecodeError, match=message) as info:
        parse_json_traces(json.dumps(doc))
    assert f"resourceSpans[0].scopeSpans[0].spans[0].{field}" in str(info.value)


def test_ingest_command_lands_the_file_in_the_lake(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(DOC))
    lake = tmp_path / "lake"
    result = CliRunner().invoke(main, ["ingest", "--lake", str(lake), "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"file": str(path), "format": "otlp-json", "spans": 1, "logs": 0}]
    con = open_lake(lake)
    assert con.execute("select trace_id, span_id, name from spans").fetchall() == [
        (TRACE_ID, SPAN_ID, "execute_tool refund_order")
    ]


def test_a_string_cut_inside_a_surrogate_pair_reads_as_a_replacement_character(tmp_path: Path) -> None:
    """JavaScript's JSON.stringify writes a lone surrogate (a string cut mid-emoji) as an escape, which Unicode
    text cannot hold: the file is read, the character as U+FFFD (as Go's encoding/json reads it), a key's too;
    a whole pair stays the character it is. The file was refused ("surrogates not allowed")."""
    doc = json.loads(json.dumps(DOC))
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["name"] = "execute_tool \ud83d"
    span["attributes"].append({"key": "cut\udfff", "value": {"stringValue": "x \ud83d\ude00 y \ude00"}})
    text = json.dumps(doc)  # each surrogate written as an escape (ensure_ascii), as JSON.stringify writes a lone one
    assert 'execute_tool \\ud83d"' in text
    path = tmp_path / "cut.json"
    path.write_text(text)
    lake = tmp_path / "lake"
    result = CliRunner().invoke(main, ["ingest", "--lake", str(lake), str(path)])
    assert result.exit_code == 0, result.output
    [(name, value)] = open_lake(lake).execute("select name, attributes->>'$.\"cut\ufffd\"' from spans").fetchall()
    assert (name, value) == ("execute_tool \ufffd", "x \U0001f600 y \ufffd")


def test_ingest_reads_standard_input(tmp_path: Path) -> None:
    """`-` is standard input, as for any Unix tool (`zcat export.json.gz | tracevals ingest --lake L -`): read
    as a file is, compressed or not, JSON by its content, protobuf with `--input-format otlp-proto`; named
    `-` in what ingest prints; given twice, one line."""
    import gzip

    lake = tmp_path / "lake"
    result = CliRunner().invoke(
        main, ["ingest", "--lake", str(lake), "--format", "json", "-"], input=gzip.compress(json.dumps(DOC).encode())
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"file": "-", "format": "otlp-json", "spans": 1, "logs": 0}]
    proto = parse_json_traces(DOC).SerializeToString()
    args = ["ingest", "--lake", str(tmp_path / "lake2"), "--input-format", "otlp-proto", "--format", "json", "-"]
    result = CliRunner().invoke(main, args, input=proto)
    assert json.loads(result.stdout) == [{"file": "-", "format": "otlp-proto", "spans": 1, "logs": 0}]
    twice = CliRunner().invoke(main, ["ingest", "--lake", str(lake), "-", "-"], input=b"{}")
    assert twice.exit_code == 2 and "given more than once" in twice.stderr
    assert con_rows(lake) == con_rows(tmp_path / "lake2") == [(TRACE_ID, SPAN_ID, "execute_tool refund_order")]


def con_rows(lake: Path) -> list[tuple[str, str, str]]:
    return [tuple(r) for r in open_lake(lake).execute("select trace_id, span_id, name from spans").fetchall()]


def test_ingest_refuses_a_file_that_is_not_otlp(tmp_path: Path) -> None:
    path = tmp_path / "truth.json"
    path.write_text('{"turns": []}')
    result = CliRunner().invoke(main, ["ingest", "--lake", str(tmp_path / "lake"), str(path)])
    assert result.exit_code == 1 and "no resourceSpans" in result.output
    assert not (tmp_path / "lake").exists()


def test_ingest_refuses_a_protobuf_file_with_a_malformed_span_id(tmp_path: Path) -> None:
    request = parse_json_traces(json.dumps(DOC))
    request.resource_spans[0].scope_spans[0].spans[0].span_id = b"\x01\x02\x03"  # 3 bytes, not 8
    path = tmp_path / "export.pb"
    path.write_bytes(request.SerializeToString())
    result = CliRunner().invoke(main, ["ingest", "--lake", str(tmp_path / "lake"), str(path)])
    # in the collector's words (`otlp_decode.first_rejected`): a file is refused for what a request is
    assert result.exit_code == 1 and "spanId must be 8 bytes, not all zero (got 3)" in result.output
    assert not (tmp_path / "lake").exists()


def test_ingest_writes_one_file_per_hour_for_all_its_inputs(tmp_path: Path) -> None:
    paths = []
    for i, start in enumerate((1790607510974516740, 1790607510974516740 + 3_600 * 10**9)):
        doc = json.loads(json.dumps(DOC))
        span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        span.update(spanId=f"{i + 1:016x}", startTimeUnixNano=str(start), endTimeUnixNano=str(start + 1000))
        for copy in range(2):
            paths.append(tmp_path / f"export-{i}-{copy}.json")
            span["traceId"] = f"{i * 2 + copy + 1:032x}"
            paths[-1].write_text(json.dumps(doc))
    lake = tmp_path / "lake"
    result = CliRunner().invoke(main, ["ingest", "--lake", str(lake), *map(str, paths)])
    assert result.exit_code == 0, result.output
    files = sorted(p.parent.name for p in (lake / "spans").rglob("*.parquet"))
    assert files == ["hour=14", "hour=15"]  # four inputs, two hours: two files
    rows = open_lake(lake).execute("select hour(start_time), count(*) from spans group by 1 order by 1").fetchall()
    assert rows == [(14, 2), (15, 2)]


def test_pre_1_0_keys_are_read_and_an_empty_file_is_said(tmp_path: Path) -> None:
    # Tempo and exporters before OTLP 1.0 write instrumentationLibrarySpans / instrumentationLibrary
    legacy = json.loads(
        json.dumps(DOC)
        .replace('"scopeSpans"', '"instrumentationLibrarySpans"')
        .replace('"scope"', '"instrumentationLibrary"')
    )
    legacy["batches"] = legacy.pop("resourceSpans")  # and Tempo's name for them
    path, empty = tmp_path / "tempo.json", tmp_path / "empty.json"
    path.write_text(json.dumps(legacy))
    empty.write_text('{"resourceSpans": []}')
    lake = tmp_path / "lake"
    result = CliRunner().invoke(main, ["ingest", "--lake", str(lake), str(path), str(empty)])
    assert result.exit_code == 0, result.output
    assert f"warning: {empty}: no spans and no log records in it" in result.output
    assert open_lake(lake).execute("select span_id, scope_name, scope_version from spans").fetchall() == [
        (SPAN_ID, "my.instrumentation", "1.2")
    ]
    both = json.loads(json.dumps(DOC))
    both["resourceSpans"][0]["instrumentationLibrarySpans"] = []
    with pytest.raises(OTLPDecodeError, match="given twice, under two spellings"):
        parse_json_traces(both)


def test_base64_ids_are_read_where_that_is_the_only_reading_and_counted() -> None:
    """Some exporters write ids in base64 (the protobuf JSON mapping), though OTLP/JSON says hex. A 24- or
    12-character base64 text that gives a 16- or 8-byte id, and no hex reading of that size, is taken as the
    id, and counted so that `tracevals ingest` can say so; 32 hex digits are always hex."""
    from tracevals.collector.otlp_json import base64_ids_read

    trace, span = bytes.fromhex(TRACE_ID), bytes.fromhex(SPAN_ID)
    doc = json.loads(json.dumps(DOC))
    first = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    first["traceId"] = base64.b64encode(trace).decode()  # 24 characters, padded
    first["spanId"] = base64.b64encode(span).decode().rstrip("=")  # 11 characters, unpadded
    request = parse_json_traces(json.dumps(doc))
    parsed = request.resource_spans[0].scope_spans[0].spans[0]
    assert (parsed.trace_id, parsed.span_id) == (trace, span)
    assert base64_ids_read() == 2
    parse_json_traces(json.dumps(DOC))
    assert base64_ids_read() == 0  # hex, as written
