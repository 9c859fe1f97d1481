"""Recorder for OpenLLMetry's Anthropic instrumentation (Traceloop's `opentelemetry-instrumentation-anthropic`).

    python openllmetry_anthropic.py --modes | --scenarios | <scenario>

The agent is anthropic_loop.py's hand-written tool loop around the plain `anthropic` client; the instrumentation
makes the model-call spans. Content is on by default (`TRACELOOP_TRACE_CONTENT`); `no_content` turns it off.
"""

from __future__ import annotations

from anthropic_loop import main, otel, run_scenario  # anthropic_loop imports corpus (which leaves the path)
from corpus import WITHOUT_HANDOFF

MODES: dict[str, dict[str, str]] = {"default": {}, "no_content": {"TRACELOOP_TRACE_CONTENT": "false"}}


def record(scenario: str) -> None:
    with otel(logs=True) as providers:
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

        AnthropicInstrumentor().instrument(tracer_provider=providers.tracer)
        run_scenario(scenario, providers.tracer.get_tracer("corpus.openllmetry_anthropic.loop"))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
