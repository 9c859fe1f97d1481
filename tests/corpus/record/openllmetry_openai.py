"""Recorder for OpenLLMetry's OpenAI instrumentation (Traceloop's `opentelemetry-instrumentation-openai`), see run.py.

    python openllmetry_openai.py --modes        # {mode: {ENV: value}}
    python openllmetry_openai.py --scenarios    # the scenarios it supports (no handoff: a plain client has none)
    python openllmetry_openai.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

The agent is openai_v2.py's hand-written tool loop around the plain `openai` client (Chat Completions), with
one plain `turn` span per user turn (scope `corpus.openllmetry_openai.loop`); the instrumentation makes the
model-call spans. Content is on by default (`TRACELOOP_TRACE_CONTENT`); `no_content` turns it off.
"""

from __future__ import annotations

from openai_v2 import VARIANTS, WITHOUT_HANDOFF, main, otel, run_scenario  # imports corpus (it leaves the path)

MODES: dict[str, dict[str, str]] = {
    "default": {},
    "no_content": {"TRACELOOP_TRACE_CONTENT": "false"},
    **VARIANTS,  # the same loop on the Responses API, and streamed
}


def record(scenario: str) -> None:
    with otel() as providers:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=providers.tracer)
        run_scenario(scenario, providers.tracer.get_tracer("corpus.openllmetry_openai.loop"))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
