"""The OpenAI chat-completions wire format: request JSON -> `Conversation`, `Completion` -> response JSON.

Validation is as strict as the real API where a client bug would otherwise go unnoticed (a tool
message without `tool_call_id`, a malformed assistant tool call) and lenient where the simulator has
nothing to do with a field (temperature, max_tokens ... are accepted and ignored). `stream: true`
renders the same completion as `chat.completion.chunk` events; `stream_options.include_usage` adds
the final usage chunk, as the real API does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from tracevals.simulator.conversation import Conversation, Message, ToolCall, ToolSpec
from tracevals.simulator.engine import Completion, SimulatedModel
from tracevals.simulator.errors import SimulatorError
from tracevals.simulator.sse import DONE, Event, EventStream, pieces

ROLES = ("system", "developer", "user", "assistant", "tool")
OWNER = "tracevals-simulator"
FINGERPRINT = "fp_tracevals_sim_1"


def _bad(message: str, param: str | None = None) -> SimulatorError:
    return SimulatorError(message, status=400, param=param)


def decode_body(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body.decode("utf-8")) if body.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(f"We could not parse the JSON body of your request: {exc}") from None
    if not isinstance(data, dict):
        raise _bad("The request body must be a JSON object.")
    return data


def _text(content: Any, param: str) -> str:
    """Message content as text: a string, null, or a list of parts (text parts are kept)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if not isinstance(part, Mapping) or "type" not in part:
                raise _bad("Invalid content part: expected an object with a 'type'.", f"{param}[{i}]")
            if part["type"] == "text":
                texts.append(str(part.get("text", "")))
        return "".join(texts)
    raise _bad("Invalid content: expected a string, null or an array of content parts.", param)


def _tool_calls(raw: Any, param: str) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _bad("Invalid 'tool_calls': expected an array.", param)
    calls = []
    for i, call in enumerate(raw):
        where = f"{param}[{i}]"
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(call.get("id"), str):
            raise _bad("Invalid tool call: expected an object with 'id' and 'function'.", where)
        if not isinstance(fn.get("name"), str) or not isinstance(fn.get("arguments", ""), str):
            raise _bad("Invalid tool call: 'function.name' and 'function.arguments' must be strings.", where)
        calls.append(ToolCall(id=call["id"], name=fn["name"], arguments=fn.get("arguments", "")))
    return tuple(calls)


def _message(raw: Any, i: int) -> Message:
    param = f"messages[{i}]"
    if not isinstance(raw, Mapping):
        raise _bad("Invalid message: expected an object.", param)
    role = raw.get("role")
    if role not in ROLES:
        raise _bad(f"Invalid value for 'role': {role!r}. Supported values are: {', '.join(ROLES)}.", param)
    tool_call_id = raw.get("tool_call_id")
    if role == "tool" and not isinstance(tool_call_id, str):
        raise _bad("Missing required parameter: 'tool_call_id' on a message with role 'tool'.", param)
    return Message(
        role=role,
        content=_text(raw.get("content"), f"{param}.content"),
        tool_calls=_tool_calls(raw.get("tool_calls"), f"{param}.tool_calls") if role == "assistant" else (),
        tool_call_id=tool_call_id if role == "tool" else None,
    )


def _tools_not_a_list() -> SimulatorError:
    return _bad("Invalid 'tools': expected an array.", "tools")


def _tool(i: int, tool: Any) -> ToolSpec:
    fn = tool.get("function") if isinstance(tool, Mapping) else None
    if not isinstance(tool, Mapping) or tool.get("type") != "function" or not isinstance(fn, Mapping):
        raise _bad("Invalid tool: expected {'type': 'function', 'function': {...}}.", f"tools[{i}]")
    if not isinstance(fn.get("name"), str) or not fn["name"]:
        raise _bad("Missing required parameter: 'function.name'.", f"tools[{i}].function.name")
    params = ToolSpec.schema(
        fn.get("parameters"),
        lambda: _bad("Invalid 'parameters': expected a JSON Schema object.", f"tools[{i}].function.parameters"),
    )
    return ToolSpec(name=fn["name"], description=str(fn.get("description", "")), parameters=params)


def parse_request(data: Mapping[str, Any]) -> Conversation:
    model = Conversation.requested_model(data, lambda: _bad("Missing required parameter: 'model'.", "model"))
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("Missing required parameter: 'messages' (a non-empty array).", "messages")
    stream_flags(data)
    if data.get("n", 1) != 1:
        raise _bad("Only n=1 is supported by the simulator.", "n")
    seed = Conversation.requested_seed(data, lambda: _bad("Invalid type for 'seed': expected an integer.", "seed"))
    return Conversation(
        model=model,
        messages=tuple(_message(m, i) for i, m in enumerate(messages)),
        tools=ToolSpec.listed(data.get("tools"), _tool, _tools_not_a_list),
        seed=seed,
        tool_choice=data.get("tool_choice"),
    )


def stream_flags(data: Mapping[str, Any]) -> tuple[bool, bool]:
    """(stream, include_usage), validated as the real API does."""
    stream = data.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise _bad("Invalid type for 'stream': expected a boolean.", "stream")
    options = data.get("stream_options")
    if options is not None and not stream:
        raise _bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")
    if options is not None and not isinstance(options, Mapping):
        raise _bad("Invalid type for 'stream_options': expected an object.", "stream_options")
    return bool(stream), bool(options and options.get("include_usage"))


def _usage(completion: Completion) -> dict[str, int]:
    return {
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "total_tokens": completion.total_tokens,
    }


def render_chunks(conversation: Conversation, completion: Completion, include_usage: bool) -> EventStream:
    """The completion as the chunks of a streamed response, ending with `[DONE]`."""
    turn = completion.turn
    base = {
        "id": completion.response_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": conversation.model,
        "system_fingerprint": FINGERPRINT,
    }
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> Event:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return Event({**base, "choices": [choice], **extra})

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": piece}) for piece in pieces(turn.content or "")]
    for i, (call_id, call) in enumerate(zip(completion.tool_call_ids, turn.tool_calls, strict=True)):
        head = {"index": i, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        events.append(chunk({"tool_calls": [head]}))
        for piece in pieces(call.arguments_json(), size=2):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(chunk({}, turn.finish_reason))
    if include_usage:
        events.append(Event({**base, "choices": [], "usage": _usage(completion)}))
    events.append(Event(DONE))
    return EventStream(tuple(events))


def render_completion(conversation: Conversation, completion: Completion) -> dict[str, Any]:
    turn = completion.turn
    message: dict[str, Any] = {"role": "assistant", "content": turn.content, "refusal": None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
            for call_id, c in zip(completion.tool_call_ids, turn.tool_calls, strict=True)
        ]
    return {
        "id": completion.response_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": conversation.model,
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": turn.finish_reason}],
        "usage": _usage(completion),
    }


def render_error(error: SimulatorError) -> dict[str, Any]:
    return {"error": {"message": error.message, "type": error.error_type, "param": error.param, "code": error.code}}


def handle_chat(model: SimulatedModel, body: bytes) -> dict[str, Any] | EventStream:
    data = decode_body(body)
    conversation = parse_request(data)
    stream, include_usage = stream_flags(data)
    completion = model.complete(conversation)
    if stream:
        return render_chunks(conversation, completion, include_usage)
    return render_completion(conversation, completion)


def handle_models(model: SimulatedModel, body: bytes) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": name, "object": "model", "created": 0, "owned_by": OWNER} for name in model.registry.names()],
    }
