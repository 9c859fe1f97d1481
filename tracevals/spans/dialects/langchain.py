"""LangChain's run metadata as OpenInference writes it (JavaScript and Python): every span of a `createAgent` /
`create_react_agent` graph carries `metadata`, a JSON object whose `lc_agent_name` names the agent the span ran
for. The agent is then no AGENT span (LangChain.js roots are CHAIN spans named after the graph): this is where
its name is."""

from __future__ import annotations

from tracevals.spans.declare import Dialect, Key

DIALECT = Dialect(
    "langchain",
    "LangChain's run metadata (metadata.lc_agent_name), as OpenInference records it on every span",
    columns={"agent_name": (Key("metadata", ("lc_agent_name",)),)},
)
