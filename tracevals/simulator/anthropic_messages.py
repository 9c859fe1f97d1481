"""The Anthropic Messages wire format (`POST /v1/messages`), plain and streamed, over the same engine.

`tool_use` blocks of earlier assistant turns become the conversation's tool calls, `tool_result`
blocks its tool messages, so a profile written against the provider-neutral `Conversation` answers an
Anthropic client exactly as it answers an OpenAI one. Tool-use ids are the engine's call ids with
Anthropic's `toolu_` prefix. Anthropic has no `seed`; send one through the client's `extra_body`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tracevals.simulator.conversation import Conversation, Message, ToolCall, ToolSpec
from tracevals.simulator.engine import Completion, SimulatedModel
from tracevals.simulator.errors import ModelNotFound, SimulatorError
from tracevals.simulator.openai_chat import decode_body
from tracevals.simulator.sse import Event, EventStream, pieces

_ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error", 413: "request_too_large", 500: "api_error"}
_STOP_REASONS = {"tool_calls": "tool_use", "stop": "end_turn"}


def _bad(message: str, param: str | None = None) -> SimulatorError:
    return SimulatorError(f"{param}: {message}" if param else message, status=400, param=param)


def _block_text(content: Any, param: str) -> str:
    """Text of a `tool_result` content or a `system` value: a string or a list of text blocks."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise _bad("expected a string or an array of content blocks", param)
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text")


def _user(blocks: list[Any], param: str) -> list[Message]:
    results: list[Message] = []
    texts: list[str] = []
    for j, block in enumerate(blocks):
        where = f"{param}.content.{j}"
        if block.get("type") == "tool_result":
            if not isinstance(block.get("tool_use_id"), str):
                raise _bad("Field required: tool_use_id", where)
            content = _block_text(block.get("content"), f"{where}.content")
            results.append(Message(role="tool", content=content, tool_call_id=block["tool_use_id"]))
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    # Tool results answer the previous assistant turn, so they come before any new user text.
    return results + ([Message(role="user", content="".join(texts))] if texts else [])


def _assistant(blocks: list[Any], param: str) -> Message:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for j, block in enumerate(blocks):
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise _bad("tool_use blocks need a string 'id' and 'name'", f"{param}.content.{j}")
            arguments = json.dumps(block.get("input") or {}, sort_keys=True, ensure_ascii=False)
            calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
    return Message(role="assistant", content="".join(texts), tool_calls=tuple(calls))


def _messages(raw: Any, system: Any) -> tuple[Message, ...]:
    if not isinstance(raw, list) or not raw:
        raise _bad("Field required: a non-empty array of messages", "messages")
    out: list[Message] = []
    system_text = _block_text(system, "system")
    if system_text:
        out.append(Message(role="system", content=system_text))
    for i, message in enumerate(raw):
        param = f"messages.{i}"
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            raise _bad("Input should be 'user' or 'assistant'", f"{param}.role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not all(isinstance(b, Mapping) for b in blocks):
            raise _bad("expected a string or an array of content blocks", f"{param}.content")
        if message["role"] == "user":
            out.extend(_user(blocks, param))
        else:
            out.append(_assistant(blocks, param))
    return tuple(out)


def _tools_not_a_list() -> SimulatorError:
    return _bad("Input should be a valid list", "tools")


def _tool(i: int, tool: Any) -> ToolSpec:
    if not isinstance(tool, Mapping) or tool.get("type", "custom") != "custom":
        raise _bad("only custom (client) tools are supported by the simulator", f"tools.{i}")
    if not isinstance(tool.get("name"), str) or not isinstance(tool.get("input_schema"), Mapping):
        raise _bad("Field required: name and input_schema", f"tools.{i}")
    return ToolSpec(tool["name"], str(tool.get("description") or ""), tool["input_schema"])


def _tool_choice(raw: Any) -> Any:
    """As chat completions spell it, so that a profile honours one form only."""
    if not isinstance(raw, Mapping):
        return None
    kind = raw.get("type")
    if kind == "tool":
        return {"type": "function", "function": {"name": raw.get("name")}}
    return {"any": "required"}.get(str(kind), kind)


def parse_request(data: Mapping[str, Any]) -> Conversation:
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("Field required", "model")
    max_tokens = data.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise _bad("Field required: an integer >= 1", "max_tokens")
    if not isinstance(data.get("stream", False), bool):
        raise _bad("Input should be a valid boolean", "stream")
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise _bad("Input should be a valid integer", "seed")
    return Conversation(
        model=model,
        messages=_messages(data.get("messages"), data.get("system")),
        tools=ToolSpec.listed(data.get("tools"), _tool, _tools_not_a_list),
        seed=seed,
        tool_choice=_tool_choice(data.get("tool_choice")),
    )


def _tool_use_id(call_id: str) -> str:
    return f"toolu_{call_id.removeprefix('call_')}"


def _blocks(completion: Completion) -> list[dict[str, Any]]:
    turn = completion.turn
    blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.content}] if turn.content else []
    for call_id, call in zip(completion.tool_call_ids, turn.tool_calls, strict=True):
        blocks.append(
            {"type": "tool_use", "id": _tool_use_id(call_id), "name": call.name, "input": dict(call.arguments)}
        )
    return blocks


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def render_message(conversation: Conversation, completion: Completion) -> dict[str, Any]:
    return {
        "id": f"msg_{completion.key}",
        "type": "message",
        "role": "assistant",
        "model": conversation.model,
        "content": _blocks(completion),
        "stop_reason": _STOP_REASONS[completion.turn.finish_reason],
        "stop_sequence": None,
        "usage": _usage(completion.prompt_tokens, completion.completion_tokens),
    }


def render_events(conversation: Conversation, completion: Completion) -> EventStream:
    """The message as Anthropic's stream: message_start, content blocks with deltas, message_delta, stop."""
    message = render_message(conversation, completion)
    events = [
        Event(
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "usage": _usage(completion.prompt_tokens, 1),
                },
            },
            "message_start",
        ),
        Event({"type": "ping"}, "ping"),
    ]

    def emit(name: str, /, **payload: Any) -> None:
        events.append(Event({"type": name, **payload}, name))

    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in pieces(block["text"]):
                emit("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        else:
            emit("content_block_start", index=index, content_block={**block, "input": {}})
            arguments = json.dumps(block["input"], sort_keys=True, ensure_ascii=False)
            for piece in pieces(arguments, size=2):
                emit("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        emit("content_block_stop", index=index)
    emit(
        "message_delta",
        delta={"stop_reason": message["stop_reason"], "stop_sequence": None},
        usage={"output_tokens": completion.completion_tokens},
    )
    emit("message_stop")
    return EventStream(tuple(events))


def render_error(error: SimulatorError) -> dict[str, Any]:
    kind = "not_found_error" if isinstance(error, ModelNotFound) else _ERROR_TYPES.get(error.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": error.message}}


def handle_messages(model: SimulatedModel, body: bytes) -> dict[str, Any] | EventStream:
    data = decode_body(body)
    conversation = parse_request(data)
    completion = model.complete(conversation)
    if data.get("stream"):
        return render_events(conversation, completion)
    return render_message(conversation, completion)
