"""The Gemini API wire format (`POST /v1beta/models/{model}:generateContent`, and `:streamGenerateContent`
with `alt=sse`), over the same engine: what the `google-genai` SDK speaks to `http_options.base_url`.

`contents` with role `model` are assistant messages (their `functionCall` parts the conversation's tool
calls), `functionResponse` parts tool messages; `systemInstruction` is the system message and
`tools[].functionDeclarations` the tools. The model is named by the URL. A function call is answered as
the Gemini Developer API answers it: `{"name", "args"}`, without an `id` (a client that sends one back on
its `functionResponse` is matched by it; one that does not, by name, in the order the calls were made).
The stream is the same response cut into chunks, each a whole `GenerateContentResponse`: text in pieces,
each function call whole, the finish reason and usage on the last chunk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import parse_qs

from tracevals.simulator.conversation import Conversation, Message, ToolCall, ToolSpec
from tracevals.simulator.engine import Completion, SimulatedModel
from tracevals.simulator.errors import ModelNotFound, SimulatorError
from tracevals.simulator.openai_chat import decode_body
from tracevals.simulator.sse import Event, EventStream, pieces

# The paths of the two methods: the model is a path segment (`models/{model}:generateContent`).
PATH = re.compile(
    r"^/(?:v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)
_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "INVALID_ARGUMENT", 413: "INVALID_ARGUMENT",
           500: "INTERNAL"}  # fmt: skip


def _bad(message: str, param: str | None = None) -> SimulatorError:
    return SimulatorError(f"Invalid JSON payload received. {param}: {message}" if param else message, param=param)


def _parts(content: Any, param: str) -> list[Mapping[str, Any]]:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        raise _bad("expected an object with an array of parts", param)
    return parts


def _call_id(message_index: int, call_index: int) -> str:
    """The id a call without one is known by here: where it was made."""
    return f"call_{message_index}_{call_index}"


def _model_turn(parts: list[Mapping[str, Any]], param: str, index: int) -> Message:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for j, part in enumerate(parts):
        if isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
        call = part.get("functionCall")
        if call is not None:
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                raise _bad("a functionCall needs a string 'name'", f"{param}.parts[{j}].functionCall")
            arguments = json.dumps(call.get("args") or {}, sort_keys=True, ensure_ascii=False)
            calls.append(ToolCall(id=str(call.get("id") or _call_id(index, len(calls))), name=call["name"],
                                  arguments=arguments))  # fmt: skip
    return Message(role="assistant", content="".join(texts), tool_calls=tuple(calls))


def _answered(parts: list[Mapping[str, Any]], param: str, asked: list[ToolCall]) -> tuple[list[Message], str]:
    """A user turn's function responses (each the tool message of the call it answers: by `id`, else the first
    call of its name not answered yet) and its text."""
    open_calls = list(asked)
    results: list[Message] = []
    texts: list[str] = []
    for j, part in enumerate(parts):
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        response = part.get("functionResponse")
        if response is None:
            continue
        if not isinstance(response, Mapping) or not isinstance(response.get("name"), str):
            raise _bad("a functionResponse needs a string 'name'", f"{param}.parts[{j}].functionResponse")
        wanted = response.get("id")
        call = next((c for c in open_calls if (c.id == wanted if wanted else c.name == response["name"])), None)
        if call is not None:
            open_calls.remove(call)
        call_id = call.id if call is not None else str(wanted or response["name"])
        body = response.get("response")
        content = body if isinstance(body, str) else json.dumps(body, sort_keys=True, ensure_ascii=False)
        results.append(Message(role="tool", content=content, tool_call_id=call_id))
    return results, "".join(texts)


def _messages(raw: Any, system: Any) -> tuple[Message, ...]:
    if not isinstance(raw, list) or not raw:
        raise _bad("Field required: a non-empty array of contents", "contents")
    out: list[Message] = []
    if system is not None:
        instruction = "".join(str(p.get("text", "")) for p in _parts(system, "systemInstruction"))
        if instruction:
            out.append(Message(role="system", content=instruction))
    asked: list[ToolCall] = []
    for i, content in enumerate(raw):
        param = f"contents[{i}]"
        if not isinstance(content, Mapping):
            raise _bad("expected a Content object ({role, parts})", param)
        role = content.get("role", "user")
        if role not in ("user", "model", "function", "tool"):
            raise _bad("role must be 'user' or 'model'", f"{param}.role")
        parts = _parts(content, param)
        if role == "model":
            message = _model_turn(parts, param, i)
            out.append(message)
            asked = list(message.tool_calls)
            continue
        # tool results answer the previous model turn, so they come before any new user text
        results, text = _answered(parts, param, asked)
        out.extend(results)
        if text:
            out.append(Message(role="user", content=text))
        asked = []
    return tuple(out)


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _bad("expected an array of tools", "tools")
    specs: list[ToolSpec] = []
    for i, tool in enumerate(raw):
        declared = tool.get("functionDeclarations", []) if isinstance(tool, Mapping) else None
        if not isinstance(declared, list):
            raise _bad("expected an array of function declarations", f"tools[{i}].functionDeclarations")
        for j, function in enumerate(declared):
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                raise _bad("a function declaration needs a string 'name'", f"tools[{i}].functionDeclarations[{j}]")
            where = f"tools[{i}].functionDeclarations[{j}].parameters"
            parameters = function.get("parameters", function.get("parametersJsonSchema"))
            schema = ToolSpec.schema(parameters, partial(_bad, "parameters must be a schema object", where))
            specs.append(ToolSpec(function["name"], str(function.get("description") or ""), schema))
    return tuple(specs)


def _tool_choice(config: Any) -> Any:
    """`toolConfig.functionCallingConfig.mode` as chat completions spell it (a profile honours one form only)."""
    calling = config.get("functionCallingConfig") if isinstance(config, Mapping) else None
    mode = str(calling.get("mode", "")).upper() if isinstance(calling, Mapping) else ""
    return {"ANY": "required", "NONE": "none", "AUTO": "auto"}.get(mode)


def parse_request(model: str, data: Mapping[str, Any]) -> Conversation:
    config = data.get("generationConfig")
    seed = config.get("seed") if isinstance(config, Mapping) else None
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise _bad("Invalid value: expected an integer", "generationConfig.seed")
    return Conversation(
        model=model,
        messages=_messages(data.get("contents"), data.get("systemInstruction")),
        tools=_tools(data.get("tools")),
        seed=seed,
        tool_choice=_tool_choice(data.get("toolConfig")),
    )


def _usage(completion: Completion) -> dict[str, int]:
    return {
        "promptTokenCount": completion.prompt_tokens,
        "candidatesTokenCount": completion.completion_tokens,
        "totalTokenCount": completion.total_tokens,
    }


def _call_parts(completion: Completion) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": c.name, "args": dict(c.arguments)}} for c in completion.turn.tool_calls]


def render_response(conversation: Conversation, completion: Completion) -> dict[str, Any]:
    text = completion.turn.content
    parts = ([{"text": text}] if text else []) + _call_parts(completion)
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": _usage(completion),
        "modelVersion": conversation.model,
        "responseId": completion.key,
    }


def render_events(conversation: Conversation, completion: Completion) -> EventStream:
    """The response as Gemini streams it: `data:` lines of whole responses, the usage and finish on the last."""
    chunks = [[{"text": piece}] for piece in pieces(completion.turn.content or "")]
    chunks = (chunks + [[part] for part in _call_parts(completion)]) or [[]]
    events = []
    for i, parts in enumerate(chunks, start=1):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": conversation.model,
                                 "responseId": completion.key}  # fmt: skip
        if i == len(chunks):
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = _usage(completion)
        events.append(Event(chunk))
    return EventStream(tuple(events))


def render_error(error: SimulatorError) -> dict[str, Any]:
    status = "NOT_FOUND" if isinstance(error, ModelNotFound) else _STATUS.get(error.status, "INVALID_ARGUMENT")
    return {"error": {"code": error.status, "message": error.message, "status": status}}


def handle(model: SimulatedModel, body: bytes, match: re.Match[str], query: str) -> dict[str, Any] | EventStream:
    streamed = match["method"] == "streamGenerateContent"
    if streamed and "sse" not in parse_qs(query).get("alt", []):
        raise _bad("the simulator streams server-sent events only: add ?alt=sse", "alt")
    conversation = parse_request(match["model"], decode_body(body))
    completion = model.complete(conversation)
    if streamed:
        return render_events(conversation, completion)
    return render_response(conversation, completion)
