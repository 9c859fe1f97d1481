"""What every Python recorder shares (the Python side of `corpus.mjs`), see run.py for the contract.

The scenarios of scenarios.json, its three tools (`_tools`: get_weather, get_time, issue_refund) as plain functions,
the agents' usual instructions, the command line run.py speaks (`--modes`, `--scenarios`, `<scenario>`), the plain
OpenTelemetry SDK setup most stacks export through, and the hand-written Chat Completions tool loop of the stacks
that instrument their users' own loop. What differs between stacks (how a framework wraps a tool, its agents, its
telemetry switches and workarounds) stays in each `<stack>.py`.

run.py runs a recorder as a script in its stack's own virtual environment, so this folder is first on the import
path: a recorder imports this module first, and importing it takes the folder off the path again (recorders are
named like the packages they record: `mcp.py`, `crewai.py`, `llama_index.py` ...). So a module that some recorders
share (`langgraph_agents.py`) imports this one itself, and those recorders import from it alone.

The tools' annotations are strings (`from __future__ import annotations`), as they were in most recorders, and a
framework may show them (LlamaIndex describes a tool as `get_weather(city: 'str') -> 'dict'`): `described(f,
resolved=True)` gives a stack whose recorder had types (Google ADK needs them) its tools with types.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

SCENARIOS: dict[str, Any] = {
    k: v for k, v in json.loads((HERE / "scenarios.json").read_text()).items() if not k.startswith("_")
}
# The scenarios only a stack whose framework has the feature plays, when its recorder lists them (`main`'s third
# argument): tool_ends, a run that the framework ends on a tool's result (the recorder switches the feature on).
OPT_IN = ["tool_ends"]
# The scenarios every stack plays (`main`'s default); WITH_TOOL_ENDS, those and tool_ends.
PLAYED = [name for name in SCENARIOS if name not in OPT_IN]
WITH_TOOL_ENDS = [*PLAYED, "tool_ends"]
# The scenarios a stack without a hand-off plays (a plain client's loop, an SDK's own telemetry): `main`'s third
# argument for those recorders.
WITHOUT_HANDOFF = [name for name in PLAYED if name != "handoff"]

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    if city not in WEATHER:
        raise ValueError(f"unknown city: {city}")
    return dict(WEATHER[city])


def get_time(city: str) -> dict:
    """Get the current local time in a city."""
    return {"city": city, "time": "14:00"}


def issue_refund(order_id: int) -> dict:
    """Refund an order."""
    return {"order_id": order_id, "status": "refunded"}


TOOLS: dict[str, Callable[..., dict]] = {"get_weather": get_weather, "get_time": get_time, "issue_refund": issue_refund}
HANDOFF_TOOL = "transfer_to_billing_agent"
TRANSFERRED = "Transferred to billing_agent."  # the hand-off tool's result, where a recorder writes it itself

INSTRUCTIONS = {
    "weather_agent": "You are a weather assistant. Use the tools to answer.",
    "triage_agent": "You are the triage agent. Send billing questions to the billing agent.",
    "billing_agent": "You are the billing agent. Refund orders with issue_refund.",
}


# OpenInference's TraceConfig variables that hide every input and output (the `*_hidden` modes)
OPENINFERENCE_HIDDEN = {
    f"OPENINFERENCE_HIDE_{what}": "true"
    for what in ("INPUTS", "OUTPUTS", "INPUT_MESSAGES", "OUTPUT_MESSAGES", "INPUT_TEXT", "OUTPUT_TEXT")
}
# A stack whose own modes use another tracer records OpenInference's in modes that set this (haystack, AutoGen)
OPENINFERENCE = {"CORPUS_INSTRUMENTATION": "openinference"}


def openinference() -> bool:
    """Whether this mode records OpenInference's instrumentation (`OPENINFERENCE`) instead of the stack's own."""
    return os.environ.get("CORPUS_INSTRUMENTATION") == "openinference"


def session(scenario: str) -> AbstractContextManager[Any]:
    """OpenInference's session (`session.id` on its spans) around a run, in the openinference modes."""
    if not openinference():
        return nullcontext()
    from openinference.instrumentation import using_session

    return using_session(f"corpus-{scenario}")


def described(function: Callable[..., Any], doc: str | None = None, resolved: bool = False) -> Callable[..., Any]:
    """`function` again, under its own name and signature: with another docstring (`doc`), for a stack whose
    recordings word a tool otherwise (a framework reads the description, and its argument notes, from the
    docstring); `resolved`, with types for annotations instead of their strings."""
    copy = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__annotations__ = typing.get_type_hints(function) if resolved else dict(function.__annotations__)
    copy.__doc__ = function.__doc__ if doc is None else doc
    return copy


def _schema(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


_CITY = {"city": {"type": "string"}}
SCHEMAS = {  # the tools as Chat Completions declares them, for the recorders that call the model themselves
    "get_weather": _schema("get_weather", "Get the current weather for a city.", _CITY),
    "get_time": _schema("get_time", "Get the current local time in a city.", _CITY),
    "issue_refund": _schema("issue_refund", "Refund an order.", {"order_id": {"type": "integer"}}),
    HANDOFF_TOOL: _schema(HANDOFF_TOOL, "Hand the conversation to the billing agent, which handles refunds.", {}),
}


def sibling(name: str) -> types.ModuleType:
    """Another module of this folder, imported once this one has taken the folder off the path (a recorder that
    wraps two of the shared loops: the first it imports by name, the second so)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def turns(scenario: str) -> list[str]:
    """The user's messages of a scenario, in order."""
    return [turn["user"] for turn in SCENARIOS[scenario]["turns"]]


def log(scenario: str, user: str, answer: Any) -> None:
    print(f"[{scenario}] {user!r} -> {answer!r}", file=sys.stderr)


def main(modes: dict[str, dict[str, str]], record: Callable[[str], Any], scenarios: list[str] | None = None) -> int:
    """run.py's command line: `--modes` prints `modes` ({mode: {ENV: value}}), `--scenarios` the scenarios this
    stack runs (scenarios.json's but the opt-in ones, `PLAYED`, or `scenarios` where a stack cannot play them all
    or plays an opt-in one too), `<scenario>` records one: `record(scenario)`, which sets up the telemetry, runs
    every turn and flushes."""
    supported = PLAYED if scenarios is None else scenarios
    argv = sys.argv[1:]
    if argv == ["--modes"]:
        print(json.dumps(modes))
    elif argv == ["--scenarios"]:
        print(json.dumps(supported))
    elif len(argv) == 1 and argv[0] in supported:
        record(argv[0])
    else:
        usage = f"usage: {Path(sys.argv[0]).name} --modes | --scenarios | <scenario>"
        print(f"{usage}, a scenario of: {', '.join(supported)}", file=sys.stderr)
        return 1
    return 0


class Providers(NamedTuple):
    tracer: Any
    logger: Any  # None unless asked for


@contextmanager
def otel(logs: bool = False, service_suffix: str = "") -> Iterator[Providers]:
    """The plain OpenTelemetry SDK, installed globally: a TracerProvider with a batch OTLP/HTTP span exporter and,
    with `logs`, a LoggerProvider with a batch OTLP/HTTP log exporter (to OTEL_EXPORTER_OTLP_ENDPOINT, protocol from
    OTEL_EXPORTER_OTLP_PROTOCOL). The resource is OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES, the service name
    with `service_suffix` (a second process of the same recording). Both are shut down, so flushed, on leaving."""
    from opentelemetry import _logs, trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()
    if service_suffix:
        resource = resource.merge(Resource({SERVICE_NAME: f"{resource.attributes[SERVICE_NAME]}{service_suffix}"}))
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = None
    if logs:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        _logs.set_logger_provider(logger_provider)
    try:
        yield Providers(tracer_provider, logger_provider)
    finally:
        tracer_provider.shutdown()
        if logger_provider is not None:
            logger_provider.shutdown()


def tool_result(function: Callable[..., Any], arguments: dict[str, Any]) -> str:
    """What the model is handed for a tool call: the result as JSON (a text as it is), or `Error: <Type>: <message>`
    for a tool that raises, as agent loops do."""
    try:
        result = function(**arguments)
    except Exception as error:
        return f"Error: {type(error).__name__}: {error}"
    return result if isinstance(result, str) else json.dumps(result)


# The mode of a recorder whose loop calls the model on OpenAI's Responses API instead of Chat Completions
# (`chat_loop`'s, openai_v2.py's `run_responses`)
RESPONSES = {"CORPUS_API": "responses"}


def on_responses_api() -> bool:
    return os.environ.get("CORPUS_API") == RESPONSES["CORPUS_API"]


def answered(call_id: str, content: str) -> dict[str, Any]:
    """The history's answer to a tool call: a `tool` message, or on the Responses API a `function_call_output`."""
    if on_responses_api():
        return {"type": "function_call_output", "call_id": call_id, "output": content}
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def chat_loop(client: Any, instructions: str, tools: dict[str, Callable[..., Any]], messages: list[dict]) -> str:
    """A hand-written agent: call the model (Chat Completions on `client`, model CORPUS_MODEL) with `instructions`
    and `tools` (declared as SCHEMAS declares them), run the tools it asks for, until it answers; `messages` grows in
    place. The hand-off tool is called with the call's id and the conversation, and its answer (the delegate's)
    ends the run. On the Responses API (`RESPONSES`) the same loop is `responses_loop`."""
    if on_responses_api():
        return responses_loop(client, instructions, tools, messages)
    while True:
        response = client.chat.completions.create(
            model=os.environ["CORPUS_MODEL"],
            messages=[{"role": "system", "content": instructions}, *messages],
            tools=[SCHEMAS[n] for n in tools],
        )
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            name, args = call.function.name, json.loads(call.function.arguments or "{}")
            handoff = name == HANDOFF_TOOL
            content = tool_result(partial(tools[name], call.id, messages) if handoff else tools[name], args)
            messages.append(answered(call.id, content))
            if handoff:
                return content  # the delegate's answer ends the triage run


def sent_back(response: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """A Responses API answer as a loop's history keeps it (in its order: its text as an assistant message, each
    `function_call` item as the call), and its function calls."""
    items: list[dict[str, Any]] = []
    calls = [item for item in response.output if item.type == "function_call"]
    for item in response.output:
        if item.type == "function_call":
            items.append({"type": "function_call", "call_id": item.call_id, "name": item.name,
                          "arguments": item.arguments})  # fmt: skip
        elif item.type == "message":
            items.append({"role": "assistant", "content": response.output_text})
    return items, calls


def responses_loop(client: Any, instructions: str, tools: dict[str, Callable[..., Any]], items: list[dict]) -> str:
    """`chat_loop` on the Responses API (`client.responses.create`): `instructions` as such, the history as `input`
    items, the model's output items sent back as they came (its text as an assistant message, then its
    `function_call`s), a `function_call_output` for each call."""
    while True:
        response = client.responses.create(
            model=os.environ["CORPUS_MODEL"],
            instructions=instructions,
            input=items,
            tools=[{"type": "function", **SCHEMAS[n]["function"]} for n in tools],
        )
        kept, calls = sent_back(response)
        items.extend(kept)
        if not calls:
            return response.output_text
        for call in calls:
            handoff = call.name == HANDOFF_TOOL
            function = partial(tools[call.name], call.call_id, items) if handoff else tools[call.name]
            content = tool_result(function, json.loads(call.arguments or "{}"))
            items.append(answered(call.call_id, content))
            if handoff:
                return content  # the delegate's answer ends the triage run
