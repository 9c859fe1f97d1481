"""Provider requests and responses as GenAI-convention messages (`gen_ai.input.messages` & co.).

The conventions' JSON shape: a message is `{"role", "parts": [...]}` (output messages add
`finish_reason`); a part is `{"type": "text", "content"}`, `{"type": "tool_call", "id", "name",
"arguments"}`, `{"type": "tool_call_response", "id", "response"}` or `{"type": "reasoning",
"content"}`; other parts (images, files, audio) keep only their type, never their data. System
instructions given apart from the messages (Anthropic `system`, Responses `instructions`) are a list
of parts in `gen_ai.system_instructions`. Inputs may be dicts or the SDKs' pydantic objects.

Only called with content capture on: nothing here runs for a call whose content is not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

from tracevals.model.json_text import loads as json_loads

Part = dict[str, Any]
Message = dict[str, Any]

_ROLES = {"developer": "system"}  # the conventions' roles are system, user, assistant, tool


def get(obj: Any, key: str) -> Any:
    """A field of a dict or an SDK object, None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _arguments(raw: Any) -> Any:
    """Tool-call arguments as a JSON value when they parse, else as the text the model produced."""
    if isinstance(raw, str):
        try:
            return json_loads(raw)
        except ValueError:  # not JSON, or nested past the parser (`model.json_text`): the model's text
            return raw
    return raw


def _text_parts(content: Any) -> list[Part]:
    """OpenAI content (a string or a list of typed parts) as GenAI parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[Part] = []
    for part in _items(content):
        kind = get(part, "type")
        if kind in ("text", "input_text", "output_text"):
            parts.append({"type": "text", "content": get(part, "text")})
        elif kind == "refusal":
            parts.append({"type": "text", "content": get(part, "refusal")})
        else:
            parts.append({"type": str(kind or "unknown")})
    return parts


# --- OpenAI chat completions -----------------------------------------------------------------------


def _openai_tool_calls(calls: Any) -> list[Part]:
    out = []
    for call in _items(calls):
        fn = get(call, "function")
        out.append(
            {
                "type": "tool_call",
                "id": get(call, "id"),
                "name": get(fn, "name"),
                "arguments": _arguments(get(fn, "arguments")),
            }
        )
    return out


def openai_chat_inputs(messages: Any) -> list[Message]:
    out: list[Message] = []
    for message in _items(messages):
        role = str(get(message, "role") or "user")
        if role == "tool":
            response = get(message, "content")
            part = {"type": "tool_call_response", "id": get(message, "tool_call_id"), "response": response}
            out.append({"role": "tool", "parts": [part]})
            continue
        parts = _text_parts(get(message, "content")) + _openai_tool_calls(get(message, "tool_calls"))
        out.append({"role": _ROLES.get(role, role), "parts": parts})
    return out


def openai_chat_outputs(choices: Any) -> list[Message]:
    out: list[Message] = []
    for choice in _items(choices):
        message = get(choice, "message")
        parts = _text_parts(get(message, "content")) + _openai_tool_calls(get(message, "tool_calls"))
        out.append({"role": "assistant", "parts": parts, "finish_reason": get(choice, "finish_reason") or ""})
    return out


# --- OpenAI Responses ------------------------------------------------------------------------------


def _responses_items(items: Any) -> list[Message]:
    out: list[Message] = []
    for item in _items(items):
        kind = get(item, "type") or "message"
        if kind == "message":
            role = str(get(item, "role") or "user")
            out.append({"role": _ROLES.get(role, role), "parts": _text_parts(get(item, "content"))})
        elif kind == "function_call":
            part = {
                "type": "tool_call",
                "id": get(item, "call_id"),
                "name": get(item, "name"),
                "arguments": _arguments(get(item, "arguments")),
            }
            if out and out[-1]["role"] == "assistant":  # parallel calls belong to one assistant turn
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "assistant", "parts": [part]})
        elif kind == "function_call_output":
            part = {"type": "tool_call_response", "id": get(item, "call_id"), "response": get(item, "output")}
            out.append({"role": "tool", "parts": [part]})
        elif kind == "reasoning":
            summary = " ".join(str(get(s, "text") or "") for s in _items(get(item, "summary")))
            out.append({"role": "assistant", "parts": [{"type": "reasoning", "content": summary}]})
        else:
            out.append({"role": "assistant", "parts": [{"type": str(kind)}]})
    return out


def responses_inputs(value: Any) -> list[Message]:
    if isinstance(value, str):
        return [{"role": "user", "parts": [{"type": "text", "content": value}]}]
    return _responses_items(value)


def responses_outputs(output: Any, finish_reason: str) -> list[Message]:
    parts = [part for message in _responses_items(output) for part in message["parts"]]
    return [{"role": "assistant", "parts": parts, "finish_reason": finish_reason}]


def instructions(value: Any) -> list[Part] | None:
    """`gen_ai.system_instructions` from a string or a list of text blocks; None when absent."""
    if isinstance(value, str):
        return [{"type": "text", "content": value}]
    if not isinstance(value, (list, tuple)):  # None, or an SDK's "not given" sentinel
        return None
    return [anthropic_part(block) for block in value]


def with_instructions(messages: list[Message], system: Any) -> dict[str, Any]:
    """A request's input content: its messages, and the system instructions it gives apart from them
    (Anthropic `system`, Responses `instructions`) when it gives any."""
    values: dict[str, Any] = {gen_ai.GEN_AI_INPUT_MESSAGES: messages}
    parts = instructions(system)
    if parts is not None:
        values[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS] = parts
    return values


def token_count(value: Any) -> int | None:
    """A usage field's count: an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- Anthropic messages ----------------------------------------------------------------------------


def _tool_result(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content
    return [
        {"type": "text", "text": get(b, "text")} if get(b, "type") == "text" else {"type": get(b, "type")}
        for b in _items(content)
    ]


def anthropic_part(block: Any) -> Part:
    kind = get(block, "type")
    if kind == "text":
        return {"type": "text", "content": get(block, "text")}
    if kind == "thinking":
        return {"type": "reasoning", "content": get(block, "thinking")}
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return {
            "type": "tool_call",
            "id": get(block, "id"),
            "name": get(block, "name"),
            "arguments": get(block, "input"),
        }
    if kind == "tool_result":
        return {
            "type": "tool_call_response",
            "id": get(block, "tool_use_id"),
            "response": _tool_result(get(block, "content")),
        }
    return {"type": str(kind or "unknown")}  # images, documents, redacted thinking: the type only


def anthropic_content(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    return [anthropic_part(block) for block in _items(content)]


def anthropic_inputs(messages: Any) -> list[Message]:
    return [
        {"role": str(get(m, "role") or "user"), "parts": anthropic_content(get(m, "content"))} for m in _items(messages)
    ]


def anthropic_outputs(content: Any, stop_reason: str | None) -> list[Message]:
    return [{"role": "assistant", "parts": anthropic_content(content), "finish_reason": stop_reason or ""}]
