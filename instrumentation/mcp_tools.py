"""Tool spans for MCP clients: `ClientSession.call_tool` as an `execute_tool` span.

`MCPInstrumentor` (entry point `tracevals_mcp`) patches `mcp.ClientSession.call_tool` with wrapt, so
every tool call an agent makes through an MCP client (directly or through `mcp.Client`) is traced
like a local tool: the same span, the same content rules, the same interception seam. A result with
`isError` is a failure (`error.type=tool_error`) even though the call returns normally.

A tool's effect comes from, in order: `MCPInstrumentor().instrument(tool_effects={...})`, the tool's
annotations from the session's last `list_tools()` (`readOnlyHint` -> read, `destructiveHint: true`
-> irreversible, `destructiveHint: false` -> write; hints from an untrusted server are only hints,
so an explicit mapping wins), else `default_effect` ("write": an MCP tool can change the world
unless it says otherwise). The model's call id comes from `tracevals.tool_call_id(id)` around the call.
The MCP SDK's own `MCP send tools/call` span, if any, nests beneath this one.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping
from typing import Any

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import SpanKind

from tracevals.instrumentation.genai_messages import get
from tracevals.instrumentation.patching import PatchingInstrumentor
from tracevals.instrumentation.tool_span import ToolRun
from tracevals.model import attributes as tv

_log = logging.getLogger(__name__)
_MODULE = "mcp.client.session"
_EXTRA = {"mcp.method.name": "tools/call", gen_ai.GEN_AI_TOOL_TYPE: "extension"}

# session -> {tool name: effect}, from its tool listings; weak, so a closed session is forgotten.
_listed: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_config: dict[str, Any] = {"tool_effects": {}, "default_effect": "write"}


def effect_of_annotations(annotations: Any) -> str | None:
    if annotations is None:
        return None
    if get(annotations, "read_only_hint") is True:
        return "read"
    destructive = get(annotations, "destructive_hint")
    if destructive is True:
        return "irreversible"
    if destructive is False:
        return "write"
    return None


def _effect(session: Any, name: str) -> str:
    explicit = _config["tool_effects"].get(name)
    if explicit:
        return str(explicit)
    try:
        listed = _listed.get(session, {}).get(name)
    except TypeError:  # a session type that cannot be weakly referenced
        listed = None
    return listed or str(_config["default_effect"])


def _soft_error(result: Any) -> str | None:
    return "tool_error" if get(result, "is_error") is True else None


def _bind(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    name = kwargs.get("name", args[0] if args else "unknown")
    arguments = kwargs.get("arguments", args[1] if len(args) > 1 else None)
    return str(name), dict(arguments or {}) if isinstance(arguments, Mapping) else {}


async def _call_tool(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    name, arguments = _bind(args, kwargs)
    run = ToolRun(name, _effect(instance, name), arguments, SpanKind.CLIENT, _EXTRA, _soft_error)
    return await run.run_async(lambda: wrapped(*args, **kwargs))


async def _list_tools(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    result = await wrapped(*args, **kwargs)
    try:
        effects = _listed.setdefault(instance, {})
        for tool in get(result, "tools") or []:
            effect = effect_of_annotations(get(tool, "annotations"))
            if effect is not None:
                effects[str(get(tool, "name"))] = effect
    except Exception:  # telemetry never raises into the host program
        _log.debug("tracevals: could not read MCP tool annotations", exc_info=True)
    return result


class MCPInstrumentor(PatchingInstrumentor):
    """Traces `mcp.ClientSession.call_tool` as `execute_tool` spans.

    >>> MCPInstrumentor().instrument(tool_effects={"refund": "irreversible"}, default_effect="write")
    """

    requires = ("mcp >= 1.2",)
    patches = ((_MODULE, "ClientSession.call_tool", _call_tool), (_MODULE, "ClientSession.list_tools", _list_tools))

    def _configure(self, **kwargs: Any) -> None:
        effects = dict(kwargs.get("tool_effects") or {})
        default = kwargs.get("default_effect", "write")
        for effect in (*effects.values(), default):
            if effect not in tv.TOOL_EFFECTS:
                raise ValueError(f"tool effect {effect!r} is not one of {', '.join(tv.TOOL_EFFECTS)}")
        _config.update(tool_effects=effects, default_effect=default)

    def _forget(self) -> None:
        _listed.clear()
