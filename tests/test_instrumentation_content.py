"""Content capture and redaction, checked where it matters: in the lake's Parquet files.

The lakes here are written uncompressed, so that a byte search is evidence (zstd pages could hide a
string from `grep`), and every string column is decoded and searched as well. Each test also checks
that what it looks for can be found when it is there, so that a search that cannot fail does not pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anthropic
import openai
import pyarrow.parquet as pq
import pytest
from fixtures.simulated import chat_message, serving

import tracevals
from tracevals.instrumentation.content import CaptureMode, capture_mode, set_capture
from tracevals.instrumentation.redact import Redactor, set_redactor
from tracevals.simulator import Conversation, Decisions, ModelTurn, PlannedCall, SimulatedModelServer

USER = "PLANTED-USER-TEXT-4f1c"
SYSTEM = "PLANTED-SYSTEM-PROMPT-77ab"
RESULT = "PLANTED-RESULT-9e02"
KEY = "sk-proj-PLANTEDKEY0123456789abcdefXYZ"
ANTHROPIC_KEY = "sk-ant-api03-PLANTEDkey0123456789abcdef"
BEARER = "Bearer PLANTEDtoken.0123456789abcdef"
SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}}


def echo(conversation: Conversation, decisions: Decisions) -> ModelTurn:
    """Looks the user's words up (twice, in parallel), then repeats what the tools said."""
    results = [m.content for m in conversation.messages if m.role == "tool"]
    if not results:
        word = conversation.first_user_text()
        return ModelTurn(
            content=f"Looking up {word}",
            tool_calls=(PlannedCall("lookup", {"word": word}), PlannedCall("lookup", {"word": "fail:" + word})),
        )
    return ModelTurn.say("Found: " + " | ".join(results))


@pytest.fixture(scope="module")
def server() -> Iterator[SimulatedModelServer]:
    with serving({"echo": echo}) as srv:
        yield srv


@pytest.fixture
def plain_lake(lake: Path) -> Iterator[Path]:
    """The embedded lake, written without compression."""
    telemetry = tracevals.instrument(lake=lake, batch=False, capture_content=False)
    cast(Any, telemetry.exporter).writer.compression = "NONE"
    cast(Any, telemetry.log_exporter).writer.compression = "NONE"
    yield lake
    telemetry.shutdown()
    set_capture(None)
    set_redactor(None)


def lookup(word: str) -> str:
    if word.startswith("fail:"):
        raise tracevals.ToolError(f"no entry for {word}", error_type="not_found")
    return f"{RESULT}: {word} {KEY} {BEARER}"


def run_agents(server: SimulatedModelServer) -> None:
    """An OpenAI chat agent (plain and streamed), a Responses call and an Anthropic agent, each with tools."""
    tools = tracevals.wrap_tools({"lookup": lookup})
    question = f"{USER} my key is {KEY} and {ANTHROPIC_KEY}"

    def run(call_id: str, name: str, arguments: Any) -> str:
        try:
            return str(tools.call(name, arguments, call_id=call_id))
        except tracevals.ToolError as exc:
            return json.dumps(exc.to_dict())

    with tracevals.session("s-content"), tracevals.agent("support"):
        client = openai.OpenAI(base_url=server.base_url, api_key="sim", max_retries=0)
        chat_tools = [{"type": "function", "function": {"name": "lookup", "parameters": SCHEMA}}]
        for stream in (False, True):
            messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
            for _ in range(2):
                message = chat_message(client, "echo", messages, chat_tools, stream)
                messages.append(
                    {
                        "role": "assistant",
                        "content": message.content,
                        "tool_calls": [c.model_dump() for c in message.tool_calls or []] or None,
                    }
                )
                for call in message.tool_calls or []:
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call.id,
                            "content": run(call.id, call.function.name, call.function.arguments),
                        }
                    )  # type: ignore[union-attr]
        client.responses.create(model="echo", input=question, instructions=SYSTEM)
        claude = anthropic.Anthropic(base_url=server.root_url, api_key="sim", max_retries=0)
        conversation: list[Any] = [{"role": "user", "content": question}]
        for _ in range(2):
            reply = claude.messages.create(
                model="echo",
                max_tokens=64,
                system=SYSTEM,
                messages=conversation,
                tools=[{"name": "lookup", "input_schema": SCHEMA}],
            )
            uses = [b for b in reply.content if b.type == "tool_use"]
            conversation.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
            if uses:
                conversation.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": b.id, "content": run(b.id, b.name, b.input)}
                            for b in uses
                        ],
                    }
                )  # type: ignore[arg-type]
        client.close()
        claude.close()


def read(path: Path, *columns: str) -> list[dict[str, Any]]:
    table = pq.read_table(path, columns=list(columns))
    if "start_time" in columns:  # nanoseconds as integers: Python datetimes stop at µs
        table = table.set_column(
            table.schema.get_field_index("start_time"), "start_time", table["start_time"].cast("int64")
        )
    return table.to_pylist()


def lake_bytes(lake: Path) -> bytes:
    return b"".join(f.read_bytes() for f in sorted(lake.rglob("*.parquet")))


def lake_strings(lake: Path, table: str = "") -> str:
    """Every string value in the lake's files, decoded, as one text."""
    values: list[str] = []
    for f in sorted((lake / table).rglob("*.parquet") if table else lake.rglob("*.parquet")):
        parquet = pq.read_table(f)
        for name in parquet.column_names:
            if str(parquet.schema.field(name).type) == "string":
                values.extend(v for v in parquet[name].to_pylist() if v is not None)
    return "\n".join(values)


def test_capture_off_leaves_no_content_anywhere_in_the_lake(server: SimulatedModelServer, plain_lake: Path) -> None:
    run_agents(server)
    raw, decoded = lake_bytes(plain_lake), lake_strings(plain_lake)
    assert b"tracevals.tool.args_hash" in raw and "tracevals.tool.args_hash" in decoded  # the search can find things
    assert decoded.count('"gen_ai.operation.name":"chat"') == 7 and decoded.count("execute_tool lookup") == 6
    for planted in (USER, SYSTEM, RESULT, KEY, ANTHROPIC_KEY, "PLANTEDtoken", "Looking up", "Found:"):
        assert planted.encode() not in raw, planted
        assert planted not in decoded, planted
    assert not list((plain_lake / "logs").rglob("*.parquet"))  # and no content events either


def test_capture_on_records_content_but_never_a_secret(server: SimulatedModelServer, plain_lake: Path) -> None:
    set_capture("span_and_event")
    run_agents(server)
    raw, spans, logs = lake_bytes(plain_lake), lake_strings(plain_lake, "spans"), lake_strings(plain_lake, "logs")
    for text in (spans, logs):
        assert USER in text and SYSTEM in text and RESULT in text and "no entry for fail:" in text  # content is on
        assert (
            "[REDACTED:openai_key]" in text and "[REDACTED:anthropic_key]" in text and "[REDACTED:bearer_token]" in text
        )
    assert USER.encode() in raw
    for secret in (KEY, ANTHROPIC_KEY, "PLANTEDtoken", "PLANTEDKEY", "PLANTEDkey"):
        assert secret.encode() not in raw, secret
        assert secret not in spans and secret not in logs, secret


def test_content_in_the_genai_message_format(server: SimulatedModelServer, plain_lake: Path) -> None:
    set_capture(True)
    run_agents(server)
    rows = sorted(
        (r for f in (plain_lake / "spans").rglob("*.parquet") for r in read(f, "start_time", "kind", "attributes")),
        key=lambda r: r["start_time"],
    )
    models = [json.loads(r["attributes"]) for r in rows if r["kind"] == "llm"]
    chat = next(m for m in models if m["gen_ai.provider.name"] == "openai" and "gen_ai.system_instructions" not in m)
    inputs = json.loads(chat["gen_ai.input.messages"])
    assert inputs[0] == {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]}
    assert inputs[1]["role"] == "user" and inputs[1]["parts"][0]["content"].startswith(USER)
    (output,) = json.loads(chat["gen_ai.output.messages"])
    assert output["role"] == "assistant" and output["finish_reason"] == "tool_calls"
    call = output["parts"][1]
    assert call["type"] == "tool_call" and call["name"] == "lookup" and call["id"] in chat["tracevals.tool_calls.ids"]
    assert call["arguments"]["word"].startswith(USER)  # arguments as JSON, not as a string of JSON
    claude = [m for m in models if m["gen_ai.provider.name"] == "anthropic"]
    assert json.loads(claude[0]["gen_ai.system_instructions"]) == [{"type": "text", "content": SYSTEM}]
    follow_up = json.loads(claude[1]["gen_ai.input.messages"])
    assert [p["type"] for p in follow_up[-1]["parts"]] == ["tool_call_response", "tool_call_response"]
    tools = [json.loads(r["attributes"]) for r in rows if r["kind"] == "tool"]
    assert json.loads(tools[0]["gen_ai.tool.call.arguments"])["word"].startswith(USER)


def test_event_only_puts_content_in_log_records_linked_to_their_spans(
    server: SimulatedModelServer, plain_lake: Path
) -> None:
    set_capture("event_only")
    run_agents(server)
    assert USER not in lake_strings(plain_lake, "spans")
    logs = [
        r
        for f in (plain_lake / "logs").rglob("*.parquet")
        for r in pq.read_table(f).select(["span_id", "event_name", "attributes"]).to_pylist()
    ]
    spans = {
        r["span_id"]: r
        for f in (plain_lake / "spans").rglob("*.parquet")
        for r in pq.read_table(f).select(["span_id", "kind"]).to_pylist()
    }
    by_event = {
        name: [r for r in logs if r["event_name"] == name]
        for name in ("gen_ai.client.inference.operation.details", "tracevals.tool.call.details")
    }
    assert (
        len(by_event["gen_ai.client.inference.operation.details"]) == 7
        and len(by_event["tracevals.tool.call.details"]) == 6
    )
    for name, kind in (("gen_ai.client.inference.operation.details", "llm"), ("tracevals.tool.call.details", "tool")):
        assert all(spans[r["span_id"]]["kind"] == kind for r in by_event[name])
    assert (
        USER
        in json.loads(by_event["gen_ai.client.inference.operation.details"][0]["attributes"])["gen_ai.input.messages"]
    )


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("", CaptureMode.NO_CONTENT),
        ("false", CaptureMode.NO_CONTENT),
        ("no_content", CaptureMode.NO_CONTENT),
        ("bogus", CaptureMode.NO_CONTENT),
        ("true", CaptureMode.SPAN_ONLY),
        ("SPAN_ONLY", CaptureMode.SPAN_ONLY),
        ("event_only", CaptureMode.EVENT_ONLY),
        (" span_and_event ", CaptureMode.SPAN_AND_EVENT),
    ],
)
def test_capture_mode_from_the_environment(value: str, mode: CaptureMode, monkeypatch: pytest.MonkeyPatch) -> None:
    set_capture(None)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    assert capture_mode() is mode
    set_capture(False)  # an explicit setting wins over the environment
    assert capture_mode() is CaptureMode.NO_CONTENT
    set_capture(None)


# --- redaction --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("secret", "kind"),
    [
        ("sk-proj-abcdefghijklmnop0123456789", "openai_key"),
        ("sk-abcdefghijklmnopqrstuvwx", "openai_key"),
        ("sk-ant-api03-abcdefghijklmnop0123456789", "anthropic_key"),
        ("AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
        ("ghp_" + "a1B2" * 9, "github_token"),
        ("AIza" + "b" * 35, "google_api_key"),
        ("xoxb-123456789012-abcdefghij", "slack_token"),
        ("sk_live_" + "c" * 24, "stripe_key"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt"),
    ],
)
def test_secrets_are_always_removed(secret: str, kind: str) -> None:
    text = json.dumps({"note": f"use {secret} please", "headers": {"Authorization": "Bearer abcdefghijklmnop.qrs"}})
    redacted = Redactor().redact(text)
    assert secret not in redacted and f"[REDACTED:{kind}]" in redacted
    assert "abcdefghijklmnop.qrs" not in redacted and json.loads(redacted)  # still valid JSON


def test_secret_fields_lose_their_values_even_inside_escaped_json() -> None:
    inner = json.dumps({"api_key": "abc123456", "password": "hunter22", "user": "kim"})
    redacted = Redactor().redact(json.dumps({"arguments": inner, "env": "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG"}))
    assert all(s not in redacted for s in ("abc123456", "hunter22", "wJalrXUtnFEMI")) and "kim" in redacted
    assert json.loads(json.loads(redacted)["arguments"])["password"] == "[REDACTED:secret]"


def test_personal_data_becomes_stable_pseudonyms_that_keep_their_shape() -> None:
    redactor = Redactor(pii=True, names=["Chen Jie", "Li Na"])
    text = "Chen Jie (chen.jie@corp.example.com, +1 (415) 555-0134) wrote to LI NA about ord_1004 on 2026-10-01, 12:30."
    out = redactor.redact(text)
    assert "Chen Jie" not in out and "chen.jie@" not in out and "555-0134" not in out and "LI NA" not in out
    assert out.startswith("person_001 (user_") and "@example.invalid, +" in out and "to person_002 about" in out
    phone = re.search(r"\+[\d ()-]+\d", out).group(0)  # type: ignore[union-attr]
    assert len(phone) == len("+1 (415) 555-0134") and [c for c in phone if not c.isdigit()] == list("+ () -")
    assert "ord_1004 on 2026-10-01, 12:30." in out  # ids, dates and times are not phone numbers
    assert redactor.redact(text) == out  # stable: the same person gets the same pseudonym every time
    assert Redactor(pii=True, salt="other").redact("a@b.example.com") != Redactor(pii=True).redact("a@b.example.com")
    assert Redactor().redact(text) == text  # personal data is kept unless asked


def test_pii_redaction_configured_by_instrument_and_environment(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEVALS_REDACT_NAMES", "Chen Jie=customer_demo_001, Li Na")
    env = Redactor.from_env()
    assert env.pii and env.names == {"Chen Jie": "customer_demo_001", "Li Na": "person_002"}
    telemetry = tracevals.instrument(lake=lake, batch=False, capture_content=True, redact_pii=True)
    try:
        tracevals.tool()(lambda to, text: "ok")("chen jie", text="mail kim@example.org")
    finally:
        telemetry.shutdown()
        set_capture(None)
        set_redactor(None)
    (args,) = [
        json.loads(r["attributes"])["gen_ai.tool.call.arguments"]
        for f in lake.rglob("*.parquet")
        for r in read(f, "attributes")
    ]
    assert json.loads(args)["to"] == "customer_demo_001" and "kim@" not in args and "@example.invalid" in args
