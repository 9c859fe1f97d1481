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
