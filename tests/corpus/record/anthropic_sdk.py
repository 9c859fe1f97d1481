"""Recorder for the `anthropic` SDK's own OpenTelemetry spans (no instrumentation library), see run.py.

    python anthropic_sdk.py --modes | --scenarios | <scenario>

The agent is anthropic_loop.py's hand-written tool loop around the plain `anthropic` client, which writes one
`anthropic.messages.create` span per call to the global tracer provider corpus.py sets up. `content`: the SDK's
own switch for message content (`ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content`; off by default).
"""

from __future__ import annotations

from anthropic_loop import main, otel, run_scenario  # anthropic_loop imports corpus (which leaves the path)
from corpus import WITHOUT_HANDOFF

MODES: dict[str, dict[str, str]] = {
    "default": {},
    "content": {"ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE": "content"},
}


def record(scenario: str) -> None:
    with otel() as providers:
        run_scenario(scenario, providers.tracer.get_tracer("corpus.anthropic_sdk.loop"))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
