"""JSON nested past what the parser recurses into is text that is not JSON, on every surface that reads it:
a span value shown or scored (no traceback, no lost command), a task file or a config (one line naming the
file). `json.loads` raises RecursionError there, which is no ValueError (`tracevals.model.json_text`)."""

from __future__ import annotations

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


def test_the_trace_page_shows_deep_attributes_as_text() -> None:
    from tracevals.ui.trace import _attributes, _events

    assert _attributes(DEEP_OBJECT) == [("(attributes, not JSON)", DEEP_OBJECT)]
    assert _events(DEEP)[0]["name"] == "(events, not JSON)"


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
