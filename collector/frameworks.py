"""Framework attribute families that fill canonical columns the four dialects leave empty.

Agent frameworks record what the GenAI conventions do not (yet) carry under their own keys, often
whatever the content-capture setting says: Google ADK puts tool arguments and responses in
`gcp.vertex.agent.tool_call_args` / `tool_response` and its session in `gcp.vertex.agent.session_id`.
Each rule only fills a column that is still empty after the dialect rules; it never overrides them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Rule = Callable[[Mapping[str, Any], str, dict[str, Any]], None]


def _fill(columns: dict[str, Any], key: str, value: Any) -> None:
    if columns.get(key) is None and value is not None and value != "":
        columns[key] = value


def google_adk(attrs: Mapping[str, Any], name: str, columns: dict[str, Any]) -> None:
    """Google ADK (`gcp.vertex.agent.*`)."""
    if not any(key.startswith("gcp.vertex.agent.") for key in attrs):
        return
    _fill(columns, "session_id", attrs.get("gcp.vertex.agent.session_id"))
    if columns.get("kind") == "tool":
        _fill(columns, "tool_args", attrs.get("gcp.vertex.agent.tool_call_args"))
        _fill(columns, "tool_result", attrs.get("gcp.vertex.agent.tool_response"))


RULES: list[Rule] = [google_adk]


def apply_framework_rules(attrs: Mapping[str, Any], name: str, columns: dict[str, Any]) -> None:
    for rule in RULES:
        rule(attrs, name, columns)
