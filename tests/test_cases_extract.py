"""`tracevals cases extract` / `review`: from production traffic to a desensitised replay set, and back
through `tracevals run --replay`.

The traffic is the reference agent's, sent by the real OTLP exporter to a real collector with content
capture on (tests/fixtures/reference_traffic.py): 200 sessions with customer names, emails, phones,
order ids and a leaked API key in it. Nothing is mocked: the replay runs the real CLI in a subprocess
against the simulated model server over loopback.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.reference_traffic import SECRET, planted, send_reference_traffic

import tracevals
from tracevals.cases.groups import Session, choose, group_of
from tracevals.cases.pseudonyms import Desensitiser
from tracevals.cases.rules import Rules
from tracevals.cli import main
from tracevals.collector.testing import running_collector
from tracevals.demo.profiles import make_profile
from tracevals.demo.rates import FailureRates
from tracevals.evaluators.testing import call, trajectory
from tracevals.harness.cassettes import Cassette, CassettePlayer, call_key
from tracevals.model.tasks import load_cases
from tracevals.model.trajectory import Handoff
from tracevals.queries.connection import open_lake
from tracevals.simulator import ProfileRegistry, SimulatedModelServer

MODEL = "support-prod"  # the reference agent with no drawn mistakes: it passed the sessions it served
NOW = dt.datetime(2026, 11, 2, 9, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def server() -> Iterator[SimulatedModelServer]:
    registry = ProfileRegistry()
    registry.add(make_profile(MODEL, FailureRates(), latency_ms=0))
    with SimulatedModelServer(registry=registry) as s:
        yield s


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory, server: SimulatedModelServer) -> Path:
    path = tmp_path_factory.mktemp("production") / "lake"
    with running_collector(path) as collector, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector.http_port}")
        telemetry = tracevals.instrument(capture_content=True)
        try:
            send_reference_traffic(server.base_url, MODEL, 200, NOW)
        finally:
            telemetry.shutdown()
    return path


@pytest.fixture(scope="module")
def replay_set(lake: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sets") / "replay-set"
    result = CliRunner().invoke(main, ["cases", "extract", "--lake", str(lake), "--out", str(out), "--seed", "3"])
    assert result.exit_code == 0, result.output
    return out


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file()}


def test_twenty_valid_cases_in_four_groups_of_five(replay_set: Path) -> None:
    cases = load_cases(replay_set / "cases.jsonl")  # the shipped schema, as `run` loads it
    assert len(cases) == 20
    assert Counter(c.group for c in cases) == {"clear": 5, "vague": 5, "faults": 5, "high_risk": 5}
    readme = (replay_set / "README.md").read_text()
    for c in cases:
        review = c.raw["review"]
        assert review["status"] == "draft" and review["drafted"]
        assert f"`{review['source']['session_id']}`" in readme  # each case's source session is listed
        assert (replay_set / "cassettes" / f"{c.case_id}.json").is_file()
    faults = [c for c in cases if c.group == "faults"]
    # each fault case carries the faults its session met, in the one fault vocabulary
    assert all(c.faults and {f["type"] for f in c.faults} <= {"rate_limit", "timeout", "empty"} for c in faults)
    assert {f["type"] for c in faults for f in c.faults} == {"rate_limit", "timeout", "empty"}  # diverse
    risky = [c for c in cases if c.group == "high_risk"]
    deletion = [c for c in risky if c.requires_confirmation]
    # the deletion the agent handed off: confirmation required, the pending tool forbidden
    assert deletion and all("delete_order" in c.forbidden_actions for c in deletion)
    # distinct requests: the same question is never two cases of one group
    assert len({(c.group, c.input, json.dumps(c.raw.get("faults"))) for c in cases}) == 20


def test_no_original_identifier_email_phone_or_secret_anywhere_under_the_set(replay_set: Path) -> None:
    files = _files(replay_set)
    assert set(files) >= {"cases.jsonl", "sources.jsonl", "README.md", "extraction.json"}
    for name, text in files.items():
        for original in planted():
            # names as words ("Li" is not in "List"), everything else anywhere
            pattern = rf"\b{re.escape(original)}\b" if original.replace(" ", "").isalpha() else re.escape(original)
            assert not re.search(pattern, text), f"{original!r} left in {name}"
        assert SECRET[8:24] not in text
    summary = json.loads(files["extraction.json"])["replaced"]
    assert summary["distinct"]["email"] == 6 and summary["distinct"]["phone"] >= 6
    # the CRM note's key: redacted at capture already (content capture drops secrets), and so in the set
    assert "integration key [REDACTED:openai_key]" in files["sources.jsonl"]


def test_the_same_original_is_the_same_pseudonym_everywhere(replay_set: Path) -> None:
    cases = {c.case_id: c for c in load_cases(replay_set / "cases.jsonl")}
    checked = 0
    for case_id, case in cases.items():
        tape = json.loads((replay_set / "cassettes" / f"{case_id}.json").read_text())["interactions"]
        searches = [i for i in tape if i["tool"] == "search_customer" and "result" in i]
        if not searches or len(searches[0]["result"]["customers"]) != 1:
            continue
        [customer] = searches[0]["result"]["customers"]
        # the name the user typed = the name the agent searched = the name the CRM returned
        assert customer["name"] in case.input and searches[0]["args"]["name"] == customer["name"]
        later = [i["args"]["customer_id"] for i in tape if i["tool"] in ("get_orders", "send_message")]
        assert later and set(later) == {customer["customer_id"]}
        assert re.fullmatch(r"cus_\d{3}", customer["customer_id"])  # the id keeps its shape
        assert re.fullmatch(r"user_\d{3}@example\.com", customer["email"])
        steps = [s.args for s in case.expected_steps if s.tool == "get_orders"]
        assert all(a and a["customer_id"] == customer["customer_id"] for a in steps)
        checked += 1
    assert checked >= 10
    # one customer, one pseudonym, across cases and sessions
    pairs = {
        (json.dumps(i["args"]), i["result"]["customers"][0]["customer_id"])
        for p in (replay_set / "cassettes").glob("*.json")
        for i in json.loads(p.read_text())["interactions"]
        if i["tool"] == "search_customer" and len(i.get("result", {}).get("customers", [])) == 1
    }
    by_name: dict[str, set[str]] = {}
    for args, cid in pairs:
        by_name.setdefault(args, set()).add(cid)
    assert all(len(ids) == 1 for ids in by_name.values())


def test_a_candidate_replays_the_set_with_no_tool_live_and_passes(
    replay_set: Path, server: SimulatedModelServer, tmp_path: Path
) -> None:
    lake = tmp_path / "replay-lake"
    command = [
        sys.executable, "-m", "tracevals", "run", "--tasks", str(replay_set / "cases.jsonl"),
        "--cassettes", str(replay_set / "cassettes"), "--replay", "-k", "2", "--variant", "candidate",
        "--agent", "tracevals.demo.agent:order_support_agent", "--setting", f"base_url={server.base_url}",
        "--setting", f"model={MODEL}", "--lake", str(lake), "--run-id", "replay-1", "--format", "json",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["replay_misses"] == []
    [row] = out["variants"]
    # structure kept: the agent that passed the original sessions passes every desensitised case
    assert (row["runs"], row["passes"]) == (40, 40)
    assert "20 of 20 cases are unreviewed drafts" in done.stderr
    replayed = (  # the lake's `spans` view: the run's merged inputs, kept for readers, count once
        open_lake(str(lake))
        .execute(
            "SELECT json_extract_string(attributes, '$.\"tracevals.replay\"') AS r, count(*) FROM spans "
            "WHERE operation = 'execute_tool' GROUP BY 1"
        )
        .fetchall()
    )
    assert dict(replayed).keys() == {"replay"}  # no tool ran live
    report = subprocess.run(
        [sys.executable, "-m", "tracevals", "report", "--lake", str(lake), "--out", str(tmp_path / "report.json")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-2000:]
    assert json.loads((tmp_path / "report.json").read_text())["meta"]["cases"] == 20


def test_the_choice_and_the_pseudonyms_are_the_same_for_a_seed(lake: Path, replay_set: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    result = CliRunner().invoke(main, ["cases", "extract", "--lake", str(lake), "--out", str(again), "--seed", "3"])
    assert result.exit_code == 0, result.output
    first, second = _files(replay_set), _files(again)
    first.pop("extraction.json"), second.pop("extraction.json")  # names its own folder
    assert first == second
    # an existing set is kept unless --force; with it, replaced whole (no stale cassette of the old set)
    kept = CliRunner().invoke(main, ["cases", "extract", "--lake", str(lake), "--out", str(again)])
    assert (
        kept.exit_code == 1
        and "pass --force" in kept.output
        and _files(again).keys() == second.keys() | {"extraction.json"}
    )
    smaller = ["cases", "extract", "--lake", str(lake), "--out", str(again), "--per-group", "1", "--force"]
    assert CliRunner().invoke(main, smaller).exit_code == 0
    assert sorted(p.name for p in (again / "cassettes").iterdir()) == [
        f"{g}_01.json" for g in ("clear", "faults", "high_risk", "vague")
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["again"]  # no work folder left behind


def test_a_group_with_too_few_sessions_is_reported_not_padded(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "big"
    result = CliRunner().invoke(
        main, ["cases", "extract", "--lake", str(lake), "--out", str(out), "--per-group", "30", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    # clear: 4 customers x 2 requests, less Chen Jie's delivered-order count (she has none: an empty
    # result, so faults) = 7 distinct requests; vague: the six requests naming no one customer
    assert doc["chosen"]["clear"] == 7 and doc["chosen"]["vague"] == 6
    assert doc["short"]["clear"].startswith("7 of 30:") and "7 distinct request(s)" in doc["short"]["clear"]


def test_review_lists_drafts_beside_their_sessions_and_applies_decisions(replay_set: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    for name, text in _files(replay_set).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    runner = CliRunner()
    shown = runner.invoke(main, ["cases", "review", str(folder)])
    assert shown.exit_code == 0, shown.output
    assert "== clear_01 [clear] draft" in shown.output and "-- what the session did:" in shown.output
    assert shown.output.rstrip().endswith("20 cases: 20 drafts, 0 confirmed")
    decided = runner.invoke(
        main, ["cases", "review", str(folder), "--accept", "clear_01", "--drop", "vague_02", "--format", "json"]
    )
    assert decided.exit_code == 0, decided.output
    doc = json.loads(decided.output)
    assert (doc["drafts"], doc["confirmed"]) == (18, 1)
    assert not (folder / "cassettes" / "vague_02.json").exists()
    assert len(load_cases(folder / "cases.jsonl")) == 19
    wrong = runner.invoke(main, ["cases", "review", str(folder), "--accept", "nope_01"])
    assert wrong.exit_code == 1 and wrong.output.count("\n") == 1 and "no case nope_01" in wrong.output


def test_a_lake_without_content_is_refused_in_one_line(server: SimulatedModelServer, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    telemetry = tracevals.instrument(lake=lake, capture_content=False)
    try:
        send_reference_traffic(server.base_url, MODEL, 3, NOW)
    finally:
        telemetry.shutdown()
    result = CliRunner().invoke(main, ["cases", "extract", "--lake", str(lake), "--out", str(tmp_path / "set")])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "no message content" in result.output
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in result.output
    assert not (tmp_path / "set").exists()


# --- the rules, on hand-made sessions ------------------------------------------------------------


def _session(*calls: Any, output: str = "Done.", sid: str = "s", text: str = "Do it.", **fields: Any) -> Session:
    return Session(session_id=sid, trajectory=trajectory(*calls, **fields), input=text, output=output)


@pytest.mark.parametrize(
    ("session", "group"),
    [
        (_session(call("get_orders", error_type="rate_limit", status_code=429), call("get_orders")), "faults"),
        (_session(call("lookup", error_type="Timeout")), "faults"),
        (_session(call("lookup", error_type="upstream", status_code=503)), "faults"),
        (_session(call("search", result='{"hits": []}')), "faults"),  # an empty result
        (_session(call("search", result="[]"), call("refund_order")), "faults"),  # faults come first
        (_session(call("search"), call("refund_order")), "high_risk"),  # irreversible, by its name
        (_session(call("issue_refund")), "high_risk"),  # a later word of the name
        (_session(call("get_refund_status")), "clear"),  # a read verb first: a read
        (_session(call("crm_sync", effect="write")), "high_risk"),  # write, as the span recorded it
        (_session(call("refund_order", error_type="conflict", status_code=409)), "faults"),  # a tool error
        (_session(call("transfer_to_billing"), call("lookup")), "clear"),  # an agent hand-off writes nothing
        (_session(call("search"), handoffs=(Handoff(reason="deleting needs a human", pending=("x",)),)), "high_risk"),
        (_session(call("search"), handoffs=(Handoff(reason="two customers match", candidates=("a", "b")),)), "vague"),
        (_session(call("search"), output="Which Zhang do you mean?"), "vague"),
        (_session(call("get_orders", error_type="invalid_argument", status_code=400)), "vague"),
        (_session(call("search"), call("get_orders")), "clear"),
    ],
)
def test_each_session_lands_in_the_first_group_whose_rule_holds(session: Session, group: str) -> None:
    assert group_of(session, {})[0] == group


def test_choice_prefers_new_tools_and_outcomes_and_is_seeded() -> None:
    same = [_session(call("search"), sid=f"a{i}", text=f"ask {i}") for i in range(4)]
    other = _session(call("search"), call("get_orders"), sid="b", text="ask b")
    picked = choose([*same, other], 2, seed=0, effects={})
    assert other in picked  # the only session with get_orders is chosen before a fourth plain search
    assert choose([*same, other], 3, seed=5, effects={}) == choose([other, *reversed(same)], 3, seed=5, effects={})
    assert len(choose([_session(sid="x", text="Hi!"), _session(sid="y", text="hi")], 2, 0, {})) == 1


def test_pseudonyms_keep_shape_and_never_collide_with_an_original() -> None:
    d = Desensitiser(seed=1)
    doc = {
        "customers": [{"customer_id": "cus_001", "name": "Zhang Wei"}, {"customer_id": "cus_002", "name": "Zhang Min"}]
    }
    d.learn(doc)
    d.learn("Order INV-20231 and ord_1004; mail zhang.wei@corp-mail.com or call +44 20 7946 0958")
    out = d.apply(doc)
    a, b = out["customers"]
    assert a["customer_id"] != b["customer_id"] and {a["customer_id"], b["customer_id"]}.isdisjoint(
        {"cus_001", "cus_002"}
    )
    assert all(re.fullmatch(r"cus_\d{3}", c["customer_id"]) for c in (a, b))
    # word by word: two people who share a surname still do
    assert a["name"].split()[0] == b["name"].split()[0] and a["name"] != b["name"]
    assert "Zhang" not in a["name"] + b["name"]
    text = d.apply("Zhang's order INV-20231, ord_1004, zhang.wei@corp-mail.com, +44 20 7946 0958, 10 min")
    assert re.fullmatch(
        r"[A-Z][a-z]+'s order INV-\d{5}, ord_\d{4}, user_\d{3}@example\.com, \+\d\d \d\d \d{4} \d{4}, 10 min", text
    ), text
    assert d.apply('{"name": "Zhang Wei"}') == json.dumps({"name": a["name"]})  # JSON text stays JSON
    assert d.apply("key sk-ant-abcdefghijklmnopqrstuvwx") == "key [REDACTED:anthropic_key]"
    # a credential field is redacted whatever its value looks like; a bare short number is no id
    creds = {
        "password": "hunter2",
        "headers": {"Authorization": "Basic dXNlcjpwYXNz"},
        "db_token": "x1",
        "order_id": 42,
    }
    d.learn(creds)
    assert d.apply(creds) == {
        "password": "[REDACTED:secret]",
        "headers": {"Authorization": "[REDACTED:secret]"},
        "db_token": "[REDACTED:secret]",
        "order_id": 42,
    }
    assert d.apply("2 orders, 42 items") == "2 orders, 42 items"


def test_rules_file_fields_patterns_names_and_one_line_errors(tmp_path: Path) -> None:
    rules = Rules.from_document(
        {
            "fields": {"name": ["buyer"]},
            "patterns": {"id": [r"TKT#\d+"]},
            "names": ["Ada Lovelace"],
            "keep": ["order_id"],
        },
        "pii.yaml",
    )
    d = Desensitiser(rules)
    d.learn({"buyer": "Grace Hopper", "order_id": "ord_77", "note": "TKT#991 for Ada Lovelace"})
    out = d.apply({"buyer": "Grace Hopper", "order_id": "ord_77", "note": "TKT#991 for Ada Lovelace"})
    assert "Grace" not in out["buyer"] and "TKT#991" not in out["note"] and "Lovelace" not in out["note"]
    assert out["order_id"] != "ord_77"  # kept as a field, still an id-shaped token in text
    with pytest.raises(ValueError, match=r"^pii.yaml: fields: 'nmae' is not a kind; use one of name, email"):
        Rules.from_document({"fields": {"nmae": ["x"]}}, "pii.yaml")
    bad = tmp_path / "pii.yaml"
    bad.write_text("fields:\n  name: [buyer\n")
    result = CliRunner().invoke(main, ["cases", "extract", "--lake", str(tmp_path), "--rules", str(bad), "--out", "x"])
    assert result.exit_code == 1 and result.output.count("\n") == 1


def test_task_ids_never_share_a_cassette_file() -> None:
    from tracevals.harness.cassettes import cassette_name

    assert cassette_name("clear_01") == "clear_01.json"  # plain ids keep the name they always had
    names = {cassette_name(t) for t in ("a/b", "a_b", "a b", "a.b", "..", "x" * 300, "x" * 301)}
    assert len(names) == 7 and all(len(n) <= 100 and not n.startswith(".") and "/" not in n for n in names)


def test_a_recording_for_any_attempt_serves_every_attempt(tmp_path: Path) -> None:
    key = call_key("get", {"id": 1})
    doc = {"version": 1, "interactions": [
        {"attempt": 0, "key": key, "occurrence": 1, "tool": "get", "args": {"id": 1}, "result": "any"},
        {"attempt": 2, "key": key, "occurrence": 1, "tool": "get", "args": {"id": 1}, "result": "own"},
    ]}  # fmt: skip
    (tmp_path / "t.json").write_text(json.dumps(doc))
    cassette = Cassette.open(tmp_path, "t", "replay")
    assert [CassettePlayer(cassette, attempt=n).begin("get", {"id": 1})[2]["result"] for n in (1, 2, 3)] == [
        "any",
        "own",
        "any",
    ]


def test_a_structured_handoff_is_a_drafted_step_as_trajectory_match_reads_it() -> None:
    from tracevals.cases.drafts import draft_case
    from tracevals.evaluators.trajectory_match import TrajectoryMatch
    from tracevals.model.tasks import case_from_dict

    handed = Handoff(at_ms=5.0, reason="two accounts match", candidates=("a", "b"))
    session = Session(
        session_id="s", trajectory=trajectory(call("search", start_ms=1.0), handoffs=(handed,)), input="Find me.",
        output="A person will pick the right account.", succeeded=True,
    )  # fmt: skip
    drafted = draft_case(session, "vague_01", "vague", "handed off", ["search"], {})
    assert drafted["expected_steps"] == [{"tool": "search", "args": {}}, {"tool": "handoff_to_human"}]
    # the session the case came from passes it
    score = TrajectoryMatch().evaluate(session.trajectory, case_from_dict(drafted, "x"))
    assert score is not None and score.passed, score


def test_traces_without_a_session_id_are_sessions_of_one_turn_each(tmp_path: Path) -> None:
    """A hand-written loop that sets no session id (the plain `openai` Node.js client under OpenTelemetry's
    instrumentation, a real recording): each trace is a session of its own, turn 1. The traces without an id were
    one "session" of the `turns` view (numbered 1 to 6 across unrelated traces), so `cases extract` refused them
    all as multi-turn."""
    from fixtures.corpus_check import ROOT as CORPUS

    lake = tmp_path / "lake"
    scenarios = ("single", "tool_loop", "parallel", "multi_turn", "tool_error")
    files = [str(CORPUS / "opentelemetry_openai_js" / "content" / f"{name}.json") for name in scenarios]
    assert CliRunner().invoke(main, ["ingest", "--lake", str(lake), *files]).exit_code == 0
    turns = open_lake(lake).execute("SELECT session_id, turn_index FROM turns").fetchall()
    assert len(turns) == 6 and set(turns) == {(None, 1)}
    result = CliRunner().invoke(main, ["cases", "extract", "--lake", str(lake), "--since", "30d", "--out",
                                       str(tmp_path / "set"), "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    cases = load_cases(tmp_path / "set" / "cases.jsonl")
    assert len(cases) == 6
    weather = next(c for c in cases if c.input == "What is the weather and the time in Paris?")
    assert [(s.tool, s.args) for s in weather.expected_steps] == [("get_weather", {"city": "Paris"}),
                                                                  ("get_time", {"city": "Paris"})]  # fmt: skip
