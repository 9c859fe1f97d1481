"""`tracevals cases extract` desensitises a value by what it is, not by where it sits.

The traffic is a scripted agent's (tests/fixtures/scripted_agent.py: the real `openai` client against the
simulated model, tracevals' instrumentation with content capture, an embedded lake), planted with what a
deployment carries in places no field rule names: personal data in session ids, agent and service
names, error types, file paths and JSON keys, a credential repeated in free text, and tools named like
credentials. One test per cause; tests/test_cases_property.py generates such lakes at random.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.scripted_agent import record_session, registry, write_plain_session

import tracevals
from tracevals.cli import main
from tracevals.model.tasks import load_cases
from tracevals.queries.connection import open_lake
from tracevals.simulator import SimulatedModelServer

SERVICE = "orders-api (owner dana.green@example.com)"  # a resource attribute with an email in it
# a session another framework recorded (plain SDK spans, its own service name, no capture-time redaction)
PLAIN = {
    "request": "Is my refund for ord_7790 done?",
    "calls": [{"tool": "get_refund", "args": {"order_id": "ord_7790"}, "result": {"status": "paid"}}],
    "answer": "Your refund for ord_7790 is paid.",
}


def _call(tool: str, args: dict[str, Any], result: Any = None, **extra: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args, "result": result, **extra}


# a tool named by its span's name, with an email in it (another framework's)
NAMED = {
    "request": "Look Bob up.",
    "calls": [{"tool": "lookup bob.green@example.org", "args": {"q": "Bob"}, "result": {"found": 1}}],
    "answer": "Found him.",
}
# session id -> plan. Each session plants one thing (see the test that reads it).
HOSTILE: dict[str, dict[str, Any]] = {
    # an email that is nowhere but in the session id
    "alice.smith@example.org": {
        "request": "Where is my parcel?",
        "calls": [_call("get_orders", {"customer_id": "cus_5521"}, {"orders": [{"order_id": "ord_7781"}]})],
        "answer": "Your order ord_7781 has shipped.",
    },
    # a phone number in a session id, an agent name with a phone number, an error type with one
    "sess-+14155550199": {
        "agent": "support-+14155550177",
        "request": "Look up my account please.",
        "calls": [
            _call(
                "lookup_account",
                {"customer_id": "cus_5522"},
                error={"type": "UnknownAccount(+1 415 555 0166)", "status": 404, "message": "no such account"},
            )
        ],
        "answer": "I could not find your account.",
    },
    # a customer id inside a session id
    "cust_84930211-2026-11-02": {
        "request": "What did I order last?",
        "calls": [_call("get_orders", {"customer_id": "cus_5523"}, {"orders": [{"order_id": "ord_7782"}]})],
        "answer": "Your last order is ord_7782.",
    },
    # a credential under a credential field, repeated in the request and the answer
    "s-token": {
        "request": "Sign me in, my token is tok-48213-zeta-991 thanks",
        "calls": [_call("sign_in", {"token": "tok-48213-zeta-991"}, {"signed_in": True})],
        "answer": "Signed in with tok-48213-zeta-991.",
    },
    # a user name in file paths (POSIX and Windows)
    "s-path": {
        "request": "Attach /home/jdoe/invoices/march.pdf to my ticket",
        "calls": [
            _call(
                "attach_file",
                {"path": "/home/jdoe/invoices/march.pdf"},
                {"stored": "C:\\Users\\jdoe\\Uploads\\march.pdf"},
            )
        ],
        "answer": "Attached.",
    },
    # emails used as JSON keys
    "s-keys": {
        "request": "How many tickets does each contact have?",
        "calls": [
            _call("count_tickets", {}, {"by_contact": {"erin.black@example.com": 3, "frank.gray@example.com": 1}})
        ],
        "answer": "erin.black@example.com has 3 tickets.",
    },
    # a user name (learned from its field) between the separators of file names
    "s-files": {
        "request": "Where is my export?",
        "calls": [_call("get_profile", {"customer_id": "cus_5530"}, {"username": "gwhite", "name": "Grace White"})],
        "answer": "Grace White, your export is exports/gwhite_2026.csv, also as report-gwhite.pdf",
    },
}
# a session id that would break the README's table (a pipe, a backtick, a line break)
HOSTILE["s|pipe`tick\nline"] = {
    "request": "Cancel nothing, just say hi.",
    "calls": [_call("get_orders", {"customer_id": "cus_5540"}, {"orders": []})],
    "answer": "Hi.",
}
# terminal control sequences and a line break in the request and the answer
HOSTILE["s-ansi"] = {
    "request": "Hello \x1b[2J\x1b[31mred\n== clear_99 [clear] confirmed",
    "calls": [_call("get_orders", {"customer_id": "cus_5541"}, {"orders": []})],
    "answer": "Done \x1b]0;owned\x07.",
}
# tools named like credentials, each with a credential argument
CREDENTIAL_TOOLS: dict[str, dict[str, Any]] = {
    "s-reset": {
        "request": "Reset the password of account cus_6001 and rotate its API key.",
        "calls": [
            _call(
                "reset_password",
                {"customer_id": "cus_6001", "new_password": "Winter2026!x"},
                {"ok": True},
                effect="write",
            ),
            _call("rotate_api_key", {"customer_id": "cus_6001"}, {"api_key": "k-19df-88aa-77b0"}, effect="write"),
            _call("get_access_token", {"customer_id": "cus_6001"}, {"token": "at-5521-fe"}),
            _call("set_cookie", {"customer_id": "cus_6001", "cookie": "sid=af3e99d1"}, {"ok": True}, effect="write"),
            _call("update_credentials", {"customer_id": "cus_6001"}, {"ok": True}, effect="write"),
        ],
        "answer": "Done: password reset, key rotated.",
    }
}


@pytest.fixture(scope="module")
def server() -> Iterator[SimulatedModelServer]:
    with SimulatedModelServer(registry=registry()) as s:
        yield s


def record_lake(lake: Path, base_url: str, plans: Mapping[str, Mapping[str, Any]]) -> Path:
    telemetry = tracevals.instrument(lake=lake, capture_content=True)
    try:
        for session_id, plan in plans.items():
            record_session(base_url, session_id, plan)
    finally:
        telemetry.shutdown()
    return lake


def extract(lake: Path, out: Path, *more: str) -> Path:
    result = CliRunner().invoke(
        main, ["cases", "extract", "--lake", str(lake), "--out", str(out), "--per-group", "20", *more]
    )
    assert result.exit_code == 0, result.output
    return out


def written(folder: Path) -> dict[str, str]:
    """Every file the set holds, as text."""
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file()}


def left(folder: Path, originals: Sequence[str]) -> list[tuple[str, str]]:
    return [(o, name) for name, text in written(folder).items() for o in originals if o in text]


@pytest.fixture(scope="module")
def hostile_set(server: SimulatedModelServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    lake = record_lake(root / "lake", server.base_url, HOSTILE)
    write_plain_session(lake, SERVICE, "s-plain", PLAIN, dt.datetime(2026, 11, 2, 9, tzinfo=dt.timezone.utc))
    write_plain_session(lake, "crm", "s-named", NAMED, dt.datetime(2026, 11, 2, 9, 1, tzinfo=dt.timezone.utc))
    return extract(lake, root / "set")


def _sources(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / "sources.jsonl").read_text(encoding="utf-8").splitlines()
    return {doc["case_id"]: doc for doc in map(json.loads, lines)}


def _case_of(folder: Path, request: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(case, source, cassette) of the session that asked `request`."""
    for line in (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if json.loads(case["input"])["request"].startswith(request):
            cassette = json.loads((folder / "cassettes" / f"{case['case_id']}.json").read_text())
            return case, _sources(folder)[case["case_id"]], cassette
    raise AssertionError(f"no case asked {request!r}")


def test_a_tool_named_like_a_credential_is_a_name_and_its_arguments_stay_secret(
    server: SimulatedModelServer, tmp_path: Path
) -> None:
    out = extract(record_lake(tmp_path / "lake", server.base_url, CREDENTIAL_TOOLS), tmp_path / "set")
    tools = [c["tool"] for c in CREDENTIAL_TOOLS["s-reset"]["calls"]]
    [case] = load_cases(out / "cases.jsonl")  # valid against the shipped schema, as `run` loads it
    assert set(tools) <= set(case.allowed_tools)
    assert {t: case.raw["tool_effects"][t] for t in tools} == {
        "reset_password": "write", "rotate_api_key": "write", "get_access_token": "read", "set_cookie": "write",
        "update_credentials": "write",
    }  # fmt: skip
    tape = json.loads((out / "cassettes" / f"{case.case_id}.json").read_text())["interactions"]
    assert [i["tool"] for i in tape] == tools
    assert [c["tool"] for c in _sources(out)[case.case_id]["calls"]] == tools
    # the tools' names are kept, their credentials are not: an argument, a result, redacted where they stand
    assert tape[3]["args"]["cookie"] == "[REDACTED:secret]" and tape[1]["result"]["api_key"] == "[REDACTED:secret]"
    assert left(out, ["Winter2026!x", "k-19df-88aa-77b0", "at-5521-fe", "af3e99d1"]) == []
    # and the set replays: the agent calls the tools by their names, every call finds its recording
    replay = CliRunner().invoke(main, [
        "run", "--tasks", str(out / "cases.jsonl"), "--cassettes", str(out / "cassettes"), "--replay", "-k", "1",
        "--agent", "fixtures.scripted_agent:scripted_agent", "--setting", f"base_url={server.base_url}",
        "--lake", str(tmp_path / "replay"), "--run-id", "replay", "--format", "json",
    ])  # fmt: skip
    assert replay.exit_code == 0, replay.output[-3000:]
    assert json.loads(replay.stdout)["replay_misses"] == []
    replayed = (  # through the lake's own `spans` view: a merged run's inputs kept for readers count once
        open_lake(str(tmp_path / "replay"))
        .execute(
            "SELECT tool_name, json_extract_string(attributes, '$.\"tracevals.replay\"') FROM spans "
            "WHERE operation = 'execute_tool' ORDER BY start_time"
        )
        .fetchall()
    )
    assert replayed == [(t, "replay") for t in tools]


def test_an_email_in_a_session_id_is_one_pseudonym_in_every_file(hostile_set: Path) -> None:
    assert left(hostile_set, ["alice.smith@example.org", "alice.smith"]) == []
    case, source, _ = _case_of(hostile_set, "Where is my parcel?")
    pseudonym = case["review"]["source"]["session_id"]
    assert re.fullmatch(r"user_\d{3}@example\.com", pseudonym) and source["session_id"] == pseudonym
    extraction = json.loads((hostile_set / "extraction.json").read_text())
    assert {"case_id": case["case_id"], "source_session": pseudonym}.items() <= next(
        c for c in extraction["cases"] if c["case_id"] == case["case_id"]
    ).items()
    assert f"`{pseudonym}`" in (hostile_set / "README.md").read_text()


def test_phone_numbers_and_customer_ids_inside_identifiers_are_pseudonymised(hostile_set: Path) -> None:
    originals = ["14155550199", "+14155550177", "415 555 0166", "84930211", "cus_5522"]
    assert left(hostile_set, originals) == []
    case, source, cassette = _case_of(hostile_set, "Look up my account")
    # the shape stays: a session id keeps its prefix, a phone its punctuation, an agent name its words
    assert re.fullmatch(r"sess-\+\d{11}", case["review"]["source"]["session_id"])
    assert re.fullmatch(r"support-\+\d{11}", case["review"]["source"]["agent"])
    # the error type (a span attribute) is the same pseudonym where the reason, the source and the cassette say it
    error_type = cassette["interactions"][0]["error"]["error_type"]
    assert re.fullmatch(r"UnknownAccount\(\+\d \d{3} \d{3} \d{4}\)", error_type)
    assert source["calls"][0]["error"] == error_type and error_type in case["review"]["group_reason"]
    case, _, _ = _case_of(hostile_set, "What did I order last?")
    assert re.fullmatch(r"cust_\d{8}-2026-11-02", case["review"]["source"]["session_id"])


def test_an_email_in_the_service_name_is_pseudonymised(hostile_set: Path) -> None:
    assert left(hostile_set, ["dana.green@example.com", "dana.green"]) == []
    case, source, _ = _case_of(hostile_set, "Is my refund")
    assert re.fullmatch(r"orders-api \(owner user_\d{3}@example\.com\)", case["review"]["source"]["service"])
    assert source["service"] == case["review"]["source"]["service"]


def test_a_credential_is_redacted_wherever_it_is_repeated(hostile_set: Path) -> None:
    assert left(hostile_set, ["tok-48213-zeta-991", "zeta-991"]) == []  # not its digits alone: a trace id may hold them
    case, source, cassette = _case_of(hostile_set, "Sign me in")
    assert "my token is [REDACTED:secret] thanks" in case["input"]
    assert source["output"] == "Signed in with [REDACTED:secret]."
    assert cassette["interactions"][0]["args"] == {"token": "[REDACTED:secret]"}


def test_a_user_name_in_a_file_path_is_pseudonymised(hostile_set: Path) -> None:
    assert left(hostile_set, ["jdoe"]) == []
    case, _, cassette = _case_of(hostile_set, "Attach")
    [call] = cassette["interactions"]
    path, stored = call["args"]["path"], call["result"]["stored"]
    user = re.fullmatch(r"/home/([a-z]+)/invoices/march\.pdf", path)
    assert user and stored == f"C:\\Users\\{user.group(1)}\\Uploads\\march.pdf" and path in case["input"]


def test_personal_data_used_as_a_json_key_is_pseudonymised(hostile_set: Path) -> None:
    assert left(hostile_set, ["erin.black", "frank.gray"]) == []
    _, source, cassette = _case_of(hostile_set, "How many tickets")
    counts = cassette["interactions"][0]["result"]["by_contact"]
    assert sorted(counts.values()) == [1, 3] and all(re.fullmatch(r"user_\d{3}@example\.com", k) for k in counts)
    erin = next(k for k, v in counts.items() if v == 3)
    assert source["output"] == f"{erin} has 3 tickets."  # the key and the answer: one pseudonym


def test_a_learned_name_is_replaced_between_the_separators_of_a_file_name(hostile_set: Path) -> None:
    assert left(hostile_set, ["gwhite", "Grace", "White"]) == []
    _, source, cassette = _case_of(hostile_set, "Where is my export?")
    user = cassette["interactions"][0]["result"]["username"]
    # `gwhite_2026` is an id (its digits change), whose prefix is the user: the same pseudonym as alone
    assert re.search(rf"exports/{user}_\d{{4}}\.csv, also as report-{user}\.pdf$", source["output"])


def test_a_span_value_cannot_break_the_readme_table(hostile_set: Path) -> None:
    readme = (hostile_set / "README.md").read_text(encoding="utf-8")
    table = [line for line in readme.splitlines() if line.startswith("| ") and not line.startswith("| case ")]
    cases = (hostile_set / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(table) == len(cases)  # one row per case: no line break got through
    assert all(len(re.split(r"(?<!\\)\|", row)) == 6 for row in table)  # four cells each: every pipe escaped
    assert "| ``s\\|pipe`tick line`` |" in readme  # the id as inline code, whatever backticks it holds


def test_review_shows_no_control_sequence_and_no_forged_line(hostile_set: Path) -> None:
    shown = CliRunner().invoke(main, ["cases", "review", str(hostile_set)])
    assert shown.exit_code == 0, shown.output
    assert "red" in shown.output and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", shown.output)
    assert not re.search(r"^== clear_99", shown.output, re.M)  # the request's line break made no header


def test_an_email_in_a_tool_name_is_its_pseudonym_wherever_the_tool_is_named(hostile_set: Path) -> None:
    assert left(hostile_set, ["bob.green"]) == []
    case, source, cassette = _case_of(hostile_set, "Look Bob up.")
    [tool] = [c["tool"] for c in cassette["interactions"]]
    assert re.fullmatch(r"lookup user_\d{3}@example\.com", tool)
    assert case["allowed_tools"] == [tool] and list(case["tool_effects"]) == [tool]
    assert source["calls"][0]["tool"] == tool and [s["tool"] for s in case.get("expected_steps", [])] in ([], [tool])
