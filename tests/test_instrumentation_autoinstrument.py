"""`opentelemetry-instrument python agent.py` on a script that never imports tracevals produces the same
spans as the script run under `tracevals.instrument()`: both in subprocesses, against one simulated server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from fixtures.simulated import serving

from tracevals.simulator import Conversation, Decisions, ModelTurn, PlannedCall, SimulatedModelServer

BIN = Path(sys.executable).parent
SCRIPT = """
import os
import openai

client = openai.OpenAI(base_url=os.environ["SIM_URL"], api_key="sim", max_retries=0)
tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
messages = [{"role": "user", "content": "apple"}]
first = client.chat.completions.create(model="lookup", messages=messages, tools=tools, seed=1)
call = first.choices[0].message.tool_calls[0]
messages += [first.choices[0].message.model_dump(exclude_none=True),
             {"role": "tool", "tool_call_id": call.id, "content": "a fruit"}]
for chunk in client.chat.completions.create(model="lookup", messages=messages, tools=tools, seed=1,
                                            stream=True, stream_options={"include_usage": True}):
    pass
client.responses.create(model="lookup", input="pear", tools=[{"type": "function", "name": "lookup"}])
"""
RUN_INSTRUMENTED = "import runpy, sys, tracevals; t = tracevals.instrument(); runpy.run_path(sys.argv[1]); t.shutdown()"


def lookup(conversation: Conversation, decisions: Decisions) -> ModelTurn:
    if any(m.role == "tool" for m in conversation.messages):
        return ModelTurn.say("It is a fruit.")
    return ModelTurn.call(PlannedCall("lookup", {"word": conversation.first_user_text()}))


@pytest.fixture(scope="module")
def server() -> Iterator[SimulatedModelServer]:
    with serving({"lookup": lookup}) as srv:
        yield srv


def run(command: list[str], lake: Path, server: SimulatedModelServer, disabled: str = "openai") -> None:
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "TRACEVALS_"))  # a clean OTel setup
    }
    environment.update(
        SIM_URL=server.base_url,
        TRACEVALS_LAKE=str(lake),
        PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
        # Other OpenAI instrumentations installed beside tracevals (OpenLLMetry, OpenInference and the
        # official openai-v2 all register as "openai") would add their own span for each call.
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=disabled,
    )
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def spans(lake: Path) -> list[tuple[str, str, str, dict[str, Any]]]:
    rows = []
    for f in (lake / "spans").rglob("*.parquet"):
        table = pq.read_table(f, columns=["start_time", "name", "span_kind", "kind", "attributes", "scope_name"])
        table = table.set_column(0, "start_time", table["start_time"].cast("int64"))
        rows.extend(table.to_pylist())
    rows.sort(key=lambda r: r["start_time"])
    return [(r["name"], r["span_kind"], r["kind"], json.loads(r["attributes"])) for r in rows]


def test_opentelemetry_instrument_gives_the_same_spans_as_instrument(
    server: SimulatedModelServer, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    auto, explicit, disabled = tmp_path / "auto", tmp_path / "explicit", tmp_path / "disabled"
    run([str(BIN / "opentelemetry-instrument"), sys.executable, str(script)], auto, server)
    run([sys.executable, "-c", RUN_INSTRUMENTED, str(script)], explicit, server)
    run(
        [str(BIN / "opentelemetry-instrument"), sys.executable, str(script)],
        disabled,
        server,
        disabled="openai,tracevals_openai",
    )
    got = spans(auto)
    assert got == spans(explicit)
    assert [(name, kind) for name, _, kind, _ in got] == [("chat lookup", "llm")] * 3
    first, streamed, responses = (attrs for *_, attrs in got)
    assert first["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert first["tracevals.tool_calls.names"] == ["lookup"]
    assert streamed["gen_ai.request.stream"] is True and streamed["gen_ai.usage.output_tokens"] > 0
    assert responses["gen_ai.response.id"].startswith("resp_")
    assert not (disabled / "spans").exists() or spans(disabled) == []  # OTEL_PYTHON_DISABLED_INSTRUMENTATIONS works
