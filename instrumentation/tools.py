"""Tool calls as `execute_tool` spans: the `@tool` decorator, `wrap_tools` and `ToolError`.

A tool declares its effect (read, write, irreversible); the effect lands on the span so that the
policy and retry evaluators can tell a harmless repeated lookup from a duplicated refund. Arguments
and results are message content and are recorded only when capture is on; a hash of the canonical
arguments is always recorded, so retries and duplicate side effects stay visible without content.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import inspect
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, cast

from opentelemetry import trace
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tracevals import attributes as tv
from tracevals.instrumentation.content import capture_enabled, to_json

_log = logging.getLogger(__name__)
_TRACER = "tracevals.instrumentation.tools"

F = TypeVar("F", bound=Callable[..., Any])

# The model's tool call id for the call about to run (set by ToolSet.call or `tool_call_id()`).
_call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("tracevals_tool_call_id", default=None)


class ToolError(Exception):
    """A tool failure with the facts a retry policy needs (raise it from a tool).

    >>> raise ToolError("rate limited", error_type="rate_limit", status_code=429,
    ...                 retryable=True, retry_after_s=0.5)
    """

    def __init__(
        self,
        message: str,
        *,
        error_type: str = "tool_error",
        status_code: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after_s = retry_after_s

    def to_dict(self) -> dict[str, Any]:
        """The failure as a tool result an agent can hand back to its model."""
        out: dict[str, Any] = {"error": self.error_type, "message": str(self)}
        if self.status_code is not None:
            out["status"] = self.status_code
        if self.retry_after_s is not None:
            out["retry_after_ms"] = round(self.retry_after_s * 1000)
        out["retryable"] = self.retryable
        return out


def args_hash(arguments: Mapping[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _start(name: str, effect: str, arguments: Mapping[str, Any]) -> Span:
    tracer = trace.get_tracer(_TRACER)
    span = tracer.start_span(f"execute_tool {name}", kind=SpanKind.INTERNAL)
    try:
        span.set_attribute(gen_ai.GEN_AI_OPERATION_NAME, "execute_tool")
        span.set_attribute(gen_ai.GEN_AI_TOOL_NAME, name)
        span.set_attribute(gen_ai.GEN_AI_TOOL_TYPE, "function")
        span.set_attribute(tv.TOOL_EFFECT, effect)
        span.set_attribute(tv.TOOL_ARGS_HASH, args_hash(arguments))
        call_id = _call_id.get()
        if call_id:
            span.set_attribute(gen_ai.GEN_AI_TOOL_CALL_ID, call_id)
        key = arguments.get("idempotency_key")
        if isinstance(key, str) and key:
            span.set_attribute(tv.IDEMPOTENCY_KEY, key)
        if capture_enabled():
            span.set_attribute(gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS, to_json(dict(arguments)))
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not annotate tool span %s", name)
    return span


def _record_error(span: Span, exc: BaseException) -> None:
    try:
        error_type = exc.error_type if isinstance(exc, ToolError) else type(exc).__qualname__
        span.set_attribute("error.type", error_type)
        if isinstance(exc, ToolError):
            span.set_attribute(tv.RETRYABLE, exc.retryable)
            if exc.status_code is not None:
                span.set_attribute("http.response.status_code", exc.status_code)
            if exc.retry_after_s is not None:
                span.set_attribute(tv.RETRY_AFTER_MS, float(exc.retry_after_s * 1000))
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))
    except Exception:
        _log.exception("tracevals: could not record tool error")


def _record_result(span: Span, result: Any) -> None:
    if capture_enabled():
        try:
            span.set_attribute(gen_ai.GEN_AI_TOOL_CALL_RESULT, to_json(result))
        except Exception:
            _log.exception("tracevals: could not record tool result")


def _bound_arguments(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
        return dict(bound.arguments)
    except (TypeError, ValueError):
        return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}


def tool(effect: str = "read", name: str | None = None) -> Callable[[F], F]:
    """Trace every call of a tool function (sync or async) as an `execute_tool` span.

    >>> @tracevals.tool(effect="irreversible")
    ... def delete_order(order_id: str) -> dict: ...
    """
    if effect not in tv.TOOL_EFFECTS:
        raise ValueError(f"tool effect {effect!r} is not one of {', '.join(tv.TOOL_EFFECTS)}")

    def decorate(fn: F) -> F:
        tool_name = name or fn.__name__

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                span = _start(tool_name, effect, _bound_arguments(fn, args, kwargs))
                with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
                    try:
                        result = await fn(*args, **kwargs)
                    except BaseException as exc:
                        _record_error(span, exc)
                        raise
                    _record_result(span, result)
                    return result

            async_wrapper.__tracevals_tool__ = (tool_name, effect)  # type: ignore[attr-defined]
            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            span = _start(tool_name, effect, _bound_arguments(fn, args, kwargs))
            with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    _record_error(span, exc)
                    raise
                _record_result(span, result)
                return result

        wrapper.__tracevals_tool__ = (tool_name, effect)  # type: ignore[attr-defined]
        return cast(F, wrapper)

    return decorate


class tool_call_id:  # lower case: used like a function, `with tool_call_id("call_1"): ...`
    """Tell the next tool span which model tool call (`gen_ai.tool.call.id`) it executes."""

    def __init__(self, call_id: str | None) -> None:
        self._call_id = call_id
        self._token: contextvars.Token[str | None] | None = None

    def __enter__(self) -> None:
        self._token = _call_id.set(self._call_id)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _call_id.reset(self._token)


class ToolSet(Mapping[str, Callable[..., Any]]):
    """A mapping of tool name to traced function, with `call()` for model-requested calls."""

    def __init__(self, tools: Mapping[str, Callable[..., Any]], effects: Mapping[str, str] | None = None) -> None:
        effects = effects or {}
        self._tools: dict[str, Callable[..., Any]] = {}
        for tool_name, fn in tools.items():
            if hasattr(fn, "__tracevals_tool__"):
                self._tools[tool_name] = fn
            else:
                self._tools[tool_name] = tool(effects.get(tool_name, "read"), name=tool_name)(fn)

    def __getitem__(self, key: str) -> Callable[..., Any]:
        return self._tools[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def call(self, name: str, arguments: Mapping[str, Any] | str | None, call_id: str | None = None) -> Any:
        """Run tool `name` with the model's arguments (a dict or a JSON string) under its call id.

        An unknown tool or undecodable arguments raise `ToolError` (recorded on a span all the same),
        so the agent can hand the failure back to its model.
        """
        with tool_call_id(call_id):
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments) if arguments.strip() else {}
                except json.JSONDecodeError as exc:
                    return self._reject(
                        name, ToolError(f"arguments are not JSON: {exc}", error_type="invalid_arguments")
                    )
            arguments = dict(arguments or {})
            fn = self._tools.get(name)
            if fn is None:
                return self._reject(name, ToolError(f"unknown tool {name!r}", error_type="unknown_tool"))
            return fn(**arguments)

    def _reject(self, name: str, error: ToolError) -> Any:
        span = _start(name, "read", {})
        with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
            _record_error(span, error)
        raise error


def wrap_tools(tools: Mapping[str, Callable[..., Any]], effects: Mapping[str, str] | None = None) -> ToolSet:
    """Trace a mapping of tool functions; `effects` names each tool's effect (default read)."""
    return ToolSet(tools, effects)
