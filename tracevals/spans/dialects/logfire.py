"""Pydantic Logfire's own spans (`logfire.span_type`, `logfire.msg_template`, `code.function`): a function
instrumented with `@logfire.instrument` or a `logfire.span(...)` is a span named by its message template, its
arguments as top-level attributes (listed in `logfire.json_schema`) and, with `record_return`, its value in
`return`. Nothing marks a tool or an agent as such: a Logfire span that names an `agent_name` is the agent's run,
and an instrumented function (`code.function`) that no GenAI convention reads (precedence after them) is a tool the
agent called, named by its span. Logfire's default scrubbing writes `[Scrubbed due to '<pattern>']` where a value
matched (a `session.id` among them): a declared placeholder of the rules for every stack.

Logfire's bridge of the OpenAI Agents SDK's tracing (`logfire.instrument_openai_agents()`) writes Logfire spans
too, every one with a `code.function` (where the run was started), named by their templates: `OpenAI Agents
trace: {name}` (the run, its `group_id` the conversation), `Task: ...` and `Turn {turn} for agent ...` (the SDK's
own task and turn spans, `sdk_span_type`), `Agent run: {name!r}` (the agent, `name`), `Chat completion with
{gen_ai.request.model!r}` (a model call: the request in `request_data`, the answer's messages in `output`, usage
in `gen_ai.usage.*`; on the Responses API `Responses API with ...`, the input items in `raw_input`, the Response in
`response`), `Function: {name}` (a tool: `name`, `input`, `output`) and `Handoff: {from_agent} →
{to_agent}`. Their templates decide their kind before the rules above."""

from __future__ import annotations

from tracevals.spans.declare import REQUEST_MESSAGES, RESPONSE_MESSAGES, By, Dialect, Key, Messages

_AGENT_RUN = r"Agent run: "
_FUNCTION = r"Function: "

DIALECT = Dialect(
    "logfire",
    "Pydantic Logfire's spans: an agent_name names the agent's run, an instrumented function is a tool",
    recognise_keys=("logfire.span_type",),
    kind=(
        # the OpenAI Agents SDK's spans as Logfire's bridge writes them
        By(
            "logfire.msg_template",
            {
                "Chat completion with {gen_ai.request.model!r}": "llm",
                "Responses API with {gen_ai.request.model!r}": "llm",
                "Function: {name}": "tool",
                "Agent run: {name!r}": "agent",
                "OpenAI Agents trace: {name}": "chain",
                "Handoff: {from_agent} → {to_agent}": "other",
            },
            otherwise=None,
        ),
        By("sdk_span_type", {"task": "chain", "turn": "chain"}, otherwise=None),
        By("agent_name", kind="agent"),
        By("code.function", kind="tool"),
    ),
    columns={
        "agent_name": ("agent_name", Key("name", on_names=_AGENT_RUN)),
        "session_id": (Key("group_id", on_names=r"OpenAI Agents trace: "),),
    },
    tool_columns={
        "tool_name": (Key("name", on_names=_FUNCTION),),
        "tool_args": (Key("input", envelope=True, on_names=_FUNCTION),),
        "tool_result": ("return", Key("output", envelope=True, on_names=_FUNCTION)),
    },
    messages=(
        # Chat Completions: the request, and the answer's messages; the Responses API: the input items as the
        # agent passed them, and the Response (its output items)
        Messages("request_data", "input", 5, paths=REQUEST_MESSAGES),
        Messages("output", "output", 5),
        Messages("raw_input", "input", 5),
        Messages("response", "output", 5, paths=RESPONSE_MESSAGES),
    ),
    precedence=35,  # after the GenAI conventions: a Logfire span of a GenAI operation (its model calls) is theirs
    since=14,
)
