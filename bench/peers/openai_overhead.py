"""What one instrumentor adds to an `openai` chat call, in this process (run by compare_instrumentation.py).

    PYTHON bench/peers/openai_overhead.py --instrumentor tracevals|openinference|openllmetry
        --base-url http://127.0.0.1:PORT/v1 [--rounds 20] [--calls 20] [--content off|on]

Runs in the instrumentor's own environment (tracevals: the project's .venv; the peers: bench/.venvs/*).
Every instrumentor gets the same OpenTelemetry SDK pipeline: a global `TracerProvider` with a
`BatchSpanProcessor` into an exporter that counts and discards, so what differs is the instrumentor.
The process first times `--rounds` rounds of `--calls` identical chat calls to the simulated server
without the instrumentor (plain), then instruments and times as many rounds again; the batch queue is
flushed between rounds, untimed, so export stays off the measured path. Per round: wall and CPU time
(this process's, all threads) per call. Prints one JSON object: the median round of each phase, and the
spans the exporter saw; the fastest round of each phase too, which load from other processes cannot
inflate (it only ever adds time). Content capture: `off` hides prompts and completions in every instrumentor;
`on` records them. (The phases are not alternated: OpenLLMetry's `uninstrument()` leaves its wrapper in
place, checked with opentelemetry-instrumentation-openai 0.62.4, so every `instrument()` would stack
another one.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

MESSAGES = [
    {"role": "system", "content": "You answer order questions."},
    {"role": "user", "content": "Where is ord_7?"},
]


def _content_env(name: str, on: bool) -> None:
    # set before the instrumentor is imported: the peers read these at import or instrument() time
    if name == "openinference":
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "false" if on else "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "false" if on else "true"
    elif name == "openllmetry":
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true" if on else "false"


def instrumentor(name: str, on: bool) -> Any:
    if name == "none":
        return None
    if name == "tracevals":
        from tracevals.instrumentation.content import set_capture
        from tracevals.instrumentation.openai_chat import OpenAIInstrumentor

        set_capture("span_only" if on else False)
        return OpenAIInstrumentor()
    if name == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OpenInferenceInstrumentor

        return OpenInferenceInstrumentor()
    if name == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as OpenLLMetryInstrumentor

        return OpenLLMetryInstrumentor()
    raise SystemExit(f"unknown instrumentor {name!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instrumentor", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--content", choices=["off", "on"], default="off")
    args = parser.parse_args()
    on = args.content == "on"
    _content_env(args.instrumentor, on)

    import openai
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        spans = 0

        def export(self, spans: Any) -> SpanExportResult:
            Discard.spans += len(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    trace.set_tracer_provider(provider)
    inst = instrumentor(args.instrumentor, on)
    client = openai.OpenAI(base_url=args.base_url, api_key="bench", max_retries=0)

    def call() -> None:
        client.chat.completions.create(model="bench-echo", messages=MESSAGES, seed=7)  # type: ignore[arg-type]

    def timed_round() -> tuple[float, float]:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(args.calls):
            call()
        return (time.perf_counter() - wall0) / args.calls * 1e6, (time.process_time() - cpu0) / args.calls * 1e6

    def phase() -> list[tuple[float, float]]:
        for _ in range(20):  # warm-up: the connection, lazy imports on first use
            call()
        provider.force_flush()
        rounds = []
        for _ in range(args.rounds):
            rounds.append(timed_round())
            provider.force_flush()
        return rounds

    plain = phase()
    traced: list[tuple[float, float]] = []
    if inst is not None:
        inst.instrument(tracer_provider=provider)
        traced = phase()
    provider.shutdown()
    expected = 0 if inst is None else 20 + args.rounds * args.calls

    def stat(rows: list[tuple[float, float]], i: int, how: str) -> float | None:
        if not rows:
            return None
        values = [r[i] for r in rows]
        return min(values) if how == "fastest" else statistics.median(values)

    figures: dict[str, Any] = {"instrumentor": args.instrumentor, "content": args.content, "rounds": args.rounds}
    figures.update(calls=args.calls, spans_exported=Discard.spans, spans_expected=expected)
    for how in ("median", "fastest"):  # the fastest round: what interference from other processes cannot add to
        for i, clock in enumerate(("wall", "cpu")):
            figures[f"plain_{clock}_us_{how}"] = stat(plain, i, how)
            figures[f"traced_{clock}_us_{how}"] = stat(traced, i, how)
    print(json.dumps(figures))
    return 0 if Discard.spans == expected else 1


if __name__ == "__main__":
    sys.exit(main())
