"""Agno (`agno`) under OpenLLMetry's instrumentation (`opentelemetry-instrumentation-agno`): agent spans
`<agent>.agent` (`gen_ai.agent.name`), a team's `<team>.team` (a workflow, named by `agno.team.name` alone), tool
spans `<tool>.tool` whose `traceloop.entity.output` is the str() of Agno's result object: `status='success'
result={...} error=None updated_session_state=None ...`, or `status='failure' result=None error='<message>'` for a
tool that raised, under a span whose status says OK. (Under OpenInference, `openinference.instrumentation.agno`,
Agno's spans read by the OpenInference conventions alone.)"""

from __future__ import annotations

from tracevals.spans.declare import Dialect, Key, Unwrap

_RESULT = frozenset({"status", "result", "error"})  # Agno's tool result object, read from its str() (rules.py)

DIALECT = Dialect(
    "agno",
    "Agno under OpenLLMetry (agno.team.name; a tool's result object as its str())",
    columns={"agent_name": ("agno.team.name",)},
    unwrap=(
        Unwrap(_RESULT, ("result",), exact=False, when=(("status", "success"),)),
        Unwrap(_RESULT, ("error",), exact=False, when=(("status", "failure"),)),
    ),
    error_outputs=(Key("traceloop.entity.output", regex=r"^status='failure' result=.* error="),),
    since=16,
)
