"""Model-call spans for the `anthropic` client's Messages API: `messages.create`, `.parse` and `.stream`.

`AnthropicInstrumentor` (entry point `tracevals_anthropic`) patches `Messages.create` / `.parse` /
`.stream` and their async twins with wrapt, and the beta API's (`client.beta.messages`) alike. The
SDK's `.stream()` helper bypasses `create`, so it is traced by
handing its stream manager a request function that returns a traced stream.

The `anthropic` SDK (2.x) emits an OTel span of its own for each call (`anthropic.messages.create`).
It is not the right one for tracevals: it keeps the stop reason outside `gen_ai.response.finish_reasons`,
records requested tool-use ids only with its own content mode, follows its own content variable
rather than `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, and knows nothing of tracevals'
redaction. Two spans for one call would count its tokens twice, so while this instrumentor is on, each
call goes through a copy of the client made with the SDK's public `open_telemetry=False` option
(one copy per client, sharing its connection pool). Turn this instrumentor off
(`OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=tracevals_anthropic`) to keep the SDK's own spans instead.
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from tracevals.instrumentation.content import capture_enabled
from tracevals.instrumentation.genai_messages import (
    anthropic_inputs,
    anthropic_outputs,
    get,
    token_count,
    with_instructions,
)
from tracevals.instrumentation.interception import ModelInvocation, current_model_interceptor
from tracevals.instrumentation.model_span import ModelCall, ModelResult
from tracevals.instrumentation.model_wrappers import ModelApi
from tracevals.instrumentation.patching import PatchingInstrumentor
from tracevals.instrumentation.streams import TracedAsyncStream, TracedStream

_log = logging.getLogger(__name__)
PROVIDER = "anthropic"
_MODULE = "anthropic.resources.messages.messages"
_BETA_MODULE = "anthropic.resources.beta.messages.messages"
_quiet: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def message_inputs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return with_instructions(anthropic_inputs(kwargs.get("messages")), kwargs.get("system"))


def _usage(result: ModelResult, usage: Any) -> None:
    if usage is None:
        return
    cache_read = token_count(get(usage, "cache_read_input_tokens"))
    cache_write = token_count(get(usage, "cache_creation_input_tokens"))
    uncached = token_count(get(usage, "input_tokens"))
    if uncached is not None:  # the conventions count every input token, cached ones included
        result.input_tokens = uncached + (cache_read or 0) + (cache_write or 0)
        result.cache_read_tokens, result.cache_creation_tokens = cache_read, cache_write
    output = token_count(get(usage, "output_tokens"))
    if output is not None:
        result.output_tokens = output


def message_result(message: Any) -> ModelResult:
    result = ModelResult(response_model=get(message, "model"), response_id=get(message, "id"))
    _usage(result, get(message, "usage"))
    stop = get(message, "stop_reason")
    if stop:
        result.finish_reasons = [str(stop)]
    content = list(get(message, "content") or [])
    for block in content:
        if get(block, "type") == "tool_use":
            result.tool_call_ids.append(str(get(block, "id")))
            result.tool_call_names.append(str(get(block, "name")))
    if capture_enabled():
        result.output_messages = anthropic_outputs(content, stop)
    return result


class MessageEvents:
    """Accumulates the raw events of a streamed message into the message they describe."""

    def __init__(self) -> None:
        self.message: dict[str, Any] = {"content": []}
        self.usage: dict[str, Any] = {}
        self.capture = capture_enabled()
        self.json: dict[int, list[str]] = {}

    def add(self, event: Any) -> None:
        kind = get(event, "type")
        if kind == "message_start":
            start = get(event, "message")
            self.message.update(id=get(start, "id"), model=get(start, "model"))
            self._merge_usage(get(start, "usage"))
        elif kind == "content_block_start":
            block = get(event, "content_block")
            entry = {"type": get(block, "type"), "id": get(block, "id"), "name": get(block, "name"), "text": ""}
            self.message["content"].append(entry)
        elif kind == "content_block_delta" and self.capture:
            index, delta = get(event, "index") or 0, get(event, "delta")
            if get(delta, "type") == "text_delta" and index < len(self.message["content"]):
                self.message["content"][index]["text"] += get(delta, "text") or ""
            elif get(delta, "type") == "input_json_delta":
                self.json.setdefault(index, []).append(get(delta, "partial_json") or "")
        elif kind == "message_delta":
            self.message["stop_reason"] = get(get(event, "delta"), "stop_reason")
            self._merge_usage(get(event, "usage"))

    def _merge_usage(self, usage: Any) -> None:
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = token_count(get(usage, key))
            if value is not None:  # message_delta's counts are cumulative: the latest wins
                self.usage[key] = value

    def result(self) -> ModelResult:
        from tracevals.model.json_text import loads as json_loads

        for index, chunks in self.json.items():
            if index < len(self.message["content"]):
                try:
                    self.message["content"][index]["input"] = json_loads("".join(chunks) or "{}")
                except ValueError:  # not JSON, or nested past the parser
                    self.message["content"][index]["input"] = "".join(chunks)
        return message_result({**self.message, "usage": self.usage})


def _stream_types() -> tuple[type, ...]:
    import anthropic

    return (anthropic.Stream, anthropic.AsyncStream)


_API = ModelApi(PROVIDER, message_inputs, message_result, MessageEvents, _stream_types)


def _quiet_resource(instance: Any) -> Any:
    """`instance` bound to a copy of its client without the SDK's own span (see the module docstring)."""
    client = getattr(instance, "_client", None)
    if client is None:
        return instance
    try:
        quiet = _quiet.get(client)
        if quiet is None:
            quiet = type(instance)(client.with_options(open_telemetry=False))
            _quiet[client] = quiet
        return quiet
    except Exception:  # an SDK without the option: keep both spans rather than fail the call
        _log.debug("tracevals: cannot turn off the anthropic SDK's own span", exc_info=True)
        return instance


def _send(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], Any]:
    original = getattr(wrapped, "__func__", None)
    if original is None:
        return lambda: wrapped(*args, **kwargs)
    resource = _quiet_resource(instance)
    return lambda: original(resource, *args, **kwargs)


def _operation(wrapped: Any) -> str:
    return f"messages.{getattr(wrapped, '__name__', 'create')}"  # create, parse


def _create(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _API.call(kwargs, _send(wrapped, instance, args, kwargs), _operation(wrapped))


async def _acreate(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return await _API.call_async(kwargs, _send(wrapped, instance, args, kwargs), _operation(wrapped))


def _stream(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    manager = _send(wrapped, instance, args, kwargs)()
    attr = f"_{type(manager).__name__}__api_request"  # the manager's private request function
    request = getattr(manager, attr, None)
    if request is None:
        return manager
    traced_kwargs = {**kwargs, "stream": True}
    if callable(request):

        def traced() -> Any:
            call = ModelCall(PROVIDER, traced_kwargs, message_inputs)
            interceptor = current_model_interceptor()
            try:
                if interceptor is None:
                    raw = request()
                else:  # the model-interception seam, as ModelApi.call has it
                    invocation = ModelInvocation(PROVIDER, "messages.stream", traced_kwargs, call.span, call.waited)
                    raw = interceptor.intercept(invocation, request)
            except BaseException as exc:
                call.fail(exc)
                raise
            return TracedStream(raw, call, MessageEvents())

        setattr(manager, attr, traced)
    else:  # the async manager holds the request's coroutine, awaited on __aenter__

        async def traced_async() -> Any:
            call = ModelCall(PROVIDER, traced_kwargs, message_inputs)
            interceptor = current_model_interceptor()
            try:
                if interceptor is None:
                    raw = await request
                else:
                    invocation = ModelInvocation(PROVIDER, "messages.stream", traced_kwargs, call.span, call.waited)
                    raw = await interceptor.intercept_async(invocation, _awaiting(request))
            except BaseException as exc:
                call.fail(exc)
                raise
            finally:
                if inspect.iscoroutine(request) and inspect.getcoroutinestate(request) == inspect.CORO_CREATED:
                    request.close()  # answered by the interceptor: the request was never sent
            return TracedAsyncStream(raw, call, MessageEvents())

        setattr(manager, attr, traced_async())
    return manager


def _awaiting(request: Any) -> Callable[[], Any]:
    async def proceed() -> Any:
        return await request

    return proceed


class AnthropicInstrumentor(PatchingInstrumentor):
    """Traces the `anthropic` client's `messages.create` / `messages.stream`, sync and async."""

    requires = ("anthropic >= 0.40",)
    # `parse` (structured outputs) posts the request itself, not through `create`; the beta API
    # (`client.beta.messages`: betas, MCP servers, context management) is a resource of its own
    patches = tuple(
        (module, f"{cls}.{method}", wrapper)
        for module in (_MODULE, _BETA_MODULE)
        for cls, wrappers in (("Messages", (_create, _stream)), ("AsyncMessages", (_acreate, _stream)))
        for method, wrapper in (("create", wrappers[0]), ("parse", wrappers[0]), ("stream", wrappers[1]))
    )

    def _forget(self) -> None:
        _quiet.clear()
