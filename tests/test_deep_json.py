"""JSON nested past what the parser recurses into is text that is not JSON, on every surface that reads it:
a span value shown or scored (no traceback, no lost command), a task file or a config (one line naming the
file). `json.loads` raises RecursionError there, which is no ValueError (`tracevals.model.json_text`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracevals.model.documents import DocumentError, parse_document
from tracevals.model.json_text import TooDeep, loads
from tracevals.model.tasks import TaskFileError, load_cases

DEEP = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a": ' * 5000 + "1" + "}" * 5000


@pytest.mark.parametrize("text", [DEEP, DEEP_OBJECT], ids=["lists", "objects"])
def test_loads_says_not_json(text: str) -> None:
    with pytest.raises(TooDeep) as raised:
        loads(text)
    assert isinstance(raised.value, ValueError)
    assert loads("[[1]]") == [[1]]


def test_a_task_file_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"case_id": "c1", "input": "x"}\n' + DEEP_OBJECT + "\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:2: invalid JSON: nested deeper than the parser goes"):
        load_cases(path)


@pytest.mark.parametrize("name", ["config.json", "config.yaml"])
def test_a_config_nested_too_deep_is_one_line(name: str) -> None:
    with pytest.raises(DocumentError, match=rf"{name}: not valid (JSON|YAML): nested deeper than the parser goes"):
        parse_document(DEEP, name)


@pytest.mark.parametrize("name", ["config.json", "config.yaml"])
def test_a_config_nested_past_the_bound_is_one_line(name: str) -> None:
    """It parses, but what reads a config walks it by recursion: the bound JSON values have holds for YAML too."""
    with pytest.raises(DocumentError, match=rf"{name}: not valid (JSON|YAML): nested more than 100 arrays"):
        parse_document("[" * 300 + "]" * 300, name)


def test_the_trace_page_shows_deep_attributes_as_text() -> None:
    from tracevals.ui.trace import _attributes, _events

    assert _attributes(DEEP_OBJECT) == [("(attributes, not JSON)", DEEP_OBJECT)]
    assert _events(DEEP)[0]["name"] == "(events, not JSON)"


def test_the_trace_page_reads_a_score_whose_details_are_no_object() -> None:
    """A stored score's details are untrusted text: a JSON list or number (a plugin's, a hand-written file) reads
    as no details on the trace page, as in a report (`parsed_details`), where it ended the page in an error."""
    from tracevals.ui.trace import _verdicts

    for details in ("[1]", "3", "not json", None, '{"a": ' * 300 + "1" + "}" * 300):
        score = {"evaluator": "plugin", "passed": False, "score": 0.0, "reason": "no", "details": details}
        verdicts, unplaced = _verdicts({}, [score])
        assert verdicts[0]["kinds"] == ["evaluator failed"] and verdicts[0]["findings"] == [] and unplaced == []


def test_a_model_s_arguments_nested_too_deep_are_a_tool_error_not_a_crash() -> None:
    """A model (or a prompt injection) can answer with arguments nested past the parser: `ToolSet.call` hands
    the agent a ToolError it can give back to its model, as for any arguments that are not JSON, and the
    GenAI message converter records them as the model's text."""
    import tracevals
    from tracevals.instrumentation.genai_messages import _arguments

    tools = tracevals.wrap_tools({"lookup": lambda word: word})
    with pytest.raises(tracevals.ToolError, match="arguments are not JSON") as raised:
        tools.call("lookup", DEEP_OBJECT)
    assert raised.value.error_type == "invalid_arguments"
    assert _arguments(DEEP_OBJECT) == DEEP_OBJECT


def test_a_merged_file_whose_marker_nests_too_deep_replaces_nothing() -> None:
    """A footer's list of replaced files is read from the lake's own files, which anyone with write access
    can drop in: nested past the parser, it replaces nothing (every reader lists the hour as if unmerged),
    as any marker that is not JSON, never a traceback for every command on the lake."""
    from tracevals.lake.retention import COMPACTED_NAME, MARKER, superseded

    merged = "spans/date=2026-12-05/hour=10/part-1-aaaa-c00000000.parquet"
    assert COMPACTED_NAME.search(merged.rpartition("/")[2])
    other = "spans/date=2026-12-05/hour=10/part-2-bbbb.parquet"
    named = b'["part-2-bbbb.parquet"]'
    assert superseded([merged, other], lambda path: {MARKER: named}) == {other}  # a marker read as it is
    assert superseded([merged, other], lambda path: {MARKER: DEEP.encode()}) == set()


# Nested past the bound (`json_text.MAX_DEPTH`) but not past the parser: the value parses, and the code that
# reads it walks it by recursion (canonical arguments, argument matching, reports), one to three frames a level.
WITHIN_PARSER = "[" * 500 + "1" + "]" * 500


def test_loads_gives_values_up_to_the_bound_and_no_deeper() -> None:
    from tracevals.model.json_text import MAX_DEPTH

    at_bound = "[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH
    assert loads(at_bound) is not None
    assert loads('{"a": ' * MAX_DEPTH + "1" + "}" * MAX_DEPTH) is not None
    for text in ("[" + at_bound + "]", WITHIN_PARSER, '{"q": ' + WITHIN_PARSER + "}"):
        with pytest.raises(TooDeep, match=f"nested more than {MAX_DEPTH} arrays and objects deep"):
            loads(text)
    wide = "[" + ",".join(["[[1]]"] * 5000) + "]"  # many brackets, shallow: given as it is
    assert len(loads(wide)) == 5000
    assert len(loads(WITHIN_PARSER, max_depth=None)) == 1  # a caller that hands the value on as it is


def test_a_span_value_nested_past_the_bound_is_text_on_every_surface(tmp_path: Path) -> None:
    """A tool's arguments and result nested 500 deep, sent by the Python SDK's OTLP exporter to a real collector
    and read by `tracevals ingest` from a file: `ingest` ended in a RecursionError (the file not read), and so
    did `score` and `report` over the lake. Now each reads the value as text that is not JSON."""
    import signal

    from click.testing import CliRunner
    from fixtures.faults import CollectorProcess, write_config
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tracevals.cli import main
    from tracevals.queries import open_lake

    collected = tmp_path / "collected"
    collector = CollectorProcess(write_config(tmp_path / "otel.yaml", collected))
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=10)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("deep")
    session = {"gen_ai.conversation.id": "s-deep"}
    with tracer.start_as_current_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent", **session}
    ):
        for _ in range(2):  # the same call twice: the retry evaluator reads its identity
            with tracer.start_as_current_span("execute_tool lookup") as span:
                span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", **session})
                span.set_attribute("gen_ai.tool.call.arguments", '{"q": ' + WITHIN_PARSER + "}")
                span.set_attribute("gen_ai.tool.call.result", WITHIN_PARSER)
    provider.shutdown()
    assert collector.stop(signal.SIGTERM) == 0, collector.log

    rows = open_lake(collected).execute("select count(*) from spans where tool_name = 'lookup'").fetchone()
    assert rows == (2,)
    # the same call as an OTLP/JSON file, as an exporter's file or a download from a backend holds it
    export = tmp_path / "export.json"
    export.write_text(json.dumps(_otlp_json_tool_span(WITHIN_PARSER)), encoding="utf-8")
    ingested = tmp_path / "ingested"
    for args in (
        ["ingest", "--lake", str(ingested), str(export)],
        ["score", "--lake", str(ingested), "--since", "2000-01-01"],
        ["score", "--lake", str(collected), "--since", "2000-01-01"],
        ["report", "--lake", str(collected), "--since", "2000-01-01", "--out", str(tmp_path / "r.html")],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0 and result.exception is None, (args, result.output[-500:])
        assert "Traceback" not in result.output


def _otlp_json_tool_span(value: str) -> dict[str, object]:
    def kv(key: str, text: str) -> dict[str, object]:
        return {"key": key, "value": {"stringValue": text}}

    span = {
        "traceId": "ab" * 16, "spanId": "cd" * 8, "name": "execute_tool lookup", "kind": 1,
        "startTimeUnixNano": "1764900000000000000", "endTimeUnixNano": "1764900000005000000",
        "attributes": [kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", "lookup"),
                       kv("gen_ai.conversation.id", "s-file"), kv("gen_ai.tool.call.arguments", '{"q": ' + value + "}"),
                       kv("gen_ai.tool.call.result", value)],
    }  # fmt: skip
    return {
        "resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}]}]
    }
