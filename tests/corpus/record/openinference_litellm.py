"""Recorder for OpenInference's LiteLLM instrumentor (`openinference-instrumentation-litellm`: Phoenix's), see run.py.

    python openinference_litellm.py --modes        # {mode: {ENV: value}}
    python openinference_litellm.py --scenarios    # the scenarios it supports (no handoff: a plain client has none)
    python openinference_litellm.py <scenario>     # run one, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

The agent is openai_v2.py's hand-written tool loop, its model calls made through `litellm.completion` (as in
litellm_otel.py), one plain `turn` span per user turn (scope `corpus.openinference_litellm.loop`); the instrumentor
wraps `litellm.completion` and writes OpenInference LLM spans. `hidden` is OpenInference's own switch for content:
`OPENINFERENCE_HIDE_INPUTS` and `OPENINFERENCE_HIDE_OUTPUTS`.
"""

from __future__ import annotations

from litellm_otel import LiteLLMClient  # imports openai_v2, which imports corpus (which leaves the path)
from openai_v2 import WITHOUT_HANDOFF, main, otel, run_scenario

MODES: dict[str, dict[str, str]] = {
    "default": {},
    "hidden": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
}


def record(scenario: str) -> None:
    with otel() as providers:
        from openinference.instrumentation.litellm import LiteLLMInstrumentor

        LiteLLMInstrumentor().instrument(tracer_provider=providers.tracer)
        run_scenario(scenario, providers.tracer.get_tracer("corpus.openinference_litellm.loop"), LiteLLMClient())


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
