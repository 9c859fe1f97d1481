"""Recorder for OpenInference's OpenAI instrumentor (`openinference-instrumentation-openai`: Phoenix's), see run.py.

    python openinference_openai.py --modes        # {mode: {ENV: value}}
    python openinference_openai.py --scenarios    # the scenarios it supports (no handoff: a plain client has none)
    python openinference_openai.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

The agent is openai_v2.py's hand-written tool loop around the plain `openai` client (Chat Completions), with
one plain `turn` span per user turn (scope `corpus.openinference_openai.loop`); the instrumentation makes the
model-call spans (`ChatCompletion`, `openinference.span.kind` LLM). `hidden` is OpenInference's own switch
for content: `OPENINFERENCE_HIDE_INPUTS` and `OPENINFERENCE_HIDE_OUTPUTS`.
"""

from __future__ import annotations

from openai_v2 import VARIANTS, WITHOUT_HANDOFF, main, otel, run_scenario  # imports corpus (it leaves the path)

MODES: dict[str, dict[str, str]] = {
    "default": {},
    "hidden": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
    **VARIANTS,  # the same loop on the Responses API, and streamed
}


def record(scenario: str) -> None:
    with otel() as providers:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=providers.tracer)
        run_scenario(scenario, providers.tracer.get_tracer("corpus.openinference_openai.loop"))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
