"""The OpenAI Responses wire format (`POST /v1/responses`), plain and streamed, over the same engine.

The simulator is stateless: a request carries the whole conversation in `input` (messages,
`function_call` items and `function_call_output` items, as a client sends them back), and
`previous_response_id` is refused with a clear error instead of being silently ignored. The Responses
API has no `seed`; send one through the client's `extra_body` to pick a reproducible conversation.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from tracevals.simulator.conversation import Conversation, Message, ToolCall, ToolSpec
from tracevals.simulator.engine import Completion, SimulatedModel
from tracevals.simulator.errors import SimulatorError
from tracevals.simulator.openai_chat import decode_body
from tracevals.simulator.sse import Event, EventStream, pieces

_ROLES = ("system", "developer", "user", "assistant")
_TEXT_PARTS = ("input_text", "output_text", "text")


def _bad(message: str, param: str | None = None) -> SimulatorError:
    return SimulatorError(message, status=400, param=param)


def _text(content: Any, param: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise _bad("Invalid content: expected a string or an array of content parts.", param)
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, Mapping) or "type" not in part:
            raise _bad("Invalid content part: expected an object with a 'type'.", f"{param}[{i}]")
        if part["type"] in _TEXT_PARTS:
            texts.append(str(part.get("text", "")))
    return "".join(texts)


def _messages(raw: Any, instructions: Any) -> tuple[Message, ...]:
    out: list[Message] = []
    if isinstance(instructions, str) and instructions:
        out.append(Message(role="system", content=instructions))
    if isinstance(raw, str):
        return (*out, Message(role="user", content=raw))
    if not isinstance(raw, list) or not raw:
        raise _bad("Missing required parameter: 'input' (a string or a non-empty array).", "input")
    for i, item in enumerate(raw):
        param = f"input[{i}]"
        if not isinstance(item, Mapping):
            raise _bad("Invalid input item: expected an object.", param)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in _ROLES:
                raise _bad(f"Invalid value for 'role': {role!r}. Supported values are: {', '.join(_ROLES)}.", param)
            out.append(Message(role=role, content=_text(item.get("content"), f"{param}.content")))
        elif kind == "function_call":
            if not all(isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")):
                raise _bad("Invalid function_call: 'call_id', 'name' and 'arguments' must be strings.", param)
            call = ToolCall(id=item["call_id"], name=item["name"], arguments=item["arguments"])
            # One model turn is several output items: its text (a message item) and its calls, sent back in order.
            # Consecutive calls, and calls right after an assistant's text, are one assistant turn (as one chat
            # completions message): a new turn starts only after a user message or a call's output.
            if out and out[-1].role == "assistant":
                last = out.pop()
                out.append(Message(role="assistant", content=last.content, tool_calls=(*last.tool_calls, call)))
            else:
                out.append(Message(role="assistant", tool_calls=(call,)))
        elif kind == "function_call_output":
            if not isinstance(item.get("call_id"), str):
                raise _bad("Missing required parameter: 'call_id' on a function_call_output item.", param)
            out.append(
                Message(role="tool", content=_text(item.get("output"), f"{param}.output"), tool_call_id=item["call_id"])
            )
        elif kind != "reasoning":  # reasoning items are the model's own notes: nothing to read here
            raise _bad(f"Input items of type {kind!r} are not supported by the simulator.", param)
    return tuple(out)


def _tools_not_a_list() -> SimulatorError:
    return _bad("Invalid 'tools': expected an array.", "tools")


def _tool(i: int, tool: Any) -> ToolSpec:
    if not isinstance(tool, Mapping) or tool.get("type") != "function":
        raise _bad("Only tools of type 'function' are supported by the simulator.", f"tools[{i}]")
    if not isinstance(tool.get("name"), str) or not tool["name"]:
        raise _bad("Missing required parameter: 'name'.", f"tools[{i}].name")
    params = ToolSpec.schema(
        tool.get("parameters"),
        lambda: _bad("Invalid 'parameters': expected a JSON Schema object.", f"tools[{i}].parameters"),
    )
    return ToolSpec(name=tool["name"], description=str(tool.get("description") or ""), parameters=params)


def _tool_choice(raw: Any) -> Any:
    """As chat completions spell it, so that a profile honours one form only."""
    if isinstance(raw, Mapping) and raw.get("type") == "function":
        return {"type": "function", "function": {"name": raw.get("name")}}
    return raw


def parse_request(data: Mapping[str, Any]) -> Conversation:
    model = Conversation.requested_model(data, lambda: _bad("Missing required parameter: 'model'.", "model"))
    if data.get("previous_response_id"):
        raise _bad(
            "previous_response_id is not supported: the simulator keeps no state; send the whole "
            "conversation in 'input'.",
            "previous_response_id",
        )
    stream = data.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise _bad("Invalid type for 'stream': expected a boolean.", "stream")
    seed = Conversation.requested_seed(data, lambda: _bad("Invalid type for 'seed': expected an integer.", "seed"))
    return Conversation(
        model=model,
        messages=_messages(data.get("input"), data.get("instructions")),
        tools=ToolSpec.listed(data.get("tools"), _tool, _tools_not_a_list),
        seed=seed,
        tool_choice=_tool_choice(data.get("tool_choice")),
    )


def _message_item(completion: Completion, text: str, status: str = "completed") -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {
        "type": "message",
        "id": f"msg_{completion.key}",
        "status": status,
        "role": "assistant",
        "content": [part] if status == "completed" else [],
    }


def _call_item(call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id.removeprefix('call_')}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def render_response(data: Mapping[str, Any], completion: Completion, status: str = "completed") -> dict[str, Any]:
    turn = completion.turn
    done = status == "completed"
    output: list[dict[str, Any]] = []
    if done and turn.content:
        output.append(_message_item(completion, turn.content))
    if done:
        for call_id, call in zip(completion.tool_call_ids, turn.tool_calls, strict=True):
            output.append(_call_item(call_id, call.name, call.arguments_json()))
    usage = {
        "input_tokens": completion.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": completion.total_tokens,
    }
    return {
        "id": f"resp_{completion.key}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": data.get("instructions"),
        "model": data.get("model"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": data.get("tool_choice", "auto"),
        "tools": list(data.get("tools") or []),
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "metadata": dict(data.get("metadata") or {}),
        "usage": usage if done else None,
    }


def render_events(data: Mapping[str, Any], completion: Completion) -> EventStream:
    """The response as the typed events of a streamed Responses call."""
    events: list[Event] = []

    def emit(name: str, /, **payload: Any) -> None:
        events.append(Event({"type": name, "sequence_number": len(events), **payload}, name))

    turn = completion.turn
    emit("response.created", response=render_response(data, completion, "in_progress"))
    emit("response.in_progress", response=render_response(data, completion, "in_progress"))
    index = 0
    if turn.content:
        item = _message_item(completion, turn.content)
        ids = {"item_id": item["id"], "output_index": index}
        emit("response.output_item.added", output_index=index, item=_message_item(completion, "", "in_progress"))
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        emit("response.content_part.added", **ids, content_index=0, part=empty)
        for piece in pieces(turn.content):
            emit("response.output_text.delta", **ids, content_index=0, delta=piece, logprobs=[])
        emit("response.output_text.done", **ids, content_index=0, text=turn.content, logprobs=[])
        emit("response.content_part.done", **ids, content_index=0, part=item["content"][0])
        emit("response.output_item.done", output_index=index, item=item)
        index += 1
    for call_id, call in zip(completion.tool_call_ids, turn.tool_calls, strict=True):
        item = _call_item(call_id, call.name, call.arguments_json())
        emit("response.output_item.added", output_index=index, item=_call_item(call_id, call.name, "", "in_progress"))
        for piece in pieces(item["arguments"], size=2):
            emit("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece)
        emit(
            "response.function_call_arguments.done",
            item_id=item["id"],
            output_index=index,
            name=call.name,
            arguments=item["arguments"],
        )
        emit("response.output_item.done", output_index=index, item=item)
        index += 1
    emit("response.completed", response=render_response(data, completion))
    return EventStream(tuple(events))


def handle_responses(model: SimulatedModel, body: bytes) -> dict[str, Any] | EventStream:
    data = decode_body(body)
    conversation = parse_request(data)
    completion = model.complete(conversation)
    if data.get("stream"):
        return render_events(data, completion)
    return render_response(data, completion)
