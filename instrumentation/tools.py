"""Tool calls as `execute_tool` spans: the `@tool` decorator and `ToolSet` (`wrap_tools`).

A tool declares its effect (read, write, irreversible); the effect lands on the span so that the
policy and retry evaluators can tell a harmless repeated lookup from a duplicated refund. Arguments
and results are message content and are recorded only when capture is on; a hash of the canonical
arguments is always recorded, so retries and duplicate side effects stay visible without content.
Every call goes through `tool_span.ToolRun`, where an installed `ToolInterceptor` can act.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, cast, overload

from opentelemetry import trace

from tracevals.instrumentation.tool_error import ToolError
from tracevals.instrumentation.tool_span import (
    ToolRun,
    _finish_error,
    args_hash,
    start_tool_span,
    tool_call_id,
)
from tracevals.model import attributes as tv
from tracevals.model.json_text import loads as json_loads

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["ToolError", "ToolSet", "args_hash", "tool", "tool_call_id", "wrap_tools"]


class _Binder:
    """Names a call's positional arguments once per function, not once per call (`inspect` is slow)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        try:
            self.signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.signature = None
        params = list(self.signature.parameters.values()) if self.signature else []
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        self.names = [p.name for p in params if p.kind in positional]
        # A method's `self` is not an argument the model chose, and its repr would make the hash unstable.
        self.skip = 1 if self.names[:1] in (["self"], ["cls"]) else 0

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) <= len(self.names):
            bound = dict(zip(self.names[self.skip :], args[self.skip :], strict=False))  # defaults stay out
            bound.update(kwargs)
            return bound
        try:  # more positional arguments than named parameters: *args
            assert self.signature is not None
            return dict(self.signature.bind_partial(*args, **kwargs).arguments)
        except (TypeError, ValueError, AssertionError):
            return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}


@overload
def tool(effect: F, name: str | None = None) -> F: ...
@overload
def tool(effect: str | None = None, name: str | None = None) -> Callable[[F], F]: ...
def tool(effect: Any = None, name: str | None = None) -> Any:
    """Trace every call of a tool function (sync or async) as an `execute_tool` span; bare or called.

    >>> @tracevals.tool(effect="irreversible")
    ... def delete_order(order_id: str) -> dict: ...
    >>> @tracevals.tool
    ... def get_orders(customer_id: str) -> list: ...

    A tool without a declared effect records none: its effect is unknown (the case's `tool_effects` can
    name it), never assumed to be a harmless read.
    """
    if callable(effect):  # used bare: @tracevals.tool
        return tool()(effect)
    if effect is not None and effect not in tv.TOOL_EFFECTS:
        raise ValueError(f"tool effect {effect!r} is not one of {', '.join(tv.TOOL_EFFECTS)}")

    def decorate(fn: F) -> F:
        if isinstance(fn, (staticmethod, classmethod)):  # `@tool` above `@staticmethod`: the function inside,
            return cast(F, type(fn)(decorate(fn.__func__)))  # kept a static (class) method of its class
        tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__  # a callable object: its class
        binder = _Binder(fn)

        # an object whose `__call__` is a coroutine function is one too (a tool class's instance)
        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                arguments = binder.arguments(args, kwargs)
                return await ToolRun(tool_name, effect, arguments).run_async(lambda: fn(*args, **kwargs))

            async_wrapper.__tracevals_tool__ = (tool_name, effect)  # type: ignore[attr-defined]
            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return ToolRun(tool_name, effect, binder.arguments(args, kwargs)).run(lambda: fn(*args, **kwargs))

        wrapper.__tracevals_tool__ = (tool_name, effect)  # type: ignore[attr-defined]
        return cast(F, wrapper)

    return decorate


class ToolSet(Mapping[str, Callable[..., Any]]):
    """A mapping of tool name to traced function, with `call()` / `acall()` for model-requested calls."""

    def __init__(self, tools: Mapping[str, Callable[..., Any]], effects: Mapping[str, str] | None = None) -> None:
        effects = effects or {}
        self._tools: dict[str, Callable[..., Any]] = {}
        for tool_name, fn in tools.items():
            if hasattr(fn, "__tracevals_tool__"):
                self._tools[tool_name] = fn
            else:
                self._tools[tool_name] = tool(effects.get(tool_name), name=tool_name)(fn)

    def __getitem__(self, key: str) -> Callable[..., Any]:
        return self._tools[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def _resolve(
        self, name: str, arguments: Mapping[str, Any] | str | None
    ) -> tuple[Callable[..., Any], dict[str, Any]]:
        if isinstance(arguments, str):
            try:
                arguments = json_loads(arguments, max_depth=None) if arguments.strip() else {}  # as the tool takes it
            except ValueError as exc:  # not JSON, or nested past the parser (`model.json_text`)
                error = ToolError(f"arguments are not JSON: {exc}", error_type="invalid_arguments")
                raise self._reject(name, error) from None
        if not isinstance(arguments, Mapping) and arguments is not None:
            raise self._reject(name, ToolError("arguments are not a JSON object", error_type="invalid_arguments"))
        fn = self._tools.get(name)
        if fn is None:
            raise self._reject(name, ToolError(f"unknown tool {name!r}", error_type="unknown_tool"))
        return fn, dict(arguments or {})

    def call(self, name: str, arguments: Mapping[str, Any] | str | None, call_id: str | None = None) -> Any:
        """Run tool `name` with the model's arguments (a dict or a JSON string) under its call id.

        An unknown tool or undecodable arguments raise `ToolError` (recorded on a span all the same),
        so the agent can hand the failure back to its model.
        """
        with tool_call_id(call_id):
            fn, kwargs = self._resolve(name, arguments)
            return fn(**kwargs)

    async def acall(self, name: str, arguments: Mapping[str, Any] | str | None, call_id: str | None = None) -> Any:
        """`call()` for async agents: awaits an async tool, calls a sync one directly."""
        with tool_call_id(call_id):
            fn, kwargs = self._resolve(name, arguments)
            result = fn(**kwargs)
            return await result if inspect.isawaitable(result) else result

    def _reject(self, name: str, error: ToolError) -> ToolError:
        span = start_tool_span(name, None, {})
        with trace.use_span(span, end_on_exit=False):
            error.__traceback__ = None
            _finish_error(span, name, {}, error)
        return error


def wrap_tools(tools: Mapping[str, Callable[..., Any]], effects: Mapping[str, str] | None = None) -> ToolSet:
    """Trace a mapping of tool functions; `effects` names each tool's effect (undeclared: unknown)."""
    return ToolSet(tools, effects)
