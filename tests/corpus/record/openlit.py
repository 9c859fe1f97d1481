"""Recorder for OpenLIT (`openlit.init()`, its OpenAI instrumentation), see run.py.

    python openlit.py --modes        # {mode: {ENV: value}}
    python openlit.py --scenarios    # the scenarios it supports (no handoff: a plain client has none)
    python openlit.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

The agent is openai_v2.py's hand-written tool loop around the plain `openai` client (Chat Completions), with
one plain `turn` span per user turn (scope `corpus.openlit.loop`); `openlit.init()` instruments the client
and makes the model-call spans, reusing the global tracer and logger providers corpus.py sets up (as it does
any application's), metrics off. Content: `capture_message_content`, which OpenLIT's own CLI reads from
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (so does this recorder).
"""

from __future__ import annotations

import os

from openai_v2 import WITHOUT_HANDOFF, main, otel, run_scenario  # openai_v2 imports corpus (which leaves the path)

_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MODES: dict[str, dict[str, str]] = {"default": {_CAPTURE: "true"}, "no_content": {_CAPTURE: "false"}}


def record(scenario: str) -> None:
    with otel(logs=True) as providers:
        import openlit

        capture = os.environ.get(_CAPTURE, "true").lower() == "true"
        openlit.init(application_name="corpus", disable_metrics=True, capture_message_content=capture)
        run_scenario(scenario, providers.tracer.get_tracer("corpus.openlit.loop"))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
