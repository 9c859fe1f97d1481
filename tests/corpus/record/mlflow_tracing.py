"""Recorder for MLflow tracing (`mlflow-skinny`: the `mlflow` client without its server), see run.py.

    python mlflow_tracing.py --modes        # {mode: {ENV: value}}
    python mlflow_tracing.py --scenarios    # the scenarios it supports (no handoff: a plain client has none)
    python mlflow_tracing.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

The agent is openai_v2.py's hand-written tool loop around the plain `openai` client (mode `anthropic`:
anthropic_loop.py's, around the plain `anthropic` client), traced the way MLflow's documentation shows:
`mlflow.openai.autolog()` (`mlflow.anthropic.autolog()`) makes the model-call spans, each tool is decorated with
`@mlflow.trace(span_type=SpanType.TOOL)`, each user turn is an `mlflow.start_span(span_type=SpanType.AGENT)`,
and the conversation's id is the trace's `mlflow.trace.session` metadata (`mlflow.update_current_trace`).
MLflow exports its own spans over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (no MLflow server; its own
TracerProvider, not the global one).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from corpus import TOOLS, WITHOUT_HANDOFF, main, sibling

openai_v2 = sibling("openai_v2")  # the loops of this folder (importing corpus took it off the path)

MODES: dict[str, dict[str, str]] = {
    "default": {},
    **openai_v2.VARIANTS,  # the same loop on the Responses API, and streamed
    # the same loop on Anthropic's Messages API (anthropic_loop.py), under mlflow.anthropic.autolog()
    "anthropic": {"CORPUS_PROVIDER": "anthropic"},
}


AGENT = "weather_agent"


class _Turns:
    """What run_scenario asks of a tracer (`start_as_current_span("turn", attributes=...)`), as MLflow spans: one
    AGENT span per user turn named after the agent (`weather_agent`), in a trace that names the conversation
    (`mlflow.trace.session`)."""

    def __init__(self, session: str) -> None:
        self.session = session

    @contextmanager
    def start_as_current_span(self, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
        import mlflow
        from mlflow.entities import SpanType

        with mlflow.start_span(name=AGENT, span_type=SpanType.AGENT) as span:
            span.set_attributes(attributes)
            mlflow.update_current_trace(metadata={"mlflow.trace.session": self.session})
            yield span


def record(scenario: str) -> None:
    os.environ.setdefault("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    import mlflow
    from mlflow.entities import SpanType

    traced = {name: mlflow.trace(function, name=name, span_type=SpanType.TOOL) for name, function in TOOLS.items()}
    TOOLS.update(traced)  # the loops look their tools up in this dict
    if os.environ.get("CORPUS_PROVIDER") == "anthropic":
        mlflow.anthropic.autolog()
        sibling("anthropic_loop").run_scenario(scenario, _Turns(f"corpus-{scenario}"))
    else:
        mlflow.openai.autolog()
        openai_v2.run_scenario(scenario, _Turns(f"corpus-{scenario}"))
    # MLflow's provider flushes its spans at exit


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
