"""Google ADK's own keys (`gcp.vertex.agent.*`), which ADK writes whatever the content-capture setting says:
the session, a tool call's arguments and response (a result that is not an object wrapped as `{"result": x}`,
`<not specified>` where the tool raised), and each model call's request and response."""

from __future__ import annotations

from tracevals.spans.declare import Dialect, Key, Messages

DIALECT = Dialect(
    "google_adk",
    "Google ADK's own keys (gcp.vertex.agent.*), written whatever the content-capture setting says",
    recognise_prefixes=("gcp.vertex.agent.",),
    columns={"session_id": ("gcp.vertex.agent.session_id",)},
    tool_columns={
        "tool_args": (Key("gcp.vertex.agent.tool_call_args", envelope=True),),
        "tool_result": (Key("gcp.vertex.agent.tool_response", envelope=True),),
    },
    # ADK's span for a parallel batch of calls repeats the responses of the calls it merges: bookkeeping
    not_calls=("(merged tools)",),
    messages=(
        Messages("gcp.vertex.agent.llm_request", "input", 5, paths=("$.contents",)),
        Messages("gcp.vertex.agent.llm_response", "output", 5, paths=("$.content",)),
    ),
    precedence=1,
)
