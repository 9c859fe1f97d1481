"""The real instrumentation packages of each dialect, calling the simulated OpenAI-compatible server,
exported over OTLP into the collector: every dialect lands in the same canonical columns.

Each package is optional (see the dev extra); a test is skipped, naming the package, where it is not
installed. The session id comes the way each ecosystem sets it: OpenInference's `using_session`, and
for the GenAI-convention packages (which have no session API) `tracevals.session`, whose span
processor writes `gen_ai.conversation.id`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import openai
import pytest
from fixtures.simulated import serving
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import tracevals
from tracevals.collector.testing import running_collector
from tracevals.instrumentation.context import SessionSpanProcessor
from tracevals.simulator import ModelTurn, PlannedCall, SimulatedModelServer

SESSION = "sess-dialects"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Find an order.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def _support_model(conversation: Any, decisions: Any) -> ModelTurn:
    if not [m for m in conversation.messages if m.role == "tool"]:
        return ModelTurn.call(PlannedCall("lookup_order", {"order_id": "ord_1"}))
    return ModelTurn.say("Your order has shipped.")


@pytest.fixture(scope="module")
def server() -> Iterator[SimulatedModelServer]:
    with serving({"sim-model": _support_model}) as s:
        yield s


def _openinference(provider: TracerProvider) -> tuple[Any, Callable[[], Any]]:
    module = pytest.importorskip("openinference.instrumentation.openai", reason="openinference-instrumentation-openai")
    from openinference.instrumentation import using_session

    instrumentor = module.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor, lambda: using_session(SESSION)


def _genai_package(module_name: str, package: str) -> Callable[[TracerProvider], tuple[Any, Callable[[], Any]]]:
    def setup(provider: TracerProvider) -> tuple[Any, Callable[[], Any]]:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:  # not installed, or installed without a working dependency set
            pytest.skip(f"{package} is not importable here: {exc}")
        provider.add_span_processor(SessionSpanProcessor())
        instrumentor = module.OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        return instrumentor, lambda: tracevals.session(SESSION)

    return setup


DIALECTS = {
    "openinference": _openinference,
    "otel-genai (openai-v2)": _genai_package(
        "opentelemetry.instrumentation.openai_v2", "opentelemetry-instrumentation-openai-v2"
    ),
    "openllmetry": _genai_package("opentelemetry.instrumentation.openai", "opentelemetry-instrumentation-openai"),
}


def _conversation(client: openai.OpenAI) -> list[tuple[int, int]]:
    """Two model calls around one tool call; returns the (prompt, completion) tokens the server reported."""
    messages: list[Any] = [{"role": "user", "content": "Where is my order ord_1?"}]
    first = client.chat.completions.create(model="sim-model", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    call = (first.choices[0].message.tool_calls or [])[0]
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "shipped"},
    ]
    second = client.chat.completions.create(model="sim-model", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    return [(r.usage.prompt_tokens, r.usage.completion_tokens) for r in (first, second) if r.usage]


@pytest.fixture
def restore_openai_methods() -> Iterator[None]:
    """Put back every method of the `openai` resource classes afterwards. Some instrumentations do not
    undo their patches (OpenLLMetry's `uninstrument` leaves `Completions.create` wrapped), and a
    wrapper left behind would send later tests' spans to this test's shut-down provider."""
    import sys

    import openai.resources  # noqa: F401  (load the resource modules before taking the snapshot)

    saved = [
        (cls, name, value)
        for module_name, module in list(sys.modules.items())
        if module_name.startswith("openai.resources") and module is not None
        for cls in vars(module).values()
        if isinstance(cls, type) and cls.__module__ == module_name
        for name, value in list(vars(cls).items())
        if callable(value)
    ]
    yield
    for cls, name, value in saved:
        if vars(cls).get(name) is not value:
            setattr(cls, name, value)


@pytest.mark.parametrize("dialect", list(DIALECTS))
@pytest.mark.usefixtures("restore_openai_methods")
def test_real_instrumentation_lands_in_the_same_canonical_columns(
    dialect: str, server: SimulatedModelServer, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    with running_collector(lake) as collector:
        provider = TracerProvider()
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces"))
        )
        instrumentor, session = DIALECTS[dialect](provider)
        try:
            client = openai.OpenAI(base_url=server.base_url, api_key="sim", max_retries=0)
            with session():
                usage = _conversation(client)
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
        assert collector.pipeline.flush()
        # through the collector's columnar path, which refused none of these dialects' requests
        assert collector.pipeline.stats.columnar_batches >= 1 and collector.pipeline.stats.columnar_refused == 0
    rows = duckdb.execute(
        "select kind, model, provider, input_tokens, output_tokens, session_id, tool_name, dialect "
        f"from read_parquet('{lake}/spans/**/*.parquet') order by start_time"
    ).fetchall()
    assert [r[:7] for r in rows] == [
        ("llm", "sim-model", "openai", prompt, completion, SESSION, None) for prompt, completion in usage
    ]
    assert len(usage) == 2 and rows[0][7] in ("openinference", "genai")


def test_openinference_tool_span_names_its_tool(tmp_path: Path) -> None:
    pytest.importorskip("openinference.instrumentation", reason="openinference-instrumentation")
    from openinference.instrumentation import OITracer, TraceConfig, using_session

    lake = tmp_path / "lake"
    with running_collector(lake) as collector:
        provider = TracerProvider()
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces"))
        )
        tracer = OITracer(provider.get_tracer("test.dialects"), config=TraceConfig())

        @tracer.tool(name="lookup_order")
        def lookup_order(order_id: str) -> str:
            return "shipped"

        with using_session(SESSION):
            lookup_order("ord_1")
        provider.shutdown()
        assert collector.pipeline.flush()
        assert collector.pipeline.stats.columnar_batches >= 1 and collector.pipeline.stats.columnar_refused == 0
    ((kind, tool, session, args, result),) = duckdb.execute(
        f"select kind, tool_name, session_id, tool_args, tool_result from read_parquet('{lake}/spans/**/*.parquet')"
    ).fetchall()
    assert (kind, tool, session, result) == ("tool", "lookup_order", SESSION, "shipped")
    assert "ord_1" in args
