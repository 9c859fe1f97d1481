"""CrewAI as OpenInference records it: a crew run is a task, whose description reaches the model inside CrewAI's
task prompt (`\nCurrent Task: <text>\n\nThis is the expected criteria for your final answer: ...`); the agent span
is `<role>._execute_core`."""

from __future__ import annotations

from tracevals.spans.declare import Dialect

DIALECT = Dialect(
    "crewai",
    "CrewAI (OpenInference): its task prompt around the user's text, agent spans named <role>._execute_core",
    agent_span_names=(r"^(.+)\._execute_core$",),
    user_texts=(r"(?s)Current Task: (.+?)\n\nThis is the expected criteria for your final answer",),
    since=10,
)
