"""Framework attribute families that fill canonical columns the four dialects leave empty.

Agent frameworks record what the GenAI conventions do not (yet) carry under their own keys, often
whatever the content-capture setting says: Google ADK puts tool arguments and responses in
`gcp.vertex.agent.tool_call_args` / `tool_response` and its session in `gcp.vertex.agent.session_id`.
A rule fills a column that is still empty after the dialect rules. It overrides a dialect value in one
case only: when the framework is known to write a placeholder there instead of a value (ADK writes
`<not specified>` as the tool call id of a call that raised), because a placeholder is not data.

Message content (ADK's `gcp.vertex.agent.llm_request` / `llm_response`) has no canonical column; the
`message_parts` view reads it (see `queries/views/`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

Rule = Callable[[Mapping[str, Any], str, dict[str, Any]], None]

# What ADK writes where it has no value (a tool that raised has no call id and no response).
ADK_PLACEHOLDERS = frozenset({"<not specified>", "N/A"})
# ADK's span for a parallel batch of tool calls: it repeats the responses of the calls it merges, so it
# is bookkeeping, not a call of its own.
ADK_MERGED_TOOL_NAME = "(merged tools)"


def _fill(columns: dict[str, Any], key: str, value: Any) -> None:
    if columns.get(key) is None and value is not None and value != "":
        columns[key] = value


def adk_tool_response(raw: Any) -> Any:
    """A tool's result as the tool returned it, from ADK's `tool_response` attribute.

    ADK wraps a result that is not a dict as `{"result": value}` and writes `{"result": "<not specified>"}`
    when the tool raised; both unwrap (to the value, and to None).

    >>> adk_tool_response('{"result": null}') is None, adk_tool_response('{"city": "Paris"}')
    (True, {'city': 'Paris'})
    """
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return None if raw in ADK_PLACEHOLDERS else raw
    if isinstance(value, dict) and list(value) == ["result"]:
        value = value["result"]
    if isinstance(value, str) and value in ADK_PLACEHOLDERS:
        return None
    return value


def google_adk(attrs: Mapping[str, Any], name: str, columns: dict[str, Any]) -> None:
    """Google ADK (`gcp.vertex.agent.*`)."""
    if not any(key.startswith("gcp.vertex.agent.") for key in attrs):
        return
    _fill(columns, "session_id", attrs.get("gcp.vertex.agent.session_id"))
    if columns.get("kind") != "tool":
        return
    if columns.get("tool_name") == ADK_MERGED_TOOL_NAME:
        columns["kind"] = "other"
        return
    if columns.get("tool_call_id") in ADK_PLACEHOLDERS:
        columns["tool_call_id"] = None
    args = attrs.get("gcp.vertex.agent.tool_call_args")
    if args not in ADK_PLACEHOLDERS:
        _fill(columns, "tool_args", args)
    if "gcp.vertex.agent.tool_response" in attrs and columns.get("tool_result") is None:
        columns["tool_result"] = adk_tool_response(attrs["gcp.vertex.agent.tool_response"])


RULES: list[Rule] = [google_adk]


def apply_framework_rules(attrs: Mapping[str, Any], name: str, columns: dict[str, Any]) -> None:
    for rule in RULES:
        rule(attrs, name, columns)
