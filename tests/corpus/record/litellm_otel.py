"""Recorder for LiteLLM's own OpenTelemetry integration (`litellm.callbacks = ["otel"]`), see run.py.

    python litellm_otel.py --modes        # {mode: {ENV: value}}
    python litellm_otel.py --scenarios    # the scenarios it supports (no handoff: a plain client has none)
    python litellm_otel.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

The agent is openai_v2.py's hand-written tool loop, its model calls made through `litellm.completion` (model
`openai/<CORPUS_MODEL>` at OPENAI_BASE_URL), the way a loop that wants any provider is written; one plain `turn`
span per user turn (scope `corpus.litellm_otel.loop`). LiteLLM's integration writes the model-call spans through the
global tracer provider (corpus.otel's). With a span current (the loop's `turn`), LiteLLM by default makes no span
of its own for a call: it sets the call's attributes on the current span and adds a `raw_gen_ai_request` child
(mode `default`); `USE_OTEL_LITELLM_REQUEST_SPAN=true` gives each call its `litellm_request` span (the other
modes): `request_span` (LiteLLM's content defaults), `latest` (`OTEL_SEMCONV_STABILITY_OPT_IN=
gen_ai_latest_experimental`) and `no_content` (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false`).
"""

from __future__ import annotations

import os
import time
from typing import Any

from openai_v2 import WITHOUT_HANDOFF, main, otel, run_scenario  # openai_v2 imports corpus (which leaves the path)

_SPAN = {"USE_OTEL_LITELLM_REQUEST_SPAN": "true"}
MODES: dict[str, dict[str, str]] = {
    "default": {},
    "request_span": dict(_SPAN),
    "latest": {**_SPAN, "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
    "no_content": {**_SPAN, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"},
}


class _Completions:
    def create(self, **kwargs: Any) -> Any:
        import litellm

        model = kwargs.pop("model")
        return litellm.completion(
            model=f"openai/{model}", api_base=os.environ["OPENAI_BASE_URL"],
            api_key=os.environ.get("OPENAI_API_KEY", "sim"), **kwargs,
        )  # fmt: skip


class _Chat:
    completions = _Completions()


class LiteLLMClient:
    """`chat.completions.create` through `litellm.completion`: what openai_v2's loop calls."""

    chat = _Chat()


def record(scenario: str) -> None:
    with otel(logs=True) as providers:
        import litellm

        litellm.callbacks = ["otel"]
        run_scenario(scenario, providers.tracer.get_tracer("corpus.litellm_otel.loop"), LiteLLMClient())
        # LiteLLM logs a call from a thread pool after `completion` returns (its spans end there): a process
        # that exits at once loses the last ones. A service runs on; the recorder waits for its logging.
        time.sleep(3)


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
