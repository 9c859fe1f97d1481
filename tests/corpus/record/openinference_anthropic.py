"""Recorder for OpenInference's Anthropic instrumentor (`openinference-instrumentation-anthropic`), see run.py.

    python openinference_anthropic.py --modes | --scenarios | <scenario>

The agent is anthropic_loop.py's hand-written tool loop around the plain `anthropic` client; the instrumentation
makes the model-call spans. `hidden`: OpenInference's switches for content (`OPENINFERENCE_HIDE_*`).
"""

from __future__ import annotations

from anthropic_loop import main, otel, run_scenario  # anthropic_loop imports corpus (which leaves the path)
from corpus import OPENINFERENCE_HIDDEN, WITHOUT_HANDOFF

MODES: dict[str, dict[str, str]] = {"default": {}, "hidden": dict(OPENINFERENCE_HIDDEN)}


def record(scenario: str) -> None:
    with otel() as providers:
        from openinference.instrumentation.anthropic import AnthropicInstrumentor

        AnthropicInstrumentor().instrument(tracer_provider=providers.tracer)
        run_scenario(scenario, providers.tracer.get_tracer("corpus.openinference_anthropic.loop"))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
