"""Pydantic Logfire's own spans (`logfire.span_type`, `logfire.msg_template`, `code.function`): a function
instrumented with `@logfire.instrument` or a `logfire.span(...)` is a span named by its message template, its
arguments as top-level attributes (listed in `logfire.json_schema`) and, with `record_return`, its value in
`return`. Nothing marks a tool or an agent as such: a Logfire span that names an `agent_name` is the agent's run,
and an instrumented function (`code.function`) that no GenAI convention reads (precedence after them) is a tool the
agent called, named by its span. Logfire's default scrubbing writes `[Scrubbed due to '<pattern>']` where a value
matched (a `session.id` among them): a declared placeholder of the rules for every stack."""

from __future__ import annotations

from tracevals.spans.declare import By, Dialect

DIALECT = Dialect(
    "logfire",
    "Pydantic Logfire's spans: an agent_name names the agent's run, an instrumented function is a tool",
    recognise_keys=("logfire.span_type",),
    kind=(By("agent_name", kind="agent"), By("code.function", kind="tool")),
    columns={"agent_name": ("agent_name",)},
    tool_columns={"tool_result": ("return",)},
    precedence=35,  # after the GenAI conventions: a Logfire span of a GenAI operation (its model calls) is theirs
    since=9,
)
