"""The reference order-support agent: a plain tool-calling loop over the OpenAI chat API.

    order_support_agent(input, ctx)   # the agent contract: (str, AttemptContext) -> str

It is the agent a team would write first, and deliberately nothing more: ask the model, run every tool
call it asks for, feed back results or structured errors, stop at its answer or after
`MAX_MODEL_CALLS`. Its reliability is therefore the model's, which is what the demo measures.
`ctx.settings` carries `base_url` and `model` (the simulated server and a profile), optionally
`api_key`.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import openai

import tracevals
from tracevals.demo.tool_messages import encode_error, encode_result
from tracevals.demo.tool_schemas import TOOL_SCHEMAS
from tracevals.demo.world import IDEMPOTENT_TOOLS, TOOL_EFFECTS, OrderWorld
from tracevals.model.attempt import AttemptContext

AGENT_NAME = "order_support"
MAX_MODEL_CALLS = 10
OUT_OF_BUDGET = (
    f"I could not finish this request within {MAX_MODEL_CALLS} model calls; a human should take it from here."
)


def system_prompt(ctx: AttemptContext) -> str:
    return (
        f"You are an order-support agent. Today is {ctx.now.date().isoformat()}. "
        "Look a customer up with search_customer and use the customer_id it returns; pass dates as "
        "YYYY-MM-DD. If a tool fails with a 429, wait retry_after_ms before calling it again. Never pick "
        "one of several matching customers or orders yourself, never delete an order or change many "
        "orders at once without a human: call handoff_to_human with what is done, what is pending and "
        "the candidates. Only say an action succeeded if its tool call succeeded."
    )


class OperationKeys:
    """Idempotency keys, one per intended write: a re-sent call (same tool and arguments, the earlier
    try failed) keeps its key, so the service can deduplicate it; the same call again after it
    succeeded is a new operation and gets a new key, so a duplicate side effect stays a duplicate
    (in the world and in the trace) instead of being hidden by the key."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._done: Counter[tuple[str, str]] = Counter()

    @staticmethod
    def _digest(arguments: dict[str, Any]) -> str:
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def key(self, tool: str, arguments: dict[str, Any]) -> str:
        digest = self._digest(arguments)
        return f"{self.base}:{tool}:{digest}:{self._done[(tool, digest)] + 1}"

    def succeeded(self, tool: str, arguments: dict[str, Any]) -> None:
        self._done[(tool, self._digest(arguments))] += 1


def _assistant_message(message: Any) -> dict[str, Any]:
    # Plain dicts, not the SDK's objects: the conversation is what instrumentation records as content.
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    calls = [c for c in message.tool_calls or [] if getattr(c, "function", None) is not None]
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in calls
        ]
    return out


def _execute(tools: tracevals.ToolSet, keys: OperationKeys, call_id: str, name: str, raw_args: str) -> str:
    arguments: dict[str, Any] | str = raw_args
    parsed: dict[str, Any] | None = None
    if name in IDEMPOTENT_TOOLS:
        try:
            decoded = json.loads(raw_args or "{}")
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict):
            parsed = decoded
            arguments = {**decoded, "idempotency_key": keys.key(name, decoded)}
    try:
        result = tools.call(name, arguments, call_id=call_id)
    except Exception as exc:  # whatever a tool raised goes back to the model, which decides what next
        return encode_error(exc)
    if parsed is not None:
        keys.succeeded(name, parsed)
    return encode_result(result)


def run_agent(input: str, ctx: AttemptContext, world: OrderWorld) -> str:
    """The agent loop against a given world (tests pass their own to inspect its side effects)."""
    missing = [k for k in ("base_url", "model") if not ctx.settings.get(k)]
    if missing:
        raise ValueError(
            f"ctx.settings lacks {' and '.join(missing)}: pass the model endpoint, e.g. "
            "base_url=SimulatedModelServer().start().base_url, model='order-support-baseline'"
        )
    tools = tracevals.wrap_tools(world.tools(), effects=TOOL_EFFECTS)
    keys = OperationKeys(ctx.idempotency_key)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(ctx)},
        {"role": "user", "content": input},
    ]
    client = openai.OpenAI(
        base_url=str(ctx.settings["base_url"]), api_key=str(ctx.settings.get("api_key", "sim")), max_retries=0
    )
    with tracevals.session(ctx.session_id), tracevals.agent(AGENT_NAME), client:
        for _ in range(MAX_MODEL_CALLS):
            response = client.chat.completions.create(
                model=str(ctx.settings["model"]),
                messages=messages,  # type: ignore[arg-type]
                tools=TOOL_SCHEMAS,  # type: ignore[arg-type]
                seed=ctx.seed,
            )
            message = response.choices[0].message
            assistant = _assistant_message(message)
            messages.append(assistant)
            if "tool_calls" not in assistant:
                return message.content or ""
            for call in assistant["tool_calls"]:
                fn = call["function"]
                content = _execute(tools, keys, call["id"], fn["name"], fn["arguments"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return OUT_OF_BUDGET


def order_support_agent(input: str, ctx: AttemptContext) -> str:
    """The agent contract: a fresh world per attempt. Faults, prompt injections and replay come from
    the harness, inside the tool wrapper (`tracevals.harness.interceptor`), not from the world."""
    return run_agent(input, ctx, OrderWorld())
